"""The WebSocket fallback (nuwa_server.websocket): framing codec, and the server
end to end over loopback with the ``websockets`` client speaking the
``@moq/web-transport-ws`` framing (what the polyfill sends, in Python)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from nuwa_server.bodies import BULK_PATTERN_PERIOD
from nuwa_server.config import SessionConfig
from nuwa_server.protocol import FrameReader, FrameType, Grant, encode_grant
from nuwa_server.server import RunningServer, start_server
from nuwa_server.ws_framing import (
    GRANT_STREAM_ID,
    GrantStreamReader,
    WsFrameError,
    decode_varint,
    decode_ws_frame,
    encode_application_close,
    encode_reset_stream,
    encode_stream_frame,
    encode_varint,
)

# --------------------------------------------------------------------------- codec


@pytest.mark.parametrize("value,length", [(0, 1), (63, 1), (64, 2), (16383, 2), (16384, 4),
                                          (2**30 - 1, 4), (2**30, 8), (2**62 - 1, 8)])
def test_varint_round_trip_and_length(value: int, length: int) -> None:
    enc = encode_varint(value)
    assert len(enc) == length
    assert decode_varint(enc + b"x", 0) == (value, length)


def test_varint_rfc9000_examples() -> None:
    # RFC 9000 §A.1 sample encodings
    assert decode_varint(bytes.fromhex("c2197c5eff14e88c"), 0)[0] == 151288809941952652
    assert decode_varint(bytes.fromhex("9d7f3e7d"), 0)[0] == 494878333
    assert decode_varint(bytes.fromhex("7bbd"), 0)[0] == 15293
    assert encode_varint(15293) == bytes.fromhex("7bbd")


def test_varint_out_of_range_and_truncated() -> None:
    with pytest.raises(ValueError, match="out of range"):
        encode_varint(2**62)
    with pytest.raises(ValueError, match="out of range"):
        encode_varint(-1)
    with pytest.raises(WsFrameError, match="truncated"):
        decode_varint(bytes.fromhex("9d7f"), 0)


def test_frames_round_trip() -> None:
    f = decode_ws_frame(encode_stream_frame(4, b"abc", fin=True))
    assert (f.kind, f.stream_id, f.data, f.fin) == ("stream", 4, b"abc", True)
    f = decode_ws_frame(encode_stream_frame(400, b"", fin=False))
    assert (f.kind, f.stream_id, f.data, f.fin) == ("stream", 400, b"", False)
    f = decode_ws_frame(encode_reset_stream(8, 77))
    assert (f.kind, f.stream_id, f.code) == ("reset_stream", 8, 77)
    f = decode_ws_frame(bytes((0x05,)) + encode_varint(12) + encode_varint(0))
    assert (f.kind, f.stream_id, f.code) == ("stop_sending", 12, 0)
    f = decode_ws_frame(encode_application_close(263, "grant flood"))
    assert (f.kind, f.code, f.reason) == ("close", 263, "grant flood")


@pytest.mark.parametrize("message,match", [
    (b"", "empty"),
    (b"\x07\x00", "unknown frame type 0x07"),
    (b"\x08", "truncated"),
    (b"\x04\x08", "truncated"),
    (b"\x1d\x00\xff", "UTF-8"),
])
def test_bad_frames_raise_clear_errors(message: bytes, match: str) -> None:
    with pytest.raises(WsFrameError, match=match):
        decode_ws_frame(message)


def test_grant_stream_reader_cuts_records_across_messages() -> None:
    g1 = encode_grant(Grant(1, 10, 0, 50_000))
    g2 = encode_grant(Grant(2, 20, 100, 60_000))
    r = GrantStreamReader()
    assert r.push(g1[:30]) == []
    assert r.pending_bytes == 30
    assert r.push(g1[30:] + g2[:1]) == [g1]
    assert r.push(g2[1:]) == [g2]
    assert r.pending_bytes == 0


# --------------------------------------------------------------------------- server


@asynccontextmanager
async def ws_server(tmp_path: Path, cert: tuple[str, str] | None = None,
                    **cfg: object) -> AsyncIterator[RunningServer]:
    """A server on loopback with /video/seg.m4s (102400 bytes); ``cert``: (cert, key) PEM
    paths for TLS (``wss:``)."""
    content = tmp_path / "content"
    (content / "video").mkdir(parents=True)
    (content / "video" / "seg.m4s").write_bytes(bytes(range(256)) * 400)  # 102400 bytes
    config = SessionConfig(content_root=str(content), log_dir=str(tmp_path / "logs"),
                           **cfg)  # type: ignore[arg-type]
    cert_path, key_path = cert if cert is not None else (None, None)
    server = await start_server(config, host="127.0.0.1", port=0, cert_path=cert_path,
                                key_path=key_path, state_dir=str(tmp_path / "state"), ws_port=0)
    try:
        yield server
    finally:
        server.close()
        await server.ws_server.wait_closed()


async def _read_responses(ws: object, want: set[int]) -> dict[int, list]:  # type: ignore[type-arg]
    """Read STREAM frames until every stream in ``want`` got its FIN."""
    readers = {sid: FrameReader() for sid in want}
    frames: dict[int, list] = {sid: [] for sid in want}  # type: ignore[type-arg]
    open_ids = set(want)
    while open_ids:
        msg = await asyncio.wait_for(ws.recv(), 10)  # type: ignore[attr-defined]
        f = decode_ws_frame(msg)
        assert f.kind == "stream" and f.stream_id in want, f
        frames[f.stream_id] += readers[f.stream_id].feed(f.data)
        if f.fin:
            open_ids.discard(f.stream_id)
    return frames


def test_get_and_bulk_over_websocket_with_grants_on_a_stream(tmp_path: Path) -> None:
    asyncio.run(_get_and_bulk_over_websocket_with_grants_on_a_stream(tmp_path))


async def _get_and_bulk_over_websocket_with_grants_on_a_stream(tmp_path: Path) -> None:
    async with ws_server(tmp_path) as server:
        assert server.ws_port
        url = f"ws://127.0.0.1:{server.ws_port}/nuwa"
        async with connect(url, subprotocols=["webtransport"], max_size=None) as ws:  # type: ignore[list-item]
            assert ws.subprotocol == "webtransport"
            # a grant record split across two messages on the grant stream (id 2)
            grant = encode_grant(Grant(1, 1, 0, 1 << 20))
            await ws.send(encode_stream_frame(GRANT_STREAM_ID, grant[:10], False))
            await ws.send(encode_stream_frame(GRANT_STREAM_ID, grant[10:], False))
            get = json.dumps({"v": 1, "op": "get", "id": 1, "path": "/video/seg.m4s"}).encode()
            bulk = json.dumps({"v": 1, "op": "bulk", "id": 2, "size_bytes": 30_000}).encode()
            await ws.send(encode_stream_frame(0, get[:5], False))
            await ws.send(encode_stream_frame(0, get[5:], True))
            await ws.send(encode_stream_frame(4, bulk, True))
            frames = await _read_responses(ws, {0, 4})
            body = b"".join(f.payload for f in frames[0] if f.header.frame_type == FrameType.DATA)
            assert body == (tmp_path / "content" / "video" / "seg.m4s").read_bytes()
            assert frames[0][0].header.frame_type == FrameType.HEAD
            assert frames[0][-1].header.frame_type == FrameType.END
            bulk_body = b"".join(f.payload for f in frames[4]
                                 if f.header.frame_type == FrameType.DATA)
            assert bulk_body == bytes(i % BULK_PATTERN_PERIOD for i in range(30_000))
            seqs = sorted(f.header.seq for fs in frames.values() for f in fs)
            assert seqs == list(range(len(seqs)))  # one session-wide sequence
        await asyncio.sleep(0.05)
        session = server.context.recent_sessions()[-1]
        assert session.grants.grants_accepted == 1
        assert session.grants.window_bytes == 1 << 20
        assert session.closed


def test_window_obeyed_until_the_next_grant(tmp_path: Path) -> None:
    asyncio.run(_window_obeyed_until_the_next_grant(tmp_path))


async def _window_obeyed_until_the_next_grant(tmp_path: Path) -> None:
    """A 3000-byte grant window: the server stops with ≤ window + one frame outstanding,
    and resumes when a grant reports the bytes received."""
    async with ws_server(tmp_path, grant_timeout_us=10_000_000) as server:
        url = f"ws://127.0.0.1:{server.ws_port}/nuwa"
        async with connect(url, subprotocols=["webtransport"]) as ws:  # type: ignore[list-item]
            await ws.send(encode_stream_frame(GRANT_STREAM_ID,
                                              encode_grant(Grant(1, 1, 0, 3000)), False))
            await asyncio.sleep(0.05)
            bulk = json.dumps({"v": 1, "op": "bulk", "size_bytes": 50_000}).encode()
            await ws.send(encode_stream_frame(0, bulk, True))
            got = 0
            reader = FrameReader()
            with pytest.raises(TimeoutError):
                while True:
                    msg = await asyncio.wait_for(ws.recv(), 0.3)
                    for f in reader.feed(decode_ws_frame(msg).data):
                        got += 20 + len(f.payload)
            assert 0 < got <= 3000 + 1220
            await ws.send(encode_stream_frame(GRANT_STREAM_ID,
                                              encode_grant(Grant(2, 2, got, 1 << 20)), False))
            frames = await _read_responses(ws, {0})
            assert frames[0][-1].header.frame_type == FrameType.END
        await asyncio.sleep(0.05)
        session = server.context.recent_sessions()[-1]
        assert session.grants.grants_accepted == 2
        assert session.grants.grant_violations == 0


def test_grant_flood_closes_the_websocket(tmp_path: Path) -> None:
    asyncio.run(_grant_flood_closes_the_websocket(tmp_path))


async def _grant_flood_closes_the_websocket(tmp_path: Path) -> None:
    async with ws_server(tmp_path) as server:
        url = f"ws://127.0.0.1:{server.ws_port}/nuwa"
        async with connect(url, subprotocols=["webtransport"]) as ws:  # type: ignore[list-item]
            records = b"".join(encode_grant(Grant(i + 1, i, 0, 50_000)) for i in range(600))
            await ws.send(encode_stream_frame(GRANT_STREAM_ID, records, False))
            close = decode_ws_frame(await asyncio.wait_for(ws.recv(), 5))
            assert (close.kind, close.code, close.reason) == ("close", 0x107, "grant flood")
        await asyncio.sleep(0.05)
        assert server.context.recent_sessions()[-1].close_reason == "grant_flood"


def test_bad_frames_and_wrong_path_or_subprotocol(tmp_path: Path) -> None:
    asyncio.run(_bad_frames_and_wrong_path_or_subprotocol(tmp_path))


async def _bad_frames_and_wrong_path_or_subprotocol(tmp_path: Path) -> None:
    async with ws_server(tmp_path) as server:
        base = f"ws://127.0.0.1:{server.ws_port}"
        with pytest.raises(InvalidStatus) as e404:
            async with connect(base + "/other", subprotocols=["webtransport"]):  # type: ignore[list-item]
                pass
        assert e404.value.response.status_code == 404
        with pytest.raises(InvalidStatus) as e400:
            async with connect(base + "/nuwa"):
                pass
        assert e400.value.response.status_code == 400
        async with connect(base + "/nuwa?x=1", subprotocols=["webtransport"]) as ws:  # type: ignore[list-item]
            await ws.send(b"\x07garbage")  # unknown type: logged, session goes on
            await ws.send(encode_stream_frame(0, b"{not json", True))
            frames = await _read_responses(ws, {0})
            assert [f.header.frame_type for f in frames[0]] == [FrameType.ERROR]
            assert json.loads(frames[0][0].payload)["status"] == 400


def test_dual_stack_on_default_host(tmp_path: Path) -> None:
    """``--host ::`` (the default) takes IPv4 and IPv6 clients on the one ws port."""

    async def go() -> list[str]:
        server = await start_server(SessionConfig(), host="::", port=0,
                                    state_dir=str(tmp_path / "state"), ws_port=0)
        got = []
        try:
            for host in ("127.0.0.1", "[::1]"):
                async with connect(f"ws://{host}:{server.ws_port}/nuwa",
                                   subprotocols=["webtransport"]) as ws:  # type: ignore[list-item]
                    got.append(str(ws.subprotocol))
        finally:
            server.close()
            await server.ws_server.wait_closed()
        return got

    assert asyncio.run(go()) == ["webtransport", "webtransport"]


def test_wss_with_cert_and_key(tmp_path: Path) -> None:
    """Production mode (``--cert/--key``): the WebSocket endpoint speaks TLS (``wss:``)
    with that certificate; a client that trusts it connects, a plain ``ws:`` client fails."""
    import ssl

    from nuwa_server.certs import ensure_dev_cert

    info = ensure_dev_cert(tmp_path / "pem")  # a self-signed PEM pair stands in for a real one

    async def go() -> str:
        server = await start_server(SessionConfig(), host="127.0.0.1", port=0,
                                    cert_path=str(info.cert_path), key_path=str(info.key_path),
                                    ws_port=0)
        try:
            ctx = ssl.create_default_context(cafile=str(info.cert_path))
            async with connect(f"wss://127.0.0.1:{server.ws_port}/nuwa", ssl=ctx,
                               subprotocols=["webtransport"]) as ws:  # type: ignore[list-item]
                proto = str(ws.subprotocol)
            with pytest.raises(Exception):  # noqa: B017 - any failure: TLS server, plain client
                async with connect(f"ws://127.0.0.1:{server.ws_port}/nuwa",
                                   subprotocols=["webtransport"], open_timeout=2):  # type: ignore[list-item]
                    pass
            return proto
        finally:
            server.close()
            await server.ws_server.wait_closed()

    assert asyncio.run(go()) == "webtransport"


def test_wss_sends_a_whole_window_without_waiting_for_the_client(tmp_path: Path) -> None:
    """Over TLS the server sends a response through a granted window without the client
    sending anything more. asyncio's TLS transport pauses its writer when its buffer is
    ≥ the high-water mark, so a write limit of 0 paused every ``send()`` until the next
    incoming record (a grant): one frame per grant, about 1 Mbit/s in ``./nuwa serve``'s
    end-to-end test (twenty-fifth session)."""
    import ssl

    from nuwa_server.certs import ensure_dev_cert

    info = ensure_dev_cert(tmp_path / "pem")

    async def go() -> tuple[bytes, float]:
        async with ws_server(tmp_path, (str(info.cert_path), str(info.key_path)),
                             grant_timeout_us=10_000_000) as server:
            ctx = ssl.create_default_context(cafile=str(info.cert_path))
            async with connect(f"wss://127.0.0.1:{server.ws_port}/nuwa", ssl=ctx,
                               subprotocols=["webtransport"],  # type: ignore[list-item]
                               max_size=None) as ws:
                await ws.send(encode_stream_frame(GRANT_STREAM_ID,
                                                  encode_grant(Grant(1, 1, 0, 1 << 20)), False))
                get = json.dumps({"v": 1, "op": "get", "id": 1,
                                  "path": "/video/seg.m4s"}).encode()
                t0 = time.monotonic()
                await ws.send(encode_stream_frame(0, get, True))
                frames = await _read_responses(ws, {0})  # 10 s per message at most
                elapsed_s = time.monotonic() - t0
        got = b"".join(f.payload for f in frames[0] if f.header.frame_type == FrameType.DATA)
        return got, elapsed_s

    got, elapsed_s = asyncio.run(go())
    assert got == (tmp_path / "content" / "video" / "seg.m4s").read_bytes()  # 84 frames
    assert elapsed_s < 2.0, elapsed_s  # 84 frames on loopback: milliseconds when not stalled


def test_a_websocket_opened_during_shutdown_gets_the_reason_at_once(tmp_path: Path) -> None:
    asyncio.run(_opened_during_shutdown(tmp_path))


async def _opened_during_shutdown(tmp_path: Path) -> None:
    """SIGTERM's shutdown (RunningServer.shutdown) ends every session with 1001 "server
    shutting down"; a player that reconnects at once (its reconnect logic) must get the same
    close, not a session that the listener's close ends later with 1001 and no reason (the
    serve e2e test's page read "closed by the server (code 1001)": forty-seventh session).
    Shutdown's first step is the flag set here; the listener stays open meanwhile."""
    from websockets.exceptions import ConnectionClosed

    async with ws_server(tmp_path) as server:
        url = f"ws://127.0.0.1:{server.ws_port}/nuwa"
        sessions_before = len(server.context.recent_sessions())
        server.ws_server.nuwa_closing = True  # as RunningServer.shutdown sets it first
        async with connect(url, subprotocols=["webtransport"]) as again:  # type: ignore[list-item]
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(again.recv(), 5)
            assert closed.value.rcvd is not None
            assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
                1001, "server shutting down")
        assert len(server.context.recent_sessions()) == sessions_before  # no session opened
