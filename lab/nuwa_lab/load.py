"""Load test (issue 7, item 7): many Nuwa receivers against one server process
through one emulated bottleneck.

Parts, all real: the aioquic server (``python -m nuwa_server.server --cc nuwa``),
the trace-driven emulator (``python -m nuwa_lab.emulator``), and ``P`` load
client worker processes. A worker holds ``k`` WebTransport sessions over
aioquic, each one a Nuwa receiver: QUIC I/O, frame parsing and the clock are
Python, every decision (window, phase, when to grant) is made by the real
TypeScript controller and grant policy (``@nuwa/cc`` ``NuwaController``,
``@nuwa/player`` ``GrantPolicy``) in a Node subprocess speaking JSON lines
(``e2e/src/load-controllers.ts``), called the way a browser's ``NuwaSession``
calls them (``onFrame`` per frame, ``tick`` every 5 ms, first-byte RTT
sample). Receive times are taken when aioquic hands the stream data to the
worker (``time.monotonic_ns``, the server's clock too), so the worker's own
scheduling delay shows up as queuing delay, as a busy browser's would; the
result reports the bridge's lag so that this can be checked.

Workloads (``--mode``):

* ``bulk``: every session downloads without end (equal demand); fairness is
  Jain's index (Jain, Chiu, Hawe 1984, Eq. 1: (Σx)² / (n·Σx²)) over the
  sessions' goodputs from ``--fair-from-s`` to the end.
* ``paced``: every session fetches one segment of ``--rate-mbps`` ×
  ``--segment-s`` bits every ``--segment-s`` seconds (a live video at a fixed
  bitrate; sessions' segment phases are spread over one segment); a segment
  misses its deadline when its last byte arrives more than ``--segment-s``
  after its request.

CLI (``./nuwa load`` runs it)::

    python -m nuwa_lab.load --sessions 20 --duration 60 --json OUT.json \\
        [--mode bulk|paced] [--rate-mbps R] [--link-mbps L | --trace FILE] \\
        [--workers P] [--profile] [--out DIR]

prints a summary line and writes the result JSON. Exit 0 when the run met
its checks (no errors; bulk: Jain ≥ 0.9; paced: < 1 % of segments late),
1 when it did not, 2 on bad arguments or a part that failed to start.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.connection import FrameType as H3FrameType
from aioquic.h3.events import H3Event, HeadersReceived, WebTransportStreamDataReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamReset

from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    FrameReader,
    FrameType,
    Grant,
    ProtocolError,
    encode_grant,
)

from .emulator.trace import constant_rate_trace, load_trace

REPO_ROOT = Path(__file__).resolve().parents[2]
BRIDGE_SCRIPT = REPO_ROOT / "e2e" / "src" / "load-controllers.ts"
TICK_INTERVAL_S = 0.005
"""Controller tick period, s (NuwaSession's default tick_interval_ms = 5)."""
BIN_MS = 250
"""Goodput bin, ms."""
JAIN_TARGET = 0.9
LATE_SEGMENT_LIMIT = 0.01
"""A paced run passes when fewer than this share of segments is late."""


def now_us() -> int:
    """CLOCK_MONOTONIC µs (the server stamps frames on the same clock)."""
    return time.monotonic_ns() // 1000


def jain_index(xs: list[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) of non-negative values (Jain et al. 1984, Eq. 1).

    1 when all are equal, 1/n when one takes everything.

    Raises:
        ValueError: empty input, a negative or non-finite value, or all zero.
    """
    if not xs:
        raise ValueError("jain_index: no values")
    for x in xs:
        if not (x >= 0) or x == float("inf"):
            raise ValueError(f"jain_index: values must be finite and >= 0, got {x}")
    sq = sum(x * x for x in xs)
    if sq == 0:
        raise ValueError("jain_index: all values are zero")
    return sum(xs) ** 2 / (len(xs) * sq)


# --------------------------------------------------------------------------- bridge


class Bridge:
    """The Node subprocess with the controllers (``e2e/src/load-controllers.ts``).

    ``request(obj, on_reply)``: writes one JSON line; replies come back in
    order and are handed to ``on_reply``. ``lag_us`` collects, per frames
    batch, the time from the batch's receive time to its decisions arriving.
    """

    def __init__(self, cmd: list[str]) -> None:
        self.cmd = cmd
        self.proc: asyncio.subprocess.Process | None = None
        self._waiting: collections.deque[Any] = collections.deque()
        self._reader: asyncio.Task[None] | None = None
        self.errors: list[str] = []
        self.lag_us: list[int] = []

    async def start(self) -> None:
        """Start Node. Raises ``OSError`` if it cannot run."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.cmd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(REPO_ROOT),
            limit=1 << 24,
        )
        self._reader = asyncio.create_task(self._read())

    def request(self, obj: dict[str, Any], on_reply: Any = None) -> None:
        """Send ``obj``; ``on_reply(reply_dict)`` runs when its reply line arrives."""
        assert self.proc is not None and self.proc.stdin is not None
        self._waiting.append(on_reply)
        self.proc.stdin.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    async def call(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Send ``obj`` and wait for its reply."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.request(obj, fut.set_result)
        return await fut

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                if self._waiting:
                    self.errors.append("controller bridge exited with requests pending")
                return
            reply = json.loads(line)
            cb = self._waiting.popleft()
            if "error" in reply:
                self.errors.append(f"bridge: {reply['error']}")
            if cb is not None:
                cb(reply)

    async def stop(self) -> None:
        """Close stdin and wait for Node to exit."""
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader


def bridge_command() -> list[str]:
    """How to start the bridge: ``NUWA_LOAD_BRIDGE`` (a prebuilt .js for ``node``) or tsx."""
    prebuilt = os.environ.get("NUWA_LOAD_BRIDGE")
    if prebuilt:
        return [os.environ.get("NUWA_NODE", "node"), prebuilt]
    return [str(REPO_ROOT / "node_modules" / ".bin" / "tsx"), str(BRIDGE_SCRIPT)]


# --------------------------------------------------------------------------- receiver


@dataclass
class SessionStats:
    """What one receiver saw."""

    frame_bytes: int = 0
    frames: int = 0
    grants: int = 0
    bins: collections.Counter[int] = field(default_factory=collections.Counter)
    errors: list[str] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    windows: list[tuple[int, int, str]] = field(default_factory=list)
    final: dict[str, Any] | None = None


class LoadReceiver(QuicConnectionProtocol):
    """One WebTransport session acting as a Nuwa receiver (decisions in the bridge)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=True)
        self.sid: int | None = None  # assigned by the worker
        self.worker: Worker | None = None
        self.session_id: int | None = None
        self._connect_sid: int | None = None
        self._connect_done = asyncio.Event()
        self.connect_status: int | None = None
        self.readers: dict[int, FrameReader] = {}
        self.requests: dict[int, dict[str, Any]] = {}
        self.stats = SessionStats()
        self.grant_seq = 0
        self.last_send_time_us = 0
        self.last_recv_us = 0
        self.terminated = False

    async def open_session(self) -> None:
        """Extended CONNECT to /nuwa. Raises ``RuntimeError`` unless answered 200."""
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"CONNECT"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/nuwa"),
                (b":protocol", b"webtransport"),
                (b"sec-webtransport-http3-draft02", b"1"),
            ],
        )
        self._connect_sid = sid
        self.transmit()
        await asyncio.wait_for(self._connect_done.wait(), 10)
        if self.connect_status != 200:
            raise RuntimeError(f"CONNECT answered {self.connect_status}")
        self.session_id = sid

    def request(self, body: dict[str, Any], meta: dict[str, Any]) -> int:
        """Open a bidi stream with a request, registered as WebTransport (docs/DESIGN.md §8)."""
        assert self.session_id is not None
        sid = self.h3.create_webtransport_stream(self.session_id)
        with self.h3._get_or_create_stream(sid) as st:
            st.frame_type = H3FrameType.WEBTRANSPORT_STREAM
            st.session_id = self.session_id
        self._quic.send_stream_data(sid, json.dumps(body).encode(), end_stream=True)
        self.readers[sid] = FrameReader()
        self.requests[sid] = {**meta, "t_req_us": now_us(), "first_byte": False, "body": 0}
        self.transmit()
        return sid

    @property
    def open_requests(self) -> int:
        """Requests not answered to their end."""
        return len(self.requests)

    def send_grant(self, window_bytes: int, cum_bytes: int) -> None:
        """One GRANT datagram (PROTOCOL.md "Grants"), echo fields as NuwaSession fills them."""
        if self.session_id is None or self.terminated:
            return
        t = now_us()
        self.grant_seq = (self.grant_seq + 1) % (1 << 32)
        g = Grant(
            self.grant_seq,
            t,
            cum_bytes,
            window_bytes,
            self.last_send_time_us,
            min((1 << 32) - 1, max(0, t - self.last_recv_us)) if self.last_recv_us else 0,
        )
        # Grants are state, latest wins: drop any grant still queued unsent (aioquic queues
        # datagrams without limit while its congestion window is full, e.g. through an
        # outage, and would then burst them all; quiche, in Chromium, expires queued datagrams).
        self._quic._datagrams_pending.clear()
        self.h3.send_datagram(self.session_id, encode_grant(g))
        self.stats.grants += 1
        self.transmit()

    def quic_event_received(self, event: QuicEvent) -> None:
        """QUIC events → H3 events; resets and termination are errors unless we closed."""
        if isinstance(event, ConnectionTerminated):
            self.terminated = True
            if self.worker is None or not self.worker.closing:
                self.stats.errors.append(
                    f"connection terminated: {event.error_code} {event.reason_phrase}"
                )
        elif isinstance(event, StreamReset) and event.stream_id in self.requests:
            self.stats.errors.append(f"stream {event.stream_id} reset ({event.error_code})")
            self.requests.pop(event.stream_id, None)
        for h3_event in self.h3.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event: H3Event) -> None:
        if isinstance(event, HeadersReceived) and event.stream_id == self._connect_sid:
            self.connect_status = int(dict(event.headers).get(b":status", b"0"))
            self._connect_done.set()
        elif isinstance(event, WebTransportStreamDataReceived):
            self._on_data(event.stream_id, event.data, event.stream_ended)

    def _on_data(self, stream_id: int, data: bytes, ended: bool) -> None:
        req = self.requests.get(stream_id)
        reader = self.readers.get(stream_id)
        if req is None or reader is None:
            return
        t = now_us()
        try:
            frames = reader.feed(data)
        except ProtocolError as exc:
            self.stats.errors.append(f"malformed frame: {exc}")
            self.requests.pop(stream_id, None)
            return
        assert self.worker is not None and self.sid is not None
        if self.worker.closing:
            return  # the run is over: the controllers are being closed
        out = self.worker.pending.setdefault(self.sid, [])
        for f in frames:
            size = FRAME_HEADER_BYTES + f.header.payload_len
            out += (f.header.send_time_us, t, size)
            self.last_send_time_us = f.header.send_time_us
            self.last_recv_us = t
            self.stats.frames += 1
            self.stats.frame_bytes += size
            self.stats.bins[(t - self.worker.t0_us) // (BIN_MS * 1000)] += size
            if f.header.frame_type == FrameType.HEAD and not req["first_byte"]:
                req["first_byte"] = True
                self.worker.bridge.request(
                    {"o": "rtt", "id": self.sid, "rtt_us": max(1, t - req["t_req_us"])}
                )
            elif f.header.frame_type == FrameType.DATA:
                req["body"] += f.header.payload_len
            elif f.header.frame_type == FrameType.ERROR:
                self.stats.errors.append(f"ERROR frame: {f.payload[:200]!r}")
        self.worker.schedule_flush()
        if ended:
            self.requests.pop(stream_id, None)
            self.readers.pop(stream_id, None)
            if req.get("segment") is not None:
                self.stats.segments.append(
                    {
                        "k": req["segment"],
                        "t_req_us": req["t_req_us"] - self.worker.t0_us,
                        "download_us": t - req["t_req_us"],
                        "bytes": req["body"],
                        "late": t - req["t_req_us"] > req["deadline_us"],
                    }
                )


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
        if not self.pending:
            return
        t = now_us()
        first_recv = min(frames[1] for frames in self.pending.values())
        batch = [[sid, frames] for sid, frames in self.pending.items()]
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


# --------------------------------------------------------------------------- orchestrator


class StartError(RuntimeError):
    """A part (server, emulator, worker) failed to start."""


def _start_ready(
    cmd: list[str], stderr_path: Path, timeout_s: float = 30.0
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start ``cmd``, wait for its ``{"event":"ready"}`` stdout line. Raises :class:`StartError`."""
    errf = stderr_path.open("w")
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=errf, text=True)
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("event") == "ready":
                return proc, msg
    _stop(proc)
    raise StartError(
        f"{' '.join(cmd[:4])}: no ready line; stderr tail:\n{stderr_path.read_text()[-2000:]}"
    )


def _stop(proc: subprocess.Popen[Any], pid: int | None = None) -> None:
    """SIGTERM (to ``pid`` if given, else the process), wait, SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid or proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS/VmHWM in kB from /proc/PID/status (empty if gone)."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (/proc/PID/stat fields 14, 15)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def udp_counters() -> dict[str, int]:
    """The kernel's UDP counters (/proc/net/snmp ``Udp:``); RcvbufErrors are loopback drops."""
    try:
        lines = [
            ln.split()
            for ln in Path("/proc/net/snmp").read_text().splitlines()
            if ln.startswith("Udp:")
        ]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:], strict=False)}


def udp_socket_drops() -> dict[int, int]:
    """Per local UDP port, the kernel's drop count (last column of /proc/net/udp{,6})."""
    drops: dict[int, int] = collections.Counter()
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        with contextlib.suppress(OSError):
            for line in Path(name).read_text().splitlines()[1:]:
                f = line.split()
                if len(f) >= 13:
                    drops[int(f[1].rsplit(":", 1)[1], 16)] += int(f[-1])
    return dict(drops)


def server_session_summaries(stderr_path: Path) -> dict[str, Any]:
    """Totals over the ``session … closed (…): {summary}`` lines the server logs at close."""
    keys = ("grant_violations", "fallback_entries", "grants_accepted", "frames", "bytes_sent")
    totals: dict[str, Any] = {k: 0 for k in keys}
    totals["sessions"] = 0
    totals["close_reasons"] = collections.Counter()
    totals["grants_dropped"] = collections.Counter()
    totals["transmits_with_unsent_new_bytes"] = 0
    if not stderr_path.exists():
        return totals
    for line in stderr_path.read_text(errors="replace").splitlines():
        if " closed (" not in line or "): {" not in line:
            continue
        with contextlib.suppress(ValueError):
            summ = json.loads(line.split("): ", 1)[1])
            totals["sessions"] += 1
            for k in keys:
                totals[k] += int(summ.get(k) or 0)
            totals["close_reasons"][str(summ.get("close_reason"))] += 1
            totals["grants_dropped"].update(summ.get("grants_dropped") or {})
            dep = summ.get("departure") or {}
            totals["transmits_with_unsent_new_bytes"] += int(
                dep.get("transmits_with_unsent_new_bytes") or 0
            )
    return totals


def _child_pid(pid: int, timeout_s: float = 10.0) -> int:
    """The first child of ``pid`` (the server under py-spy)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = (task / "children").read_text().split()
                if kids:
                    return int(kids[0])
        time.sleep(0.05)
    raise StartError(f"no child of {pid}")


def summarize_profile(raw_path: Path, top: int = 15) -> dict[str, Any]:
    """Where the CPU went, from a py-spy raw (collapsed stacks) file.

    Returns ``samples``, ``self`` (top functions by own samples, share of all)
    and ``by_area`` (own samples grouped by package: aioquic crypto, aioquic
    QUIC, aioquic H3, nuwa_server, asyncio, other).
    """
    self_counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw_path.read_text().splitlines():
        stack, _, n_s = line.rpartition(" ")
        if not stack or not n_s.isdigit():
            continue
        n = int(n_s)
        total += n
        self_counts[stack.split(";")[-1]] += n
    areas: collections.Counter[str] = collections.Counter()
    for frame, n in self_counts.items():
        if "crypto" in frame or "aead" in frame.lower():
            area = "aioquic crypto"
        elif "aioquic/h3" in frame:
            area = "aioquic h3"
        elif "aioquic" in frame:
            area = "aioquic quic"
        elif "nuwa_server" in frame:
            area = "nuwa_server"
        elif "asyncio" in frame or "selectors" in frame or "socket" in frame:
            area = "asyncio/sockets"
        else:
            area = "other"
        areas[area] += n
    share = (lambda n: round(n / total, 4)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "self": [{"frame": f, "share": share(n)} for f, n in self_counts.most_common(top)],
        "by_area": {k: share(v) for k, v in areas.most_common()},
    }


def analyze(
    a: argparse.Namespace, workers: list[dict[str, Any]], link_bps: float | None
) -> dict[str, Any]:
    """Fairness, goodput, deadlines and errors from the workers' reports."""
    sessions = [s for w in workers for s in w["sessions"]]
    errors = [e for w in workers for e in w["errors"]] + [
        f"session {s['id']}: {e}" for s in sessions for e in s["errors"]
    ]
    n_bins = int(a.duration * 1000 // BIN_MS)
    first_bin = int(a.fair_from_s * 1000 // BIN_MS)
    goodput_bps = []
    for s in sessions:
        b = sum(v for k, v in s["bins"].items() if first_bin <= int(k) < n_bins)
        goodput_bps.append(b * 8 / max(1e-9, (n_bins - first_bin) * BIN_MS / 1000))
    jain = jain_index(goodput_bps) if any(goodput_bps) else 0.0
    total_bps = sum(goodput_bps)
    out: dict[str, Any] = {
        "sessions": len(sessions),
        "errors": errors,
        "goodput_bps": {
            "total": total_bps,
            "min": min(goodput_bps, default=0),
            "max": max(goodput_bps, default=0),
            "per_session": goodput_bps,
        },
        "jain_index": jain,
        "fair_from_s": a.fair_from_s,
        "bridge_lag_us": [w["bridge_lag_us"] for w in workers],
        "worker_cpu_s": [w["cpu_s"] for w in workers],
        # Base one-way delay each controller holds at the end (same clock on both sides here,
        # so it is the true propagation delay plus any standing queue it mistook for none).
        "base_owd_ms": [
            round(((s["final"] or {}).get("base_owd_us") or 0) / 1000, 1) for s in sessions
        ],
        "final_phases": collections.Counter((s["final"] or {}).get("phase", "?") for s in sessions),
    }
    if link_bps:
        out["link_bps"] = link_bps
        out["goodput_share_of_link"] = total_bps / link_bps
        fair = link_bps / len(sessions)
        out["sessions_below_90pct_fair_share"] = sum(1 for g in goodput_bps if g < 0.9 * fair)
    if a.mode == "paced":
        segs = [g for s in sessions for g in s["segments"]]
        late = [g for g in segs if g["late"]]
        dl = sorted(g["download_us"] / 1e6 for g in segs if g["download_us"] is not None)
        out["segments"] = {
            "count": len(segs),
            "late": len(late),
            "late_share": len(late) / len(segs) if segs else 1.0,
            "download_s": {"p50": _q(dl, 0.5), "p99": _q(dl, 0.99), "max": dl[-1] if dl else None},
            "segment_s": a.segment_s,
        }
    return out


def orchestrate(a: argparse.Namespace) -> dict[str, Any]:
    """Start server, emulator and workers; measure; stop everything (by PID)."""
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    if a.trace:
        trace_path = Path(a.trace).resolve()
        tr = load_trace(trace_path)
        link_bps: float | None = len(tr.opportunities_ms) * 1504 * 8 / (tr.period_ms / 1000)
    else:
        tr = constant_rate_trace(a.link_mbps * 1e6, 1000)
        trace_path = out / "link.mahi"
        trace_path.write_text("".join(f"{t}\n" for t in tr.opportunities_ms))
        link_bps = a.link_mbps * 1e6
    server_cmd = [
        py,
        "-m",
        "nuwa_server.server",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--cc",
        "nuwa",
        "--state-dir",
        str(REPO_ROOT / ".cache" / "dev-cert"),
    ]
    if a.server_logs:
        server_cmd += ["--log-dir", str(out / "server")]
    spy = REPO_ROOT / ".venv" / "bin" / "py-spy"
    profile_path = out / "server-profile.txt"
    if a.profile and spy.exists():
        server_cmd = [
            str(spy),
            "record",
            "-r",
            "100",
            "-f",
            "raw",
            "-o",
            str(profile_path),
            "--",
            *server_cmd,
        ]
    procs: list[subprocess.Popen[Any]] = []
    server_pid: int | None = None
    rss_samples: list[tuple[float, int]] = []
    cpu_samples: list[tuple[float, float]] = []
    try:
        server, ready = _start_ready(server_cmd, out / "server.stderr")
        procs.append(server)
        server_pid = _child_pid(server.pid) if server_cmd[0] == str(spy) else server.pid
        emu, emu_ready = _start_ready(
            [
                py,
                "-m",
                "nuwa_lab.emulator",
                "--listen",
                "127.0.0.1:0",
                "--server",
                f"127.0.0.1:{ready['port']}",
                "--trace",
                str(trace_path),
                "--delay-ms",
                str(a.delay_ms),
                "--uplink-delay-ms",
                str(a.delay_ms),
                "--queue-packets",
                str(a.queue_packets),
                "--log",
                str(out / "emulator.log"),
                "--summary-json",
                str(out / "emulator-summary.json"),
            ],
            out / "emulator.stderr",
        )
        procs.append(emu)
        per = [
            a.sessions // a.workers + (1 if i < a.sessions % a.workers else 0)
            for i in range(a.workers)
        ]
        start_at = time.monotonic() + 2.0 + 0.3 * a.sessions
        worker_procs = []
        base = 0
        for i, k in enumerate(per):
            if k == 0:
                continue
            wcmd = [
                py,
                "-m",
                "nuwa_lab.load",
                "--worker",
                "--connect",
                f"127.0.0.1:{emu_ready['listen_port']}",
                "--sessions",
                str(k),
                "--id-base",
                str(base),
                "--start-at",
                str(start_at),
                "--duration",
                str(a.duration),
                "--mode",
                a.mode,
                "--rate-mbps",
                str(a.rate_mbps),
                "--segment-s",
                str(a.segment_s),
                "--cc",
                a.cc,
                "--json",
                str(out / f"worker-{i}.json"),
            ]
            base += k
            wp = subprocess.Popen(
                wcmd,
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=(out / f"worker-{i}.stderr").open("w"),
            )
            worker_procs.append(wp)
            procs.append(wp)
        udp0 = udp_counters()
        t_start = time.monotonic()
        cpu0 = None
        while any(w.poll() is None for w in worker_procs):
            time.sleep(1.0)
            t = time.monotonic() - t_start
            st = _proc_status(server_pid)
            if "VmRSS" in st:
                rss_samples.append((round(t, 1), st["VmRSS"]))
            c = _cpu_s(server_pid)
            if c is not None:
                cpu_samples.append((round(t, 1), c))
                if cpu0 is None and time.monotonic() >= start_at:
                    cpu0 = (time.monotonic(), c)
            if t > a.duration + 120 + 0.5 * a.sessions:
                raise StartError("workers did not finish in time")
        cpu_load = None
        if cpu0 is not None and cpu_samples:
            cpu_load = (cpu_samples[-1][1] - cpu0[1]) / max(1e-9, time.monotonic() - cpu0[0])
        peak = _proc_status(server_pid).get("VmHWM")
        udp1 = udp_counters()
        sock_drops = udp_socket_drops()
        known = {int(ready["port"]): "server", int(emu_ready["listen_port"]): "emulator_listen"}
        drops_by_socket: dict[str, int] = collections.Counter()
        for port_, d in sock_drops.items():
            drops_by_socket[known.get(port_, "other (emulator upstream, clients)")] += d
        failed = [i for i, w in enumerate(worker_procs) if w.returncode != 0]
        if failed:
            tails = "\n".join((out / f"worker-{i}.stderr").read_text()[-1500:] for i in failed)
            raise StartError(f"worker(s) {failed} failed:\n{tails}")
        workers = [
            json.loads((out / f"worker-{i}.json").read_text()) for i in range(len(worker_procs))
        ]
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                _stop(p, server_pid if p is procs[0] and server_pid else None)
    result = analyze(a, workers, link_bps)
    emu_summary = (
        json.loads((out / "emulator-summary.json").read_text())
        if (out / "emulator-summary.json").exists()
        else {}
    )
    result.update(
        {
            "mode": a.mode,
            "duration_s": a.duration,
            "workers": a.workers,
            "trace": str(a.trace) if a.trace else f"constant {a.link_mbps} Mbps",
            "rate_mbps": a.rate_mbps if a.mode == "paced" else None,
            "server": {
                "peak_rss_kb": peak,
                "rss_kb_samples": rss_samples[:: max(1, len(rss_samples) // 30)],
                "cpu_share_of_one_core": cpu_load,
            },
            "emulator": {
                k: emu_summary.get(k)
                for k in (
                    "valid",
                    "lateness_ms",
                    "cpu_s",
                    "loss_rate",
                    "utilization",
                    "queuing_delay_ms",
                )
            },
            "host": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
            "udp_kernel_drops": {
                k: udp1.get(k, 0) - udp0.get(k, 0)
                for k in ("RcvbufErrors", "SndbufErrors", "InErrors")
            },
            "server_sessions": server_session_summaries(out / "server.stderr"),
            "udp_drops_by_socket": drops_by_socket,
        }
    )
    if a.profile and profile_path.exists():
        result["server"]["profile"] = summarize_profile(profile_path)
    ok = not result["errors"]
    if a.mode == "bulk":
        ok = ok and result["jain_index"] >= JAIN_TARGET
    else:
        ok = ok and result["segments"]["late_share"] < LATE_SEGMENT_LIMIT
    result["ok"] = ok
    return result


def build_parser() -> argparse.ArgumentParser:
    """The CLI (module doc)."""
    p = argparse.ArgumentParser(prog="nuwa load", description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=20, help="concurrent sessions (default 20)")
    p.add_argument("--duration", type=float, default=60.0, help="load duration, s (default 60)")
    p.add_argument("--json", help="write the result here")
    p.add_argument("--out", default="out/load", help="run directory (logs) (default out/load)")
    p.add_argument("--mode", choices=("bulk", "paced"), default="bulk")
    p.add_argument(
        "--rate-mbps",
        type=float,
        default=1.0,
        help="paced: per-session video bitrate, Mbit/s (default 1)",
    )
    p.add_argument("--segment-s", type=float, default=2.0, help="paced: segment duration, s")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--link-mbps",
        type=float,
        help="constant-rate bottleneck, Mbit/s "
        "(default: 1.2 Mbit/s per session in bulk, 1.5 × rate per session paced)",
    )
    g.add_argument("--trace", help="Mahimahi trace for the bottleneck instead")
    p.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay each way (25)")
    p.add_argument("--queue-packets", type=int, default=1000, help="drop-tail limit (1000)")
    p.add_argument("--workers", type=int, default=1, help="load client processes (default 1)")
    p.add_argument(
        "--fair-from-s",
        type=float,
        default=10.0,
        help="goodput and fairness from this time on, s (default 10)",
    )
    p.add_argument("--cc", default="{}", help="controller config JSON for every receiver")
    p.add_argument("--profile", action="store_true", help="run the server under py-spy")
    p.add_argument(
        "--server-logs",
        action="store_true",
        help="server per-session logs (frames, grants) in OUT/server (costs CPU)",
    )
    # worker mode (internal)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--connect", help=argparse.SUPPRESS)
    p.add_argument("--id-base", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    return p


def validate(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Bad arguments exit 2 with a message naming the option."""
    if a.sessions < 1 or a.sessions > 1000:
        p.error(f"--sessions must be in [1, 1000], got {a.sessions}")
    if not (a.duration > 0) or a.duration > 3600:
        p.error(f"--duration must be in (0, 3600] s, got {a.duration}")
    if not (a.rate_mbps > 0):
        p.error(f"--rate-mbps must be > 0, got {a.rate_mbps}")
    if not (a.segment_s > 0):
        p.error(f"--segment-s must be > 0, got {a.segment_s}")
    if a.link_mbps is not None and not (a.link_mbps > 0):
        p.error(f"--link-mbps must be > 0, got {a.link_mbps}")
    if a.workers < 1 or a.workers > a.sessions:
        p.error(f"--workers must be in [1, --sessions], got {a.workers}")
    if not a.worker and not (0 <= a.fair_from_s < a.duration):
        p.error(f"--fair-from-s must be in [0, --duration), got {a.fair_from_s}")
    try:
        cc = json.loads(a.cc)
    except ValueError as e:
        p.error(f"--cc is not JSON: {e}")
    if not isinstance(cc, dict):
        p.error("--cc must be a JSON object")
    if a.worker and not a.connect:
        p.error("--worker needs --connect")
    if not a.worker and a.link_mbps is None and a.trace is None:
        a.link_mbps = a.sessions * (1.2 if a.mode == "bulk" else 1.5 * a.rate_mbps)


def main(argv: list[str] | None = None) -> int:
    """Entry point (module doc)."""
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)
    if a.worker:
        res = asyncio.run(Worker(a).run())
        Path(a.json).write_text(json.dumps(res))
        return 0
    try:
        result = orchestrate(a)
    except StartError as e:
        print(f"load: {e}", file=sys.stderr)
        return 2
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(result, indent=1, default=str))
    g = result["goodput_bps"]
    line = (
        f"load: {result['sessions']} sessions {a.duration:g} s {a.mode}, "
        f"link {result.get('link_bps', 0) / 1e6:.1f} Mbps: "
        f"errors {len(result['errors'])}, goodput {g['total'] / 1e6:.2f} Mbps "
        f"(min/max per session {g['min'] / 1e6:.2f}/{g['max'] / 1e6:.2f}), "
        f"Jain {result['jain_index']:.3f}, "
        f"server peak RSS {(result['server']['peak_rss_kb'] or 0) / 1024:.1f} MiB, "
        f"server CPU {100 * (result['server']['cpu_share_of_one_core'] or 0):.0f}% of a core"
    )
    if a.mode == "paced":
        s = result["segments"]
        line += f", segments late {s['late']}/{s['count']}"
    print(line)
    for err in result["errors"][:10]:
        print(f"  error: {err}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
