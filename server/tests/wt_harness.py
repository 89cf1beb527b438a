"""The test harness of the server tests: an aioquic WebTransport client (``WtClient``) and
an in-process server on port 0 (``running_server``), with small helpers (logs, the bulk
pattern, waiting for a download to stall). Imported by ``server/tests`` and ``lab/tests``."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.connection import FrameType as H3FrameType
from aioquic.h3.events import (
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import QuicEvent, StreamReset

from nuwa_server.bodies import BULK_PATTERN_PERIOD
from nuwa_server.config import SessionConfig
from nuwa_server.connection import unsent_bytes
from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    Frame,
    FrameReader,
    FrameType,
    Grant,
    decode_json_payload,
    encode_grant,
)
from nuwa_server.server import RunningServer, start_server
from nuwa_server.session import NuwaSession

# --------------------------------------------------------------------------- client


@dataclass
class StreamResult:
    """Frames received on one request stream, with their receive times (µs)."""

    frames: list[Frame] = field(default_factory=list)
    recv_time_us: list[int] = field(default_factory=list)
    ended: bool = False
    reset: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def body(self) -> bytes:
        return b"".join(f.payload for f in self.frames if f.header.frame_type == FrameType.DATA)

    @property
    def head(self) -> dict[str, Any]:
        assert self.frames and self.frames[0].header.frame_type == FrameType.HEAD, self.frames[:1]
        return decode_json_payload(self.frames[0].payload)

    @property
    def error(self) -> dict[str, Any]:
        assert self.frames and self.frames[-1].header.frame_type == FrameType.ERROR
        return decode_json_payload(self.frames[-1].payload)


class WtClient(QuicConnectionProtocol):
    """A minimal WebTransport client over aioquic (what the browser does, in Python)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=True)
        self.session_id: int | None = None
        self.connect_status: int | None = None
        self._connect_done = asyncio.Event()
        self.results: dict[int, StreamResult] = {}
        self._readers: dict[int, FrameReader] = {}
        self.frame_bytes_received = 0
        self.all_frames: list[tuple[int, Frame, int]] = []  # (stream id, frame, recv µs)
        self.progress = asyncio.Event()
        self.on_frame: Callable[[Frame], None] | None = None

    async def open_session(self, path: str = "/nuwa") -> int:
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(sid, [
            (b":method", b"CONNECT"), (b":scheme", b"https"), (b":authority", b"localhost"),
            (b":path", path.encode()), (b":protocol", b"webtransport"),
            (b"sec-webtransport-http3-draft02", b"1"),
        ])
        self._pending_connect = sid
        self.transmit()
        await asyncio.wait_for(self._connect_done.wait(), 5)
        if self.connect_status == 200:
            self.session_id = sid
        assert self.connect_status is not None
        return self.connect_status

    def request(self, body: bytes | dict[str, Any], fin: bool = True) -> int:
        """Open a WebTransport bidi stream and write the request (and FIN)."""
        assert self.session_id is not None
        sid = self.h3.create_webtransport_stream(self.session_id)
        # Register the stream as a WebTransport stream in the H3 layer, or the
        # client parses the response as HTTP/3 frames (docs/DESIGN.md §8 "aioquic").
        with self.h3._get_or_create_stream(sid) as st:
            st.frame_type = H3FrameType.WEBTRANSPORT_STREAM
            st.session_id = self.session_id
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self._quic.send_stream_data(sid, data, end_stream=fin)
        self.results[sid] = StreamResult()
        self._readers[sid] = FrameReader()
        self.transmit()
        return sid

    def send_grant(self, grant: Grant) -> None:
        assert self.session_id is not None
        self.h3.send_datagram(self.session_id, encode_grant(grant))
        self.transmit()

    def send_raw_datagram(self, payload: bytes) -> None:
        assert self.session_id is not None
        self._quic.send_datagram_frame(encode_uint_var(self.session_id // 4) + payload)
        self.transmit()

    async def wait(self, sid: int, timeout_s: float = 10.0) -> StreamResult:
        try:
            await asyncio.wait_for(self.results[sid].done.wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"stream {sid} unfinished after {timeout_s} s: {len(self.results[sid].frames)} "
                f"frames, {self.frame_bytes_received} frame bytes on the session; server: "
                f"{DEBUG_STATE() if DEBUG_STATE else '?'}"
            ) from None
        return self.results[sid]

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamReset) and event.stream_id in self.results:
            self.results[event.stream_id].reset = True
            self.results[event.stream_id].done.set()
        for h3_event in self.h3.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event: H3Event) -> None:
        if isinstance(event, HeadersReceived) and event.stream_id == getattr(
            self, "_pending_connect", None
        ):
            self.connect_status = int(dict(event.headers)[b":status"])
            self._connect_done.set()
        elif isinstance(event, WebTransportStreamDataReceived):
            t_us = time.monotonic_ns() // 1000
            result = self.results.get(event.stream_id)
            if result is None:
                return
            for frame in self._readers[event.stream_id].feed(event.data):
                result.frames.append(frame)
                result.recv_time_us.append(t_us)
                self.frame_bytes_received += FRAME_HEADER_BYTES + frame.header.payload_len
                self.all_frames.append((event.stream_id, frame, t_us))
                if self.on_frame is not None:
                    self.on_frame(frame)
            if event.stream_ended:
                result.ended = True
                result.done.set()
            self.progress.set()
        elif isinstance(event, DataReceived):
            pass


def client_configuration() -> QuicConfiguration:
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        max_datagram_frame_size=65536,
        verify_mode=ssl.CERT_NONE,
        server_name="localhost",
        max_data=16 << 20,
        max_stream_data=16 << 20,
    )
    return config


DEBUG_STATE: Callable[[], str] | None = None


def _server_state(server: RunningServer) -> str:
    """What the server thinks, for a timeout message."""
    parts = []
    for proto in set(server.quic_server._protocols.values()):
        quic = proto._quic
        loss = quic._loss
        parts.append(
            f"cwnd={loss.congestion_window} bif={loss.bytes_in_flight} "
            f"pacing_at={quic._pacing_at} timer={quic.get_timer()} "
            f"wake_at={getattr(proto, '_wake_at', None)} now={asyncio.get_running_loop().time()} "
            f"unsent={unsent_bytes(quic)}"
        )
    for session in server.context.recent_sessions():
        g = session.grants
        parts.append(
            f"{session.name}: written={g.bytes_written} cum={g.cum_received_bytes} "
            f"window={g.window_bytes} last_seq={g.last_grant_seq} accepted={g.grants_accepted} "
            f"dropped={dict(g.grants_dropped)} active={[s.stream_id for s in session.active]}"
        )
    return "; ".join(parts)


@asynccontextmanager
async def running_server(tmp_path: Path, **overrides: Any) -> AsyncIterator[RunningServer]:
    content = tmp_path / "content"
    content.mkdir(exist_ok=True)
    cfg = SessionConfig(
        cc=overrides.pop("cc", "nuwa"),
        content_root=str(content),
        log_dir=str(tmp_path / "logs"),
        **overrides,
    )
    server = await start_server(cfg, host="::", port=0, state_dir=str(tmp_path / "state"))
    global DEBUG_STATE
    DEBUG_STATE = lambda: _server_state(server)  # noqa: E731
    try:
        yield server
    finally:
        DEBUG_STATE = None
        server.close()
        await asyncio.sleep(0.01)


@asynccontextmanager
async def wt_client(server: RunningServer, host: str = "::1") -> AsyncIterator[WtClient]:
    async with connect(host, server.port, configuration=client_configuration(),
                       create_protocol=WtClient) as client:
        assert isinstance(client, WtClient)
        # A window's burst on loopback overflows the default 208 kB receive buffer of a client
        # that is slow to drain (Udp6RcvbufErrors rise), and QUIC's loss recovery then pauses
        # the download past the tests' 150 ms stall detection: not what these tests measure.
        sock = client._transport.get_extra_info("socket") if client._transport else None
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        yield client


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def session_logs(session: NuwaSession) -> Path:
    assert session.log.directory is not None
    return session.log.directory


def bulk_bytes(n: int, offset: int = 0) -> bytes:
    return bytes((offset + i) % BULK_PATTERN_PERIOD for i in range(n))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _wait_stall(client: WtClient, quiet_s: float = 0.15, limit_s: float = 5.0) -> int:
    """Wait until no frame arrived for ``quiet_s``; return bytes received."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        client.progress.clear()
        try:
            await asyncio.wait_for(client.progress.wait(), quiet_s)
        except TimeoutError:
            return client.frame_bytes_received
    raise AssertionError("the download never stalled")
