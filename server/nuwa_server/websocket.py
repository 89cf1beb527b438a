"""Nuwa protocol v1 over WebSocket, for browsers without WebTransport.

The player falls back to the ``@moq/web-transport-ws`` polyfill, which
carries WebTransport streams over one WebSocket (subprotocol
``webtransport``, the page's ``https:`` URL rewritten to ``wss:``, same
path). Each binary message is one frame: a type byte, then QUIC variable-
length integers (RFC 9000 §16), with QUIC's frame numbers and stream-id
numbering (RFC 9000 §2.1: client bidi ``4n``, client uni ``4n + 2``):

====  =====================  =============================================
type  name                   body
====  =====================  =============================================
0x08  STREAM                 stream id, then the data to the end
0x09  STREAM + FIN           same, and the sender's side of the stream ends
0x04  RESET_STREAM           stream id, error code
0x05  STOP_SENDING           stream id, error code
0x1d  APPLICATION_CLOSE      error code, then a UTF-8 reason to the end
====  =====================  =============================================

The polyfill has no datagrams, so grants (PROTOCOL.md "Grants") travel on
the first client-opened unidirectional stream (id 2) as back-to-back 44-byte
grant records, each handled exactly as a grant datagram (same parser, same
flood guard, same acceptance rules). Requests and responses are unchanged:
one client bidirectional stream per request, the same stamped frames back.

The session logic is :class:`.session.NuwaSession` and the send loop
:func:`.send_loop.pump`, both shared with the QUIC server; this module only
adapts the transport (:class:`WsFrameTransport`). What bounds the sender:

* grants, as over QUIC: ``outstanding + frame ≤ window`` (``--cc nuwa``);
* there is no aioquic congestion window to read, so no ceiling of ours; TCP
  enforces its own (its cwnd and the receiver's window) underneath by
  backpressure: the WebSocket's write limit is 0, so ``send()`` returns only
  once asyncio's buffer is empty (the kernel took every byte), and the next
  frame is stamped after that.
  The kernel's send buffer can still hold bytes TCP has not sent; they show
  up at the receiver as queuing delay, which the controller reacts to.
* in the grant-timeout fallback, "bytes in flight" is the socket's unsent +
  unacknowledged bytes (``TIOCOUTQ``) plus asyncio's write buffer.

Every frame is still stamped just before it is handed to the socket, so
``send_time_us`` means "written to TCP", not "left the host" (a TCP segment
may wait in the kernel for TCP's cwnd).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import struct
import termios
import time
from dataclasses import dataclass
from typing import Any

from .config import GRANT_FLOOD_CLOSE_CODE, WEBTRANSPORT_PATH, now_us
from .context import ServerContext
from .grants import MAX_WINDOW_BYTES
from .send_loop import pump
from .session import NuwaSession

logger = logging.getLogger("nuwa_server.websocket")

WS_SUBPROTOCOL = "webtransport"
"""WebSocket subprotocol the polyfill offers and the server must select."""

FRAME_STREAM = 0x08
FRAME_STREAM_FIN = 0x09
FRAME_RESET_STREAM = 0x04
FRAME_STOP_SENDING = 0x05
FRAME_APPLICATION_CLOSE = 0x1D

GRANT_STREAM_ID = 2
"""The first client-initiated unidirectional stream (RFC 9000 §2.1): the grant stream."""

GRANT_RECORD_BYTES = 44
"""One grant record on the grant stream: the 44-byte grant of PROTOCOL.md "Grants"."""

MAX_WS_MESSAGE_BYTES = 1 << 20
"""Largest message accepted from a client (requests are ≤ 4096 bytes, grants 44)."""

VARINT_MAX = (1 << 62) - 1
"""Largest QUIC variable-length integer (RFC 9000 §16)."""

WS_STREAM_GONE = 0x170D7B68
"""RESET_STREAM code when the session goes away (as over QUIC, session.WT_SESSION_GONE)."""


class WsFrameError(ValueError):
    """A polyfill frame that breaks the framing (truncated, unknown type, bad id)."""


@dataclass(frozen=True, slots=True)
class WsFrame:
    """One decoded polyfill frame. ``kind``: ``stream`` | ``reset_stream`` |
    ``stop_sending`` | ``close``. ``stream_id`` is None for ``close``; ``code``
    is None for ``stream``."""

    kind: str
    stream_id: int | None = None
    data: bytes = b""
    fin: bool = False
    code: int | None = None
    reason: str = ""


def encode_varint(value: int) -> bytes:
    """QUIC variable-length integer (RFC 9000 §16), shortest form.

    Raises:
        ValueError: ``value`` outside 0 .. 2^62 − 1.
    """
    if value < 0 or value > VARINT_MAX:
        raise ValueError(f"varint out of range 0..2^62-1: {value}")
    if value < 1 << 6:
        return bytes((value,))
    if value < 1 << 14:
        return struct.pack("!H", 0x4000 | value)
    if value < 1 << 30:
        return struct.pack("!I", 0x8000_0000 | value)
    return struct.pack("!Q", 0xC000_0000_0000_0000 | value)


def decode_varint(buf: bytes, offset: int) -> tuple[int, int]:
    """Decode a QUIC varint at ``offset`` (RFC 9000 §16); returns (value, next offset).

    Raises:
        WsFrameError: the buffer ends inside the integer.
    """
    if offset >= len(buf):
        raise WsFrameError("frame truncated: varint expected")
    first = buf[offset]
    length = 1 << (first >> 6)
    if offset + length > len(buf):
        raise WsFrameError(f"frame truncated: {length}-byte varint, {len(buf) - offset} left")
    value = first & 0x3F
    for b in buf[offset + 1 : offset + length]:
        value = (value << 8) | b
    return value, offset + length


def decode_ws_frame(message: bytes) -> WsFrame:
    """Decode one polyfill frame (one binary WebSocket message).

    Raises:
        WsFrameError: empty message, unknown type, truncated varint, or a
            reason that is not UTF-8.
    """
    if not message:
        raise WsFrameError("empty frame")
    ftype = message[0]
    if ftype in (FRAME_STREAM, FRAME_STREAM_FIN):
        stream_id, off = decode_varint(message, 1)
        return WsFrame("stream", stream_id, bytes(message[off:]), ftype == FRAME_STREAM_FIN)
    if ftype in (FRAME_RESET_STREAM, FRAME_STOP_SENDING):
        stream_id, off = decode_varint(message, 1)
        code, off = decode_varint(message, off)
        return WsFrame("reset_stream" if ftype == FRAME_RESET_STREAM else "stop_sending",
                       stream_id, code=code)
    if ftype == FRAME_APPLICATION_CLOSE:
        code, off = decode_varint(message, 1)
        try:
            reason = bytes(message[off:]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WsFrameError("close reason is not UTF-8") from exc
        return WsFrame("close", code=code, reason=reason)
    raise WsFrameError(f"unknown frame type 0x{ftype:02x}")


def encode_stream_frame(stream_id: int, data: bytes, fin: bool) -> bytes:
    """STREAM (0x08) or STREAM+FIN (0x09) frame carrying ``data``."""
    return bytes((FRAME_STREAM_FIN if fin else FRAME_STREAM,)) + encode_varint(stream_id) + data


def encode_reset_stream(stream_id: int, code: int) -> bytes:
    """RESET_STREAM (0x04) frame."""
    return bytes((FRAME_RESET_STREAM,)) + encode_varint(stream_id) + encode_varint(code)


def encode_application_close(code: int, reason: str) -> bytes:
    """APPLICATION_CLOSE (0x1d) frame."""
    return bytes((FRAME_APPLICATION_CLOSE,)) + encode_varint(code) + reason.encode("utf-8")


def is_client_bidi(stream_id: int) -> bool:
    """Client-initiated bidirectional stream id (RFC 9000 §2.1: low bits 00)."""
    return stream_id & 0x3 == 0


class GrantStreamReader:
    """Cuts the grant stream's bytes into 44-byte records (a record may span messages)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def push(self, data: bytes) -> list[bytes]:
        """Add stream bytes; return the complete records, in order."""
        self._buf += data
        n = len(self._buf) // GRANT_RECORD_BYTES * GRANT_RECORD_BYTES
        out = [bytes(self._buf[i : i + GRANT_RECORD_BYTES])
               for i in range(0, n, GRANT_RECORD_BYTES)]
        del self._buf[:n]
        return out

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete record held back."""
        return len(self._buf)


def socket_unsent_bytes(sock: socket.socket | None) -> int:
    """Bytes in the socket's send queue, not yet acknowledged (Linux ``TIOCOUTQ``); 0 if unknown."""
    if sock is None:
        return 0
    try:
        buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        return int(struct.unpack("i", buf)[0])
    except OSError:
        return 0


class WsNuwaConnection:
    """One WebSocket connection = one Nuwa session (:class:`.session.NuwaSession`).

    ``ws`` is a ``websockets.asyncio.server.ServerConnection``. :meth:`run`
    returns when the connection closes; the session is closed then.
    """

    def __init__(self, ws: Any, context: ServerContext, index: int) -> None:
        self._ws = ws
        self._context = context
        self._config = context.config
        name = (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                + f"-ws{index}-{os.getpid()}")
        self.session = NuwaSession(0, name, self._config, context.content_root, now_us())
        self.session.log.event("transport", kind="websocket", grant_stream_id=GRANT_STREAM_ID)
        if context.oracle_window_bytes is not None:
            self.session.grants.set_window(context.oracle_window_bytes)
        context.add_session(self.session)
        self._grant_reader = GrantStreamReader()
        self._frames = WsFrameTransport(ws)
        self._kick = asyncio.Event()
        self.grant_records = 0
        self.bad_frames = 0
        if context.on_session is not None:
            context.on_session(self.session)
        logger.info("session %s opened over websocket (cc=%s)", name, self._config.cc)

    async def run(self) -> None:
        """Serve until the client or the server closes the WebSocket."""
        pump = asyncio.create_task(self._pump())
        reason = "client_closed"
        try:
            async for message in self._ws:
                if isinstance(message, str):
                    self.bad_frames += 1
                    continue
                if not self._on_message(message):
                    reason = "grant_flood"
                    break
        except Exception as exc:  # noqa: BLE001 - connection lost: end the session
            reason = f"connection_lost:{type(exc).__name__}"
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            if reason == "grant_flood":
                with contextlib.suppress(Exception):
                    await self._ws.send(encode_application_close(GRANT_FLOOD_CLOSE_CODE,
                                                                 "grant flood"))
                    await self._ws.close(1008, "grant flood")
            for stream_id in self.session.close(reason):
                with contextlib.suppress(Exception):
                    await self._ws.send(encode_reset_stream(stream_id, WS_STREAM_GONE))

    def _on_message(self, message: bytes) -> bool:
        """Handle one frame; returns False when the session must close (flood)."""
        try:
            frame = decode_ws_frame(message)
        except WsFrameError as exc:
            self.bad_frames += 1
            self.session.log.event("bad_ws_frame", error=str(exc), size_bytes=len(message))
            logger.info("session %s: bad websocket frame: %s", self.session.name, exc)
            return True
        session = self.session
        if frame.kind == "stream":
            assert frame.stream_id is not None
            if frame.stream_id == GRANT_STREAM_ID:
                for record in self._grant_reader.push(frame.data):
                    self.grant_records += 1
                    session.on_datagram(record)
                    if session.flooded:
                        return False
            elif is_client_bidi(frame.stream_id):
                session.on_stream_data(frame.stream_id, frame.data, frame.fin)
            else:
                self.bad_frames += 1  # other uni streams, or server-numbered ids: ignored
                return True
        elif frame.kind in ("reset_stream", "stop_sending"):
            assert frame.stream_id is not None
            stream = session.streams.get(frame.stream_id)
            if stream is not None and (frame.kind == "stop_sending" or not stream.responding):
                session.on_stream_abort(frame.stream_id, f"{frame.kind}:{frame.code}")
        else:  # close
            session.log.event("client_close", code=frame.code, reason=frame.reason)
        self._kick.set()
        return True

    async def _pump(self) -> None:
        """Run the send loop (:func:`.send_loop.pump`) and await each frame's send: the loop
        writes one frame, the WebSocket sends it (``send()`` returns once the kernel took every
        byte, module doc), then the loop runs again; a session its grant holds waits for the
        next message or its next grant-timeout step."""
        session = self.session
        frames = self._frames
        payload_bytes = self._config.frame_payload_bytes
        while not session.closed:
            if not session.active:
                self._kick.clear()
                await self._kick.wait()
                continue
            result = pump((session,), frames, payload_bytes)
            message = frames.take_message()
            if message is not None:
                try:
                    await self._ws.send(message)
                except Exception as exc:  # noqa: BLE001 - connection gone: run() ends the session
                    logger.info("session %s: send failed (%s)", session.name, exc)
                    return
            elif result.grant_blocked:
                await self._wait_grant(result.grant_wake_us)

    async def _wait_grant(self, wake_us: int | None) -> None:
        """Blocked by the grant: wait for the next message or the grant-timeout step at
        ``wake_us`` (CLOCK_MONOTONIC µs; None: 50 ms)."""
        self._kick.clear()
        timeout_s = 0.05 if wake_us is None else max(0.0005, (wake_us - now_us()) / 1e6)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._kick.wait(), timeout_s)


class WsFrameTransport:
    """The send loop's view of one WebSocket (:class:`.send_loop.FrameTransport`).

    No congestion window of ours: TCP bounds the sender by backpressure, so the ceiling is
    :data:`.grants.MAX_WINDOW_BYTES` and a frame may always go once the one before it was
    sent. :meth:`write` keeps the polyfill STREAM frame for the connection to send
    (``await send()``) and asks the loop to stop until then. Bytes in flight are the
    socket's unsent + unacknowledged bytes (``TIOCOUTQ``) plus asyncio's write buffer.
    """

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._message: bytes | None = None

    def can_send(self, frame_bytes: int) -> bool:
        """Whether the frame written before was sent (only one waits at a time)."""
        return self._message is None

    def bytes_in_flight(self) -> int:
        """asyncio's write buffer + the kernel's unacknowledged bytes, bytes."""
        transport = self._ws.transport
        sock = transport.get_extra_info("socket")
        return int(transport.get_write_buffer_size()) + socket_unsent_bytes(sock)

    def ceiling_bytes(self) -> int:
        """No ceiling of ours over TCP: :data:`.grants.MAX_WINDOW_BYTES`."""
        return MAX_WINDOW_BYTES

    def pacer_wait(self) -> float | None:
        """No pacer of ours over TCP."""
        return None

    def window_limited(self) -> None:
        """No ceiling to tell."""

    def write(self, stream_id: int, data: bytes, fin: bool) -> bool:
        """Keep the frame as one STREAM (or STREAM + FIN) message; the loop stops so the
        connection sends it at once."""
        self._message = encode_stream_frame(stream_id, data, fin)
        return False

    def take_message(self) -> bytes | None:
        """The message :meth:`write` kept (None if none), handed over once."""
        message, self._message = self._message, None
        return message


async def start_ws_server(context: ServerContext, host: str, port: int,
                          ssl_context: Any = None) -> Any:
    """Listen for polyfill WebSocket sessions on TCP ``host:port`` (0: any free port).

    Only ``GET /nuwa`` (any query) with subprotocol ``webtransport`` is
    accepted; another path gets 404, a missing subprotocol 400. Returns the
    ``websockets`` Server (``.sockets[0].getsockname()[1]`` is the port;
    ``close()`` + ``await wait_closed()`` stops it).

    Raises:
        OSError: the port cannot be bound.
    """
    from websockets.asyncio.server import serve
    from websockets.http11 import Response

    counter = {"n": 0}

    def process_request(connection: Any, request: Any) -> Response | None:
        if request.path.split("?", 1)[0] != WEBTRANSPORT_PATH:
            return connection.respond(404, "not found\n")  # type: ignore[no-any-return]
        offered = request.headers.get("Sec-WebSocket-Protocol", "")
        if WS_SUBPROTOCOL not in [p.strip() for p in offered.split(",")]:
            return connection.respond(  # type: ignore[no-any-return]
                400, f"subprotocol {WS_SUBPROTOCOL!r} required\n")
        return None

    async def handler(ws: Any) -> None:
        counter["n"] += 1
        with contextlib.suppress(OSError):
            sock = ws.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = WsNuwaConnection(ws, context, counter["n"])
        await conn.run()

    # asyncio binds "::" IPv6-only (IPV6_V6ONLY): bind a dual-stack socket ourselves.
    where: dict[str, Any] = {"host": host, "port": port}
    if host == "::":
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", port))
        where = {"sock": sock}
    return await serve(
        handler, **where,
        subprotocols=[WS_SUBPROTOCOL],  # type: ignore[list-item]
        process_request=process_request,
        compression=None,
        max_size=MAX_WS_MESSAGE_BYTES,
        ping_interval=None,
        write_limit=0,  # send() returns once the kernel took every byte (module doc)
        ssl=ssl_context,
    )
