"""A load worker process: ``k`` receivers and one bridge (:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import time
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration

from .common import (
    TICK_INTERVAL_S,
    now_us,
)
from .receiver import Bridge, LoadReceiver, bridge_command


class Worker:
    """``k`` receivers in one process, one bridge (see module doc)."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.bridge = Bridge(bridge_command())
        self.receivers: dict[int, LoadReceiver] = {}
        self.pending: dict[int, list[int]] = {}
        self._flush_scheduled = False
        self.closing = False
        self.t0_us = 0
        self.errors: list[str] = []

    def schedule_flush(self) -> None:
        """Hand received frames to the controllers once this loop iteration is done."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        # a data chunk with no whole frame (a frame split by a repair) leaves an empty list
        pending = {sid: frames for sid, frames in self.pending.items() if frames}
        if not pending:
            self.pending = {}
            return
        t = now_us()
        first_recv = min(frames[1] for frames in pending.values())
        batch = [[sid, frames] for sid, frames in pending.items()]
        self.pending = {}
        self.bridge.request(
            {"o": "f", "t": t, "s": batch}, lambda r: self._on_decisions(r, first_recv)
        )

    def _on_decisions(self, reply: dict[str, Any], first_recv_us: int | None) -> None:
        if first_recv_us is not None:
            self.bridge.lag_us.append(now_us() - first_recv_us)
        for sid, window, cum in reply.get("g", []):
            r = self.receivers.get(sid)
            if r is not None:
                r.send_grant(int(window), int(cum))
        for sid, window, phase in reply.get("w", []):
            r = self.receivers.get(sid)
            if r is not None:
                r.stats.windows.append((now_us() - self.t0_us, int(window), phase))

    async def _ticker(self, stop_at: float) -> None:
        n = 0
        while time.monotonic() < stop_at:
            await asyncio.sleep(TICK_INTERVAL_S)
            n += 1
            s = [[sid, 1 if r.open_requests else 0] for sid, r in self.receivers.items()]
            msg: dict[str, Any] = {"o": "tick", "t": now_us(), "s": s}
            keep = n % 20 == 0  # window samples every 100 ms
            self.bridge.request(
                msg,
                (lambda rep: self._on_decisions(rep, None))
                if keep
                else (lambda rep: self._on_decisions({"g": rep.get("g", [])}, None)),
            )

    async def _session_load(self, r: LoadReceiver, stop_at: float) -> None:
        a = self.a
        if a.mode == "bulk":
            r.request({"v": 1, "op": "bulk", "size_bytes": 1 << 40}, {})
            await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
            return
        seg_bytes = int(a.rate_mbps * 1e6 * a.segment_s / 8)
        k = 0
        # Viewers are not in step: spread the sessions' segment phases over one segment
        # (golden-ratio sequence), or every session would start a burst at the same instant.
        start = time.monotonic() + ((r.sid or 0) * 0.6180339887 % 1.0) * a.segment_s
        while True:
            t_next = start + k * a.segment_s
            if t_next + a.segment_s > stop_at:
                break
            await asyncio.sleep(max(0.0, t_next - time.monotonic()))
            r.request(
                {"v": 1, "op": "bulk", "size_bytes": seg_bytes},
                {"segment": k, "deadline_us": int(a.segment_s * 1e6)},
            )
            k += 1
        await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
        for req in r.requests.values():
            if req.get("segment") is not None:
                r.stats.segments.append(
                    {
                        "k": req["segment"],
                        "t_req_us": req["t_req_us"] - self.t0_us,
                        "download_us": None,
                        "bytes": req["body"],
                        "late": True,
                    }
                )

    async def run(self) -> dict[str, Any]:
        """Connect, wait for ``--start-at``, load for ``--duration``, close, report."""
        a = self.a
        await self.bridge.start()
        config = QuicConfiguration(
            is_client=True,
            alpn_protocols=H3_ALPN,
            max_datagram_frame_size=65536,
            verify_mode=ssl.CERT_NONE,
            server_name="localhost",
            max_data=64 << 20,
            max_stream_data=64 << 20,
            idle_timeout=60.0,
        )
        host, port_s = a.connect.rsplit(":", 1)
        stack = contextlib.AsyncExitStack()
        async with stack:
            for i in range(a.sessions):
                sid = a.id_base + i
                r = await stack.enter_async_context(
                    connect(
                        host,
                        int(port_s),
                        configuration=config,
                        create_protocol=LoadReceiver,
                        wait_connected=True,
                    )
                )
                assert isinstance(r, LoadReceiver)
                r.sid = sid
                r.worker = self
                await self.bridge.call({"o": "open", "id": sid, "cc": json.loads(a.cc)})
                await r.open_session()
                self.receivers[sid] = r
            delay = a.start_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.t0_us = now_us()
            stop_at = time.monotonic() + a.duration
            await asyncio.gather(
                self._ticker(stop_at),
                *(self._session_load(r, stop_at) for r in self.receivers.values()),
            )
            self.closing = True
            self.pending.clear()
            for sid, r in self.receivers.items():
                rep = await self.bridge.call({"o": "close", "id": sid, "t": now_us()})
                r.stats.final = rep
                r.close()
        await self.bridge.stop()
        sessions = []
        for sid, r in self.receivers.items():
            s = r.stats
            sessions.append(
                {
                    "id": sid,
                    "frames": s.frames,
                    "frame_bytes": s.frame_bytes,
                    "grants": s.grants,
                    "bins": {str(k): v for k, v in sorted(s.bins.items())},
                    "errors": s.errors,
                    "segments": s.segments,
                    "windows": s.windows,
                    "final": s.final,
                }
            )
        lag = sorted(self.bridge.lag_us)
        return {
            "sessions": sessions,
            "errors": self.bridge.errors + self.errors,
            "bridge_lag_us": {
                "p50": _q(lag, 0.5),
                "p99": _q(lag, 0.99),
                "max": lag[-1] if lag else None,
                "batches": len(lag),
            },
            "cpu_s": time.process_time(),
        }


def _q(xs: list[int] | list[float], q: float) -> float | None:
    if not xs:
        return None
    return float(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))])
