"""The mix's receivers, in one process: Nuwa flows are the load tool's receivers (Python
aioquic, decisions by the real TypeScript controller through the Node bridge,
:mod:`nuwa_lab.load.receiver`); every other scheme's flow is a plain aioquic WebTransport
client that asks for a bulk body and reads it (the server's controller alone decides).

Flow ``i`` connects at ``start_at + starts_s[i]`` to ``ports[i]`` (the emulator's listen
port of its scheme's server), downloads until ``start_at + duration`` (or its own stop,
``--stop-s``, when it closes its connection and records ``stopped_us``) and reports its local
UDP port (how the emulator's per-flow log names it), its connect time and its errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import time
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration

from ..load.common import TICK_INTERVAL_S, now_us
from ..load.receiver import LoadReceiver
from ..load.worker import Worker

NUWA_RECEIVER_SCHEMES = ("nuwa", "nuwa_bbr")
"""Schemes whose receiver runs the Nuwa controller and sends grants."""


class PlainReceiver(LoadReceiver):
    """A WebTransport client that only reads: no grants, no controller."""

    def _on_data(self, stream_id: int, data: bytes, ended: bool) -> None:
        if stream_id not in self.requests:
            return
        assert self.worker is not None
        self.stats.frame_bytes += len(data)
        self.stats.bins[(now_us() - self.worker.t0_us) // 250_000] += len(data)
        if ended:
            self.requests.pop(stream_id, None)


class MixWorker(Worker):
    """Flows of several schemes with their own start times (module doc)."""

    def __init__(self, a: argparse.Namespace) -> None:
        super().__init__(a)
        self.schemes: list[str] = a.flow_schemes.split(",")
        self.ports = [int(p) for p in a.flow_ports.split(",")]
        self.starts_s = [float(s) for s in a.flow_starts.split(",")]
        stops = getattr(a, "flow_stops", None)
        self.stops_s = ([float(s) for s in stops.split(",")] if stops
                        else [0.0] * len(self.schemes))
        self.flows: dict[int, dict[str, Any]] = {}
        self._held: list[Any] = []
        self._config = QuicConfiguration(
            is_client=True, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536,
            verify_mode=ssl.CERT_NONE, server_name="localhost", max_data=64 << 20,
            max_stream_data=64 << 20, idle_timeout=60.0)

    async def _ticker(self, stop_at: float) -> None:
        # only the Nuwa receivers are in the bridge
        n = 0
        while time.monotonic() < stop_at:
            await asyncio.sleep(TICK_INTERVAL_S)
            n += 1
            s = [[sid, 1 if r.open_requests else 0] for sid, r in self.receivers.items()]
            if not s:
                continue
            keep = n % 20 == 0
            self.bridge.request(
                {"o": "tick", "t": now_us(), "s": s},
                (lambda rep: self._on_decisions(rep, None)) if keep
                else (lambda rep: self._on_decisions({"g": rep.get("g", [])}, None)))

    async def _flow(self, i: int, start_at: float, stop_at: float) -> None:
        a = self.a
        scheme = self.schemes[i]
        info: dict[str, Any] = {"i": i, "scheme": scheme, "errors": []}
        self.flows[i] = info
        await asyncio.sleep(max(0.0, start_at + self.starts_s[i] - time.monotonic()))
        nuwa = scheme in NUWA_RECEIVER_SCHEMES
        try:
            # entered, never exited: the run ends with close() and no wait for the peer's
            # draining period (3 PTO, seconds behind a full queue; :meth:`run`)
            cm = connect("127.0.0.1", self.ports[i], configuration=self._config,
                         create_protocol=LoadReceiver if nuwa else PlainReceiver,
                         wait_connected=True)
            self._held.append(cm)  # a context manager collected early closes its connection
            r = await cm.__aenter__()
            assert isinstance(r, LoadReceiver)
            r.sid = i
            r.worker = self
            info["local_port"] = int(r._transport.get_extra_info("sockname")[1])  # type: ignore[union-attr]
            info["connected_us"] = now_us()
            if nuwa:
                await self.bridge.call({"o": "open", "id": i, "cc": json.loads(a.cc)})
            await r.open_session()
            if nuwa:
                self.receivers[i] = r
            info["receiver"] = r
            r.request({"v": 1, "op": "bulk", "size_bytes": 1 << 40}, {})
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            info["errors"].append(f"start: {exc!r}")
            return
        own_stop = start_at + self.stops_s[i] if self.stops_s[i] > 0 else stop_at
        await asyncio.sleep(max(0.0, min(own_stop, stop_at) - time.monotonic()))
        if own_stop < stop_at:  # this flow leaves early (--stop-s): close it now
            info["stopped_us"] = now_us()
            if nuwa:
                self.receivers.pop(i, None)
                with contextlib.suppress(Exception):
                    await self.bridge.call({"o": "close", "id": i, "t": now_us()})
            r = info.pop("receiver")
            info["receiver_bytes"] = r.stats.frame_bytes
            info["errors"] += r.stats.errors
            r.close()
            await asyncio.sleep(max(0.0, stop_at - time.monotonic()))

    async def run(self) -> dict[str, Any]:
        """Run every flow from its start to the common end; report (module doc)."""
        a = self.a
        await self.bridge.start()
        await self.bridge.call({"o": "tick", "t": now_us(), "s": []})  # Node is up
        # A worker that came up after --start-at (a loaded host) starts its flows from now,
        # so the start gaps hold; the run's start and end are reported (start_us, stop_us).
        start_at = max(a.start_at, time.monotonic() + 0.2)
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        self.t0_us = now_us()
        stop_at = start_at + a.duration
        await asyncio.gather(self._ticker(stop_at),
                             *(self._flow(i, start_at, stop_at)
                               for i in range(len(self.schemes))))
        self.closing = True
        self.pending.clear()
        for sid in list(self.receivers):
            with contextlib.suppress(Exception):
                await self.bridge.call({"o": "close", "id": sid, "t": now_us()})
        for info in self.flows.values():
            r = info.pop("receiver", None)
            if r is not None:
                info["receiver_bytes"] = r.stats.frame_bytes
                info["errors"] += r.stats.errors
                r.close()  # CONNECTION_CLOSE goes out now; the draining period is not awaited
        await asyncio.sleep(0.1)
        await self.bridge.stop()
        result = {"t0_us": self.t0_us, "start_us": int(start_at * 1e6),
                "stop_us": int(stop_at * 1e6), "late_s": round(start_at - a.start_at, 3),
                "flows": [self.flows[i] for i in sorted(self.flows)],
                  "errors": self.bridge.errors + self.errors, "cpu_s": time.process_time()}
        # written here, not after asyncio.run: its shutdown finalizes the held connect()
        # context managers, which await each connection's draining period (seconds)
        if getattr(a, "json", None):
            tmp = Path(a.json + ".tmp")
            tmp.write_text(json.dumps(result))
            tmp.replace(a.json)  # whole or absent: the orchestrator reads it as soon as it exists
        return result


