"""One load receiver: a WebTransport session whose decisions the TypeScript controller
makes, in a Node bridge subprocess (:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import FrameType as H3FrameType
from aioquic.h3.connection import H3Connection
from aioquic.h3.events import H3Event, HeadersReceived, WebTransportStreamDataReceived
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamReset

from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    FrameReader,
    FrameType,
    Grant,
    ProtocolError,
    encode_grant,
)

from .common import BIN_MS, BRIDGE_SCRIPT, REPO_ROOT, now_us

if TYPE_CHECKING:
    from .worker import Worker

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
