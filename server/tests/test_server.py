"""End-to-end tests of the WebTransport server with aioquic's own client on loopback.

The server runs in-process on port 0 (same event loop as the client); one
test starts the real CLI as a subprocess to check the ready line.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
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
from nuwa_server.cc.bbr import BbrCongestionControl
from nuwa_server.cc.pacing import ControllerPacer
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


# --------------------------------------------------------------------------- tests


def test_bulk_download_framing_seq_and_timestamps(tmp_path: Path) -> None:
    """A bulk download: HEAD, DATA…, END; seq +1 per frame; send times monotonic."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            assert await client.open_session() == 200
            size = 300_000
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": size})
            result = await client.wait(sid)
            assert result.ended and not result.reset
            types = [f.header.frame_type for f in result.frames]
            assert types[0] == FrameType.HEAD and types[-1] == FrameType.END
            assert set(types[1:-1]) == {FrameType.DATA}
            assert all(f.header.payload_len <= 1200 for f in result.frames[1:-1])
            head = result.head
            assert head["status"] == 200 and head["total_bytes"] == size
            assert head["body_bytes"] == size
            assert result.body == bulk_bytes(size)
            seqs = [f.header.seq for f in result.frames]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            times = [f.header.send_time_us for f in result.frames]
            assert all(a <= b for a, b in zip(times, times[1:], strict=False))
            # same clock as the test (CLOCK_MONOTONIC), never in the future of arrival
            assert all(s <= r for s, r in zip(times, result.recv_time_us, strict=True))
            # a second request on the same session continues the session-wide seq
            sid2 = client.request({"v": 1, "op": "bulk", "size_bytes": 10})
            result2 = await client.wait(sid2)
            assert result2.frames[0].header.seq == seqs[-1] + 1
            assert result2.body == bulk_bytes(10)
            session = server.context.recent_sessions()[0]
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["frames"] == len(result.frames) + len(result2.frames)
        frames_log = read_jsonl(session_logs(session) / "frames.jsonl")
        assert [r["seq"] for r in frames_log] == seqs + [f.header.seq for f in result2.frames]
        assert [r["send_time_us"] for r in frames_log[: len(times)]] == times
        assert sum(r["bytes"] for r in frames_log) == summary["bytes_sent"]
        assert frames_log[0]["type"] == "HEAD" and frames_log[0]["grant_window_bytes"] is None
        events = read_jsonl(session_logs(session) / "events.jsonl")
        assert events[0]["event"] == "config" and events[0]["cc"] == "cubic"

    run(main())


def test_connect_other_path_404_and_ipv4(tmp_path: Path) -> None:
    """CONNECT on a path other than /nuwa gets 404; the dual-stack socket answers IPv4."""

    async def main() -> None:
        async with running_server(tmp_path) as server:
            async with wt_client(server, host="127.0.0.1") as client:
                assert await client.open_session("/other") == 404
            async with wt_client(server, host="127.0.0.1") as client:
                assert await client.open_session("/nuwa") == 200

    run(main())


def test_get_whole_file_and_range(tmp_path: Path) -> None:
    """get serves a file (200) and an inclusive byte range (206), clamped at the end."""
    data = os.urandom(50_000)
    (tmp_path / "content" / "video").mkdir(parents=True)
    (tmp_path / "content" / "video" / "seg 1.m4s").write_bytes(data)
    (tmp_path / "content" / "manifest.mpd").write_text("<MPD/>")

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            whole = client.request({"v": 1, "op": "get", "path": "/video/seg%201.m4s"})
            part = client.request(
                {"v": 1, "op": "get", "path": "/video/seg 1.m4s", "range": [100, 4099]}
            )
            tail = client.request(
                {"v": 1, "op": "get", "path": "/video/seg 1.m4s", "range": [49_990, 10**9]}
            )
            past = client.request(
                {"v": 1, "op": "get", "path": "/video/seg 1.m4s", "range": [50_000, 50_001]}
            )
            mpd = client.request({"v": 1, "op": "get", "path": "/manifest.mpd?x=1"})
            missing = client.request({"v": 1, "op": "get", "path": "/nope.m4s"})
            r = await client.wait(whole)
            assert r.head == {"status": 200, "total_bytes": 50_000, "body_bytes": 50_000,
                              "content_type": "video/iso.segment"}
            assert r.body == data
            r = await client.wait(part)
            assert r.head["status"] == 206 and r.head["range"] == [100, 4099]
            assert r.head["body_bytes"] == 4000 and r.body == data[100:4100]
            r = await client.wait(tail)
            assert r.head["range"] == [49_990, 49_999] and r.body == data[49_990:]
            r = await client.wait(past)
            assert r.error["status"] == 416 and len(r.frames) == 1
            r = await client.wait(mpd)
            assert r.head["content_type"] == "application/dash+xml" and r.body == b"<MPD/>"
            r = await client.wait(missing)
            assert r.error["status"] == 404

    run(main())


TRAVERSALS = [
    "/../secret.txt",
    "/sub/../../secret.txt",
    "/%2e%2e/secret.txt",
    "/%2E%2E%2Fsecret.txt",
    "/..%2fsecret.txt",
    "/%252e%252e/secret.txt",
    "/%252e%252e%252fsecret.txt",
    "/sub/%2e%2e/%2e%2e/secret.txt",
    "//" + "secret.txt",
    "/\\..\\secret.txt",
    "/..\\secret.txt",
    "/link_out",
    "/dir_link/secret.txt",
    "/sub/./../../secret.txt",
    "/%00/secret.txt",
    "/C:/secret.txt",
]


def test_path_traversal_refused(tmp_path: Path) -> None:
    """Traversal variants get 403/400/404 and not one byte from outside the root."""
    secret = b"TOP-SECRET-" + os.urandom(16).hex().encode()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(secret)
    (tmp_path / "secret.txt").write_bytes(secret)
    content = tmp_path / "content"
    (content / "sub").mkdir(parents=True)
    (content / "ok.txt").write_bytes(b"fine")
    os.symlink(outside / "secret.txt", content / "link_out")
    os.symlink(outside, content / "dir_link")
    os.symlink(content / "ok.txt", content / "link_in")

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            sids = {p: client.request({"v": 1, "op": "get", "path": p}) for p in TRAVERSALS}
            absolute = client.request({"v": 1, "op": "get", "path": str(outside / "secret.txt")})
            no_slash = client.request({"v": 1, "op": "get", "path": "secret.txt"})
            link_in = client.request({"v": 1, "op": "get", "path": "/link_in"})
            for path, sid in sids.items():
                r = await client.wait(sid)
                assert r.error["status"] in (400, 403), (path, r.error)
                assert secret not in b"".join(f.payload for f in r.frames)
            r = await client.wait(absolute)  # looked up under the root, so absent
            assert r.error["status"] == 404
            r = await client.wait(no_slash)
            assert r.error["status"] == 400
            r = await client.wait(link_in)  # a symlink inside the root is fine
            assert r.body == b"fine"
            everything = b"".join(f.payload for _, f, _ in client.all_frames)
            assert secret not in everything
            session = server.context.recent_sessions()[0]
        refused = [e for e in read_jsonl(session_logs(session) / "events.jsonl")
                   if e["event"] == "refused"]
        assert len(refused) >= len([p for p in TRAVERSALS if "%00" not in p]) - 1

    run(main())


def test_bad_requests_get_error_and_session_survives(tmp_path: Path) -> None:
    """Malformed request → ERROR frame + FIN; other streams of the session still served."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            bad = [
                client.request(b"{not json"),
                client.request(b"\xff\xfe"),
                client.request(b"[1,2]"),
                client.request({"v": 2, "op": "bulk", "size_bytes": 1}),
                client.request({"v": 1, "op": "put"}),
                client.request({"v": 1, "op": "bulk", "size_bytes": 0}),
                client.request({"v": 1, "op": "bulk", "size_bytes": True}),
                client.request({"v": 1, "op": "get", "path": "/x", "range": [5, 1]}),
                client.request(b"x" * 5000),
            ]
            good = client.request({"v": 1, "op": "bulk", "size_bytes": 5000})
            for sid in bad:
                r = await client.wait(sid)
                assert r.ended and len(r.frames) == 1, r.frames
                assert r.error["status"] == 400
            r = await client.wait(good)
            assert r.body == bulk_bytes(5000)
            # and after the errors, yet another stream
            r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 1}))
            assert r.body == bulk_bytes(1)
            assert server.context.recent_sessions()[0].statuses[400] == len(bad)

    run(main())


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


def test_nuwa_obeys_grants(tmp_path: Path) -> None:
    """nuwa mode: initial window 12000 B, then exactly the granted window; violations 0."""
    frame = FRAME_HEADER_BYTES + 1200

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 2_000_000})
            got = await _wait_stall(client)
            assert 12000 - frame < got <= 12000, got  # before the first grant
            client.send_grant(Grant(1, 1, got, 30_000, 0, 0))
            got2 = await _wait_stall(client)
            assert got + 30_000 - frame < got2 <= got + 30_000, (got, got2)
            # a window smaller than a frame still lets one frame go at a time
            client.send_grant(Grant(2, 2, got2, 100, 0, 0))
            got3 = await _wait_stall(client)
            assert got3 - got2 <= frame
            # a big grant resumes; keep granting as bytes arrive
            seq = 3
            while not client.results[sid].done.is_set():
                client.send_grant(Grant(seq, seq, client.frame_bytes_received, 200_000,
                                        client.all_frames[-1][1].header.send_time_us, 0))
                seq += 1
                await asyncio.sleep(0.002)
            result = await client.wait(sid)
            assert result.body == bulk_bytes(2_000_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.grant_violations == 0
        rows = read_jsonl(session_logs(session) / "frames.jsonl")
        assert all(r["outstanding_bytes"] <= max(r["grant_window_bytes"], r["bytes"])
                   for r in rows)
        assert all(r["grant_window_bytes"] is not None for r in rows)
        grants = read_jsonl(session_logs(session) / "grants.jsonl")
        assert grants[0]["accepted"] and grants[0]["window_in_force_bytes"] == 30_000
        assert grants[1]["reason"] == "window_clamped_low"
        assert grants[1]["window_in_force_bytes"] == 1200
        assert any(g["rtt_us"] is not None and g["rtt_us"] >= 0 for g in grants)
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["grant_violations"] == 0 and summary["grants_accepted"] == seq - 1

    run(main())


def test_absurd_replayed_and_malformed_grants(tmp_path: Path) -> None:
    """Clamps (2^64−1, 2^63), replays dropped, malformed datagrams dropped; no crash."""
    u64_max = (1 << 64) - 1

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            # (30 kB: it fits the ceiling, which grows only while used; this client never
            # reports what it received after the absurd grant, so nothing larger would pass)
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 30_000})
            await _wait_stall(client)
            session = server.context.recent_sessions()[0]
            client.send_raw_datagram(b"")
            client.send_raw_datagram(b"\x01\x10" + bytes(41))
            client.send_raw_datagram(b"\x02" + encode_grant(Grant(1, 0, 0, 0))[1:])
            client.send_raw_datagram(b"\x01\x11" + encode_grant(Grant(1, 0, 0, 0))[2:])
            # cum beyond what was written, window absurd: clamped, accepted
            client.send_grant(Grant(7, u64_max, 1 << 63, u64_max, u64_max, 2**32 - 1))
            await client.wait(sid)  # the 64 MiB window lets everything through
            client.send_grant(Grant(7, 0, 0, 1200))  # replay
            client.send_grant(Grant(3, 0, 0, 1200))  # older
            client.send_grant(Grant(7 + 2**31, 0, 0, 1200))  # exactly half-way: not newer
            client.send_grant(Grant(8, 0, 0, 0))  # newer, cum backwards, window 0
            await asyncio.sleep(0.1)
            g = session.grants
            assert g.grants_dropped["grant_length"] == 2
            assert g.grants_dropped["grant_version"] == 1
            assert g.grants_dropped["grant_type"] == 1
            assert g.grants_dropped["replay"] == 3
            assert g.grants_accepted == 2
            assert g.window_bytes == 1200
            assert g.cum_received_bytes <= g.bytes_written
            assert g.grants_clamped["window_clamped_high"] == 1
            assert g.grants_clamped["cum_clamped_to_written"] == 1
            assert g.grants_clamped["cum_backwards"] == 1
            # blocked now (outstanding ≫ 1200) until a grant reports what arrived
            sid2 = client.request({"v": 1, "op": "bulk", "size_bytes": 10})
            await asyncio.sleep(0.1)
            assert not client.results[sid2].frames
            client.send_grant(Grant(9, 0, client.frame_bytes_received, 1200))
            r = await client.wait(sid2)
            assert r.body == bulk_bytes(10)
        rows = read_jsonl(session_logs(session) / "grants.jsonl")
        assert [r["accepted"] for r in rows] == [False] * 4 + [True] + [False] * 3 + [True] * 2
        assert rows[4]["window_in_force_bytes"] == 64 << 20
        assert rows[4]["rtt_us"] is None  # echo from the future is no sample
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["grants_dropped"] == {"grant_length": 2, "grant_version": 1,
                                             "grant_type": 1, "replay": 3}

    run(main())


def test_grant_timeout_fallback(tmp_path: Path) -> None:
    """No grant for grant_timeout: fall back to the ceiling, window halves to the initial."""

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=200_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 400_000})
            first = await _wait_stall(client, quiet_s=0.1)
            assert first <= 12000
            result = await client.wait(sid, timeout_s=10)  # completes without any grant
            assert result.body == bulk_bytes(400_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.fallback_entries == 1
        events = read_jsonl(session_logs(session) / "events.jsonl")
        fallbacks = [e for e in events if e["event"] == "grant_fallback"]
        assert fallbacks and fallbacks[0]["level"] == 1 and fallbacks[0]["window_bytes"] == 12000

    run(main())


def test_cubic_mode_ignores_grants(tmp_path: Path) -> None:
    """cubic mode: a tiny grant is logged (accepted) but does not limit the sender."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            client.send_grant(Grant(1, 1, 0, 1200))
            await asyncio.sleep(0.05)
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 500_000})
            result = await client.wait(sid)
            assert result.body == bulk_bytes(500_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.grants_accepted == 1
            assert session.grants.window_bytes == 1200
            assert max_outstanding(session) > 100_000 or session.grants.bytes_written > 500_000

    def max_outstanding(session: NuwaSession) -> int:
        return session.grants.bytes_written - session.grants.cum_received_bytes

    run(main())


def test_bbr_mode_paces_a_download_at_bbrs_rate(tmp_path: Path) -> None:
    """--cc bbr: the connection runs BBR (cc/bbr.py), its pacing rate drives the pacer
    (cc/pacing.py), grants are ignored, and the model measures the loopback path."""

    async def main() -> None:
        async with running_server(tmp_path, cc="bbr") as server, wt_client(server) as client:
            await client.open_session()
            client.send_grant(Grant(1, 1, 0, 1200))  # ignored, as under cubic
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 3_000_000})
            result = await client.wait(sid)
            assert result.body == bulk_bytes(3_000_000)
            loss = server.context.protocols[0]._quic._loss
            cc = loss._cc
            assert isinstance(cc, BbrCongestionControl)
            assert isinstance(loss._pacer, ControllerPacer)
            assert cc.round_count >= 5 and cc.max_bw_bytes_per_s > 0
            assert loss._pacer.packet_time == pytest.approx(
                1350 / cc.pacing_rate_bytes_per_s, rel=1e-9)
            assert server.context.recent_sessions()[0].grants.bytes_written >= 3_000_000
            # the download is over: the pump has nothing to send, so BBR's samples from
            # here on are app-limited (QuicFrameTransport.app_limited)
            await asyncio.sleep(0.05)
            assert cc._sampler.app_limited_bytes > 0

    run(main())


def test_client_stop_sending_and_session_close(tmp_path: Path) -> None:
    """A stream the client stops is dropped; closing the session writes the summary."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server:
            async with wt_client(server) as client:
                await client.open_session()
                sid = client.request({"v": 1, "op": "bulk", "size_bytes": 50_000_000})
                await asyncio.sleep(0.05)
                client._quic.stop_stream(sid, 0)
                client.transmit()
                await asyncio.sleep(0.05)
                r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 100}))
                assert r.body == bulk_bytes(100)
                session = server.context.recent_sessions()[0]
                assert session.grants.bytes_written < 50_000_000
                assert client.session_id is not None
                client.h3.send_data(client.session_id, b"", end_stream=True)
                client.transmit()
                for _ in range(100):
                    if session.closed:
                        break
                    await asyncio.sleep(0.01)
                assert session.closed and session.close_reason == "client_closed"
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["close_reason"] == "client_closed"
        assert summary["responses_by_status"] == {"200": 2}

    run(main())


def test_cli_ready_line_and_dev_cert(tmp_path: Path) -> None:
    """The CLI prints one ready line with the port and the certificate hash, serves, exits."""
    state = tmp_path / "state"
    content = tmp_path / "content"
    content.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nuwa_server.server", "--port", "0", "--cc", "reno",
         "--content-root", str(content), "--state-dir", str(state),
         "--log-dir", str(tmp_path / "logs"), "--qlog-dir", str(tmp_path / "qlog")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        ready = json.loads(line)
        assert ready["event"] == "ready" and ready["cc"] == "reno" and ready["port"] > 0
        assert len(ready["cert_sha256_hex"]) == 64

        from nuwa_server.certs import ensure_dev_cert

        assert ensure_dev_cert(state).cert_sha256_hex == ready["cert_sha256_hex"]

        async def fetch() -> None:
            async with connect("localhost", ready["port"], configuration=client_configuration(),
                               create_protocol=WtClient) as client:
                assert isinstance(client, WtClient)
                assert await client.open_session() == 200
                r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 3000}))
                assert r.body == bulk_bytes(3000)

        run(fetch())
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert list((tmp_path / "qlog").glob("*.qlog"))
    summaries = list((tmp_path / "logs").glob("*/summary.json"))
    assert len(summaries) == 1


@pytest.mark.parametrize("payload", [600, 1200])
def test_frame_payload_option(tmp_path: Path, payload: int) -> None:
    """--frame-payload-bytes sets the DATA payload size."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic", frame_payload_bytes=payload) as server, \
                wt_client(server) as client:
            await client.open_session()
            r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 5000}))
            sizes = [f.header.payload_len for f in r.frames[1:-1]]
            assert max(sizes) == payload and sum(sizes) == 5000

    run(main())


def test_round_robin_and_departure_stamps(tmp_path: Path) -> None:
    """Two concurrent downloads interleave frame by frame; frames leave when stamped
    (transport room checked in the log; loopback one-way delay stays small)."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            a = client.request({"v": 1, "op": "bulk", "size_bytes": 1_500_000})
            b = client.request({"v": 1, "op": "bulk", "size_bytes": 1_500_000})
            ra, rb = await client.wait(a), await client.wait(b)
            assert ra.body == rb.body == bulk_bytes(1_500_000)
            session = server.context.recent_sessions()[0]
        print("departure", session.departure)
        assert session.departure.max_unsent_new_bytes <= 1220 + 20  # at most one frame held
        rows = read_jsonl(session_logs(session) / "frames.jsonl")
        order = [r["stream_id"] for r in rows]
        first_b = order.index(b)
        end_a = next(i for i, r in enumerate(rows) if r["stream_id"] == a and r["type"] == "END")
        both = order[first_b - 1 : end_a + 1]  # while both streams are active
        assert len(both) > 2000
        assert all(x != y for x, y in zip(both, both[1:], strict=False))
        assert all(r["bytes_in_flight"] + r["bytes"] <= r["ceiling_bytes"] for r in rows)
        owd_ms = sorted((r - f.header.send_time_us) / 1000 for _, f, r in client.all_frames)
        p50, p95 = owd_ms[len(owd_ms) // 2], owd_ms[int(len(owd_ms) * 0.95)]
        print(f"loopback one-way delay p50 {p50:.2f} ms p95 {p95:.2f} ms")
        # a sender that queued the whole 3 MB at once would show ~100+ ms here
        assert p50 < 50 and p95 < 150, (p50, p95)  # in-process client: loose on purpose

    run(main())


def test_dev_cert_shape_and_renewal(tmp_path: Path) -> None:
    """ECDSA P-256, 10-day validity (≤ 14 for Chromium), SANs, hash of the DER, kept
    across starts, renewed within 2 days of expiry or when unreadable."""
    import datetime as dt
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from nuwa_server.certs import ensure_dev_cert

    state = tmp_path / "state"
    first = ensure_dev_cert(state)
    assert first.generated
    cert = x509.load_pem_x509_certificate(first.cert_path.read_bytes())
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    validity = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert validity == dt.timedelta(days=10) <= dt.timedelta(days=14)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    der = cert.public_bytes(serialization.Encoding.DER)
    assert first.cert_sha256_hex == hashlib.sha256(der).hexdigest()
    assert oct(first.key_path.stat().st_mode & 0o777) == "0o600"

    again = ensure_dev_cert(state)
    assert not again.generated and again.cert_sha256_hex == first.cert_sha256_hex
    now = dt.datetime.now(dt.UTC)
    assert not ensure_dev_cert(state, now + dt.timedelta(days=7)).generated
    renewed = ensure_dev_cert(state, now + dt.timedelta(days=8, hours=1))
    assert renewed.generated and renewed.cert_sha256_hex != first.cert_sha256_hex
    first.cert_path.write_text("garbage")
    assert ensure_dev_cert(state).generated


def test_production_cert_mode(tmp_path: Path) -> None:
    """--cert/--key: served with that certificate; the ready line carries no hash."""
    import datetime as dt

    from nuwa_server.certs import generate_dev_cert

    cert_pem, key_pem = generate_dev_cert(dt.datetime.now(dt.UTC))
    (tmp_path / "c.pem").write_bytes(cert_pem)
    (tmp_path / "k.pem").write_bytes(key_pem)

    async def main() -> None:
        server = await start_server(SessionConfig(cc="cubic"), host="127.0.0.1", port=0,
                                    cert_path=str(tmp_path / "c.pem"),
                                    key_path=str(tmp_path / "k.pem"))
        try:
            ready = server.ready_line("127.0.0.1", production=True)
            assert ready["cert_sha256_hex"] is None and ready["port"] == server.port
            async with wt_client(server, host="127.0.0.1") as client:
                assert await client.open_session() == 200
                r = await client.wait(client.request({"v": 1, "op": "get", "path": "/x"}))
                assert r.error["status"] == 404  # no content root configured
        finally:
            server.close()

    run(main())


def test_cancel_ends_the_response_with_499_and_fin(tmp_path: Path) -> None:
    """cancel: the named response ends with ERROR 499 + FIN soon after; every frame
    written is received (nothing stranded); the cancel stream gets HEAD 200, END; a cancel
    that arrives before its request makes that request 499; an unknown id changes nothing."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            assert await client.open_session() == 200
            size = 50_000_000
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": size, "id": 7})
            while client.frame_bytes_received < 200_000:
                client.progress.clear()
                await asyncio.wait_for(client.progress.wait(), 5)
            cancel = client.request({"v": 1, "op": "cancel", "id": 7})
            result = await client.wait(sid)
            assert result.ended and not result.reset
            assert result.frames[-1].header.frame_type == FrameType.ERROR
            assert result.error["status"] == 499
            assert len(result.body) < size // 10  # cut short, not served to the end
            assert result.body == bulk_bytes(len(result.body))
            answer = await client.wait(cancel)
            assert [f.header.frame_type for f in answer.frames] == [FrameType.HEAD, FrameType.END]
            assert answer.head["status"] == 200
            # Cancel first, request later (streams are not ordered): answered 499 at once.
            early = client.request({"v": 1, "op": "cancel", "id": 9})
            await client.wait(early)
            late = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 10,
                                                     "id": 9}))
            assert late.error["status"] == 499
            # An id nobody used: nothing else is touched.
            await client.wait(client.request({"v": 1, "op": "cancel", "id": 12345}))
            ok = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 1000,
                                                   "id": 10}))
            assert ok.body == bulk_bytes(1000)
            session = server.context.recent_sessions()[0]
            await asyncio.sleep(0.05)
            # Every frame byte the server wrote reached the client: nothing left outstanding.
            assert session.grants.bytes_written == client.frame_bytes_received
            assert session.cancelled == 1
        events = read_jsonl(session_logs(session) / "events.jsonl")
        cancels = [e for e in events if e["event"] == "cancel"]
        assert [(e["request_id"], e["cut"]) for e in cancels] == [(7, True), (9, False),
                                                                   (12345, False)]

    run(main())


def test_bad_request_id_is_400(tmp_path: Path) -> None:
    """An id that is not a u32, or a cancel without one: ERROR 400 (request_id)."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            assert await client.open_session() == 200
            for body in ({"v": 1, "op": "cancel"}, {"v": 1, "op": "cancel", "id": -1},
                         {"v": 1, "op": "bulk", "size_bytes": 5, "id": 2**32},
                         {"v": 1, "op": "get", "path": "/x", "id": "7"}):
                r = await client.wait(client.request(body))
                assert r.error["status"] == 400, body
                assert "id" in r.error["error"], r.error
            assert server.context.recent_sessions()[0].statuses[400] == 4

    run(main())
