"""Nuwa protocol v1 over WebSocket, for browsers without WebTransport.

The player falls back to the ``@moq/web-transport-ws`` polyfill, which
carries WebTransport streams over one WebSocket (subprotocol
``webtransport``, the page's ``https:`` URL rewritten to ``wss:``, same
path); its framing and the grant stream are :mod:`.ws_framing`.

The session logic is :class:`.session.NuwaSession` and the send loop
:func:`.send_loop.pump`, both shared with the QUIC server; this module only
adapts the transport (:class:`WsFrameTransport`). What bounds the sender:

* grants, as over QUIC: ``outstanding + frame ≤ window`` (``--cc nuwa``);
* there is no aioquic congestion window to read, so no ceiling of ours; TCP
  enforces its own (its cwnd and the receiver's window) underneath by
  backpressure: the WebSocket's write limit is 1 byte, so ``send()`` returns
  only once asyncio's buffer is empty (the kernel took every byte; over TLS,
  once the record was handed to the TCP transport, whose own buffer holds up
  to 64 KiB before TLS stops flushing), and the next frame is stamped after
  that. (A limit of 0 stalled TLS sessions: asyncio's TLS transport pauses
  the writer at size ≥ high, so every ``send()`` waited for the next incoming
  record, one frame per grant.)
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
from typing import Any

from .config import GRANT_FLOOD_CLOSE_CODE, WEBTRANSPORT_PATH, now_us
from .context import ServerContext
from .grants import MAX_WINDOW_BYTES
from .send_loop import pump
from .session import NuwaSession
from .ws_framing import (
    GRANT_STREAM_ID,
    GrantStreamReader,
    WsFrameError,
    decode_ws_frame,
    encode_application_close,
    encode_reset_stream,
    encode_stream_frame,
    is_client_bidi,
)

logger = logging.getLogger("nuwa_server.websocket")

WS_SUBPROTOCOL = "webtransport"
"""WebSocket subprotocol the polyfill offers and the server must select."""

MAX_WS_MESSAGE_BYTES = 1 << 20
"""Largest message accepted from a client (requests are ≤ 4096 bytes, grants 44)."""

WS_STREAM_GONE = 0x170D7B68
"""RESET_STREAM code when the session goes away (as over QUIC, session.WT_SESSION_GONE)."""


def socket_unsent_bytes(sock: socket.socket | None) -> int:
    """Bytes in the socket's send queue, not yet acknowledged (Linux ``TIOCOUTQ``); 0 if unknown."""
    if sock is None:
        return 0
    try:
        buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        return int(struct.unpack("i", buf)[0])
    except OSError:
        return 0


# s: a session's close on SIGTERM may take this long (a slow reader), twice over at most
SHUTDOWN_GRACE_S = 4.0


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
        self.shutting_down = False
        if context.on_session is not None:
            context.on_session(self.session)
        logger.info("session %s opened over websocket (cc=%s)", name, self._config.cc)

    async def run(self) -> None:
        """Serve until the client or the server closes the WebSocket."""
        pump = asyncio.create_task(self._pump())
        reason = "client_closed"
        self._run_task = asyncio.current_task()
        try:
            async for message in self._ws:
                if isinstance(message, str):
                    self.bad_frames += 1
                    continue
                if not self._on_message(message):
                    reason = "grant_flood"
                    break
        except asyncio.CancelledError:
            if not self.shutting_down:
                raise
        except Exception as exc:  # noqa: BLE001 - connection lost: end the session
            reason = f"connection_lost:{type(exc).__name__}"
        finally:
            if self.shutting_down:
                reason = "server_shutdown"
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            if reason == "grant_flood":
                with contextlib.suppress(Exception):
                    await self._ws.send(encode_application_close(GRANT_FLOOD_CLOSE_CODE,
                                                                 "grant flood"))
                    await self._ws.close(1008, "grant flood")
            gone = self.session.close(reason)
            # On server shutdown the close frame is already queued (shutdown()) and ends every
            # stream: no RESET_STREAM per open stream goes ahead of it.
            if reason != "server_shutdown":
                for stream_id in gone:
                    with contextlib.suppress(Exception):
                        await self._ws.send(encode_reset_stream(stream_id, WS_STREAM_GONE))

    async def shutdown(self) -> None:
        """Server shutdown: end the session as ``server_shutdown`` and close the WebSocket
        with 1001 (going away, RFC 6455 §7.4.1) and the reason "server shutting down", the
        QUIC path's capsule text."""
        self.shutting_down = True
        # The close frame carries the reason: the polyfill resolves `closed` with the WebSocket's
        # code and reason (an APPLICATION_CLOSE frame's reason it keeps only for failing
        # streams). It is queued first, before the run task is cancelled: sent from the run
        # task's cleanup, behind the pump's cancellation and the session's close, it was still
        # waiting on a loaded host (CI beside the other e2e tests: exit 4.4 s after SIGTERM) when
        # Server.close sent its own 1001 without a reason ("closed by the server (code 1001)").
        # Frames are written whole, so it goes out behind at most the frame being written.
        closing = asyncio.ensure_future(self._ws.close(1001, "server shutting down"))
        task = getattr(self, "_run_task", None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), SHUTDOWN_GRACE_S)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(closing), SHUTDOWN_GRACE_S)

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
    live: set[WsNuwaConnection] = set()

    def process_request(connection: Any, request: Any) -> Response | None:
        if request.path.split("?", 1)[0] != WEBTRANSPORT_PATH:
            return connection.respond(404, "not found\n")  # type: ignore[no-any-return]
        offered = request.headers.get("Sec-WebSocket-Protocol", "")
        if WS_SUBPROTOCOL not in [p.strip() for p in offered.split(",")]:
            return connection.respond(  # type: ignore[no-any-return]
                400, f"subprotocol {WS_SUBPROTOCOL!r} required\n")
        return None

    async def handler(ws: Any) -> None:
        if getattr(server, "nuwa_closing", False):
            # SIGTERM began: a player that reconnects after our close frame (its reconnect
            # logic, issue 7) gets the same reason at once, not a session that the listener's
            # own close later ends with 1001 and no reason (the serve e2e test, forty-seventh
            # session: the page's second session read "closed by the server (code 1001)")
            with contextlib.suppress(Exception):
                await ws.close(1001, "server shutting down")
            return
        counter["n"] += 1
        with contextlib.suppress(OSError):
            sock = ws.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = WsNuwaConnection(ws, context, counter["n"])
        live.add(conn)
        try:
            await conn.run()
        finally:
            live.discard(conn)

    # asyncio binds "::" IPv6-only (IPV6_V6ONLY): bind a dual-stack socket ourselves.
    where: dict[str, Any] = {"host": host, "port": port}
    if host == "::":
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", port))
        where = {"sock": sock}
    server = await serve(
        handler, **where,
        subprotocols=[WS_SUBPROTOCOL],  # type: ignore[list-item]
        process_request=process_request,
        compression=None,
        max_size=MAX_WS_MESSAGE_BYTES,
        ping_interval=None,
        # A peer that does not answer our close frame (RFC 6455 §7.1.1) is dropped after 2 s, not
        # websockets' 10 s: under SIGTERM the process then exits within a supervisor's grace (the
        # serve e2e test on a loaded host saw a server not gone 10 s after its sessions closed).
        close_timeout=2.0,
        # send() returns once asyncio's buffer is empty (module doc). Not 0: asyncio's TLS
        # transport pauses its writer at size >= high (sslproto._control_app_writing), so a
        # high-water mark of 0 paused after every send() until the next incoming record.
        write_limit=1,
        ssl=ssl_context,
    )
    server.nuwa_connections = live  # type: ignore[attr-defined]  # for RunningServer.shutdown
    server.nuwa_closing = False  # type: ignore[attr-defined]  # set by RunningServer.shutdown
    return server
