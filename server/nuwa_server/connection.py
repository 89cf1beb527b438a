"""The QUIC side: an aioquic connection protocol serving WebTransport sessions.

WebTransport (draft-ietf-webtrans-http3-02, as Chromium speaks it): extended
CONNECT (RFC 9220) with ``:protocol webtransport`` on ``/nuwa`` gets
``:status 200`` and ``sec-webtransport-http3-draft: draft02``; other paths
get 404. Grants arrive as HTTP datagrams (RFC 9297 §2.1, quarter stream id
+ payload) on the session.

Sending discipline (docs/DESIGN.md §2 step 3, PROTOCOL.md "Responses"): a frame is
handed to QUIC only when it can leave at once, so its ``send_time_us`` is its
departure time:

* transport: QUIC ``bytes_in_flight`` + bytes already queued unsent in any
  stream buffer + this frame (+ packet overhead) fit in the congestion window
  (RFC 9002 §7), and the pacer (aioquic's, RFC 9002 §7.7) has a packet's
  budget; each frame is then flushed to the socket on its own before the
  next is considered, so it rides in its own packet;
* grants (``--cc nuwa``): outstanding + frame ≤ min(grant window, ceiling),
  see :mod:`.grants`.

ACK-only packets raise no QUIC event, so the sender is pumped from
``transmit()``, which aioquic calls after every received datagram and
every timer (docs/DESIGN.md §8 "aioquic"). Streams of a session are served round
robin, one frame at a time.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from aioquic.asyncio.protocol import QuicConnectionProtocol, QuicStreamHandler
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import (
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.connection import QuicConnection, stream_is_unidirectional
from aioquic.quic.events import (
    ConnectionTerminated,
    ProtocolNegotiated,
    QuicEvent,
    StopSendingReceived,
    StreamReset,
)

from .ceiling import NuwaCeilingCongestionControl
from .config import GRANT_FLOOD_CLOSE_CODE, PACKET_OVERHEAD_BYTES, WEBTRANSPORT_PATH, now_us
from .context import ServerContext
from .grants import FloodGuard, WriteBudget
from .protocol import FRAME_HEADER_BYTES, FrameType, encode_frame_header
from .session import NuwaSession
from .streams import ResponseStream

logger = logging.getLogger("nuwa_server.connection")

WT_SESSION_GONE = 0x170D7B68
"""Stream reset code when the session goes away (draft-ietf-webtrans-http3 §9.5)."""

CLOSE_WEBTRANSPORT_SESSION_CAPSULE = 0x2843
"""Capsule type (draft-ietf-webtrans-http3-02 §5, RFC 9297 §3.2): u32 code + UTF-8 reason."""

MAX_SESSIONS_PER_CONNECTION = 4
"""Open WebTransport sessions one QUIC connection may hold; a CONNECT beyond it is refused
with :data:`TOO_MANY_SESSIONS_STATUS` (the player holds one at a time: SessionManager)."""

TOO_MANY_SESSIONS_STATUS = 429
"""HTTP status of a CONNECT refused for :data:`MAX_SESSIONS_PER_CONNECTION` (RFC 6585 §4)."""

FLOOD_CONNECTION_CLOSE_DELAY_S = 0.2
"""After a flood, the QUIC connection is closed this long after the session's close
capsule, so the capsule can arrive first."""


class NuwaProtocol(QuicConnectionProtocol):
    """aioquic connection protocol: HTTP/3 + WebTransport + the Nuwa sender."""

    def __init__(
        self,
        quic: QuicConnection,
        stream_handler: QuicStreamHandler | None = None,
        *,
        context: ServerContext,
    ) -> None:
        super().__init__(quic, stream_handler)
        self._context = context
        self._config = context.config
        context.connections += 1
        context.protocols.append(self)
        self._conn_index = context.connections
        self._h3: H3Connection | None = None
        self._sessions: dict[int, NuwaSession] = {}
        self._wake_at: float | None = None
        self._wake_handle: Any = None
        self._pumping = False
        self._flood = FloodGuard()
        """Datagrams of all this connection's sessions together (issue 13: opening more
        sessions must not multiply a connection's grant budget)."""
        self.flooded = False

    def peer_port(self) -> int | None:
        """UDP port of the peer (the emulator's socket for one client), None before a path."""
        paths = self._quic._network_paths
        return int(paths[0].addr[1]) if paths else None

    def open_sessions(self) -> list[NuwaSession]:
        """This connection's sessions that are not closed."""
        return [s for s in self._sessions.values() if not s.closed]

    # ------------------------------------------------------------------ events

    def quic_event_received(self, event: QuicEvent) -> None:
        """Route QUIC events to HTTP/3 and the sessions; never raises on peer input."""
        if isinstance(event, ProtocolNegotiated):
            if event.alpn_protocol in H3_ALPN:
                self._h3 = H3Connection(self._quic, enable_webtransport=True)
        elif isinstance(event, ConnectionTerminated):
            for session in list(self._sessions.values()):
                session.close(f"connection_terminated:{event.error_code}:{event.reason_phrase}")
            self._sessions.clear()
            self._cancel_wake()
            if self in self._context.protocols:
                self._context.protocols.remove(self)
        if self._h3 is not None:
            for h3_event in self._h3.handle_event(event):
                self._h3_event_received(h3_event)
        if isinstance(event, StopSendingReceived | StreamReset):
            self._on_stream_stopped(event)

    def _on_stream_stopped(self, event: StopSendingReceived | StreamReset) -> None:
        why = "stop_sending" if isinstance(event, StopSendingReceived) else "reset"
        session = self._sessions.get(event.stream_id)
        if session is not None and isinstance(event, StreamReset):
            self._close_session(session, "connect_stream_reset")
            return
        for session in self._sessions.values():
            if event.stream_id in session.streams:
                stream = session.streams[event.stream_id]
                # A reset of the client's half after its request is complete
                # changes nothing; STOP_SENDING means it wants no more.
                if why == "stop_sending" or not stream.responding:
                    session.on_stream_abort(event.stream_id, f"{why}:{event.error_code}")
                return

    def _h3_event_received(self, event: H3Event) -> None:
        assert self._h3 is not None
        if isinstance(event, HeadersReceived):
            self._on_headers(event)
        elif isinstance(event, WebTransportStreamDataReceived):
            session = self._sessions.get(event.session_id)
            if session is None or stream_is_unidirectional(event.stream_id):
                self._refuse_stream(event.stream_id)
                return
            session.on_stream_data(event.stream_id, event.data, event.stream_ended)
        elif isinstance(event, DatagramReceived):
            connection_ok = self._flood.take(now_us())
            session = self._sessions.get(event.stream_id)
            if session is not None:
                session.on_datagram(event.data, connection_flooded=not connection_ok)
                if session.flooded:
                    self._close_for_flood(session)
            elif not connection_ok and not self.flooded:
                self._close_for_flood(None)
        elif isinstance(event, DataReceived):
            session = self._sessions.get(event.stream_id)
            if session is not None and event.stream_ended:
                # The client ended the CONNECT stream (possibly after a
                # CLOSE_WEBTRANSPORT_SESSION capsule): the session is over.
                self._close_session(session, "client_closed")

    def _on_headers(self, event: HeadersReceived) -> None:
        assert self._h3 is not None
        headers = dict(event.headers)
        method = headers.get(b":method")
        protocol = headers.get(b":protocol")
        path = headers.get(b":path", b"").split(b"?", 1)[0].decode("utf-8", "replace")
        if (method == b"CONNECT" and protocol == b"webtransport" and path == WEBTRANSPORT_PATH
                and len(self._sessions) >= MAX_SESSIONS_PER_CONNECTION):
            self._context.sessions_refused += 1
            logger.warning("connection %d: CONNECT refused with %d: %d sessions open, at most "
                           "%d per connection", self._conn_index, TOO_MANY_SESSIONS_STATUS,
                           len(self._sessions), MAX_SESSIONS_PER_CONNECTION)
            self._h3.send_headers(event.stream_id, [(b":status", str(TOO_MANY_SESSIONS_STATUS)
                                                     .encode())], end_stream=True)
        elif method == b"CONNECT" and protocol == b"webtransport" and path == WEBTRANSPORT_PATH:
            self._h3.send_headers(
                event.stream_id,
                [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")],
            )
            start = now_us()
            name = (
                time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                + f"-c{self._conn_index}-s{event.stream_id}-{os.getpid()}"
            )
            session = NuwaSession(event.stream_id, name, self._config,
                                  self._context.content_root, start)
            if self._context.oracle_window_bytes is not None:
                session.grants.set_window(self._context.oracle_window_bytes)
            self._sessions[event.stream_id] = session
            self._context.add_session(session)
            logger.info("session %s opened (cc=%s)", name, self._config.cc)
            if self._context.on_session is not None:
                self._context.on_session(session)
        else:
            self._h3.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)

    def _refuse_stream(self, stream_id: int) -> None:
        try:
            self._quic.stop_stream(stream_id, WT_SESSION_GONE)
            if not stream_is_unidirectional(stream_id):
                self._quic.reset_stream(stream_id, WT_SESSION_GONE)
        except Exception:  # noqa: BLE001 - a dead stream is not worth a crash
            logger.debug("could not refuse stream %d", stream_id, exc_info=True)

    def _close_session(self, session: NuwaSession, reason: str) -> None:
        for stream_id in session.close(reason):
            try:
                self._quic.reset_stream(stream_id, WT_SESSION_GONE)
            except Exception:  # noqa: BLE001
                logger.debug("could not reset stream %d", stream_id, exc_info=True)
        self._sessions.pop(session.session_id, None)
        if self._h3 is not None:
            try:
                self._h3.send_data(session.session_id, b"", end_stream=True)
            except Exception:  # noqa: BLE001 - the stream may already be closed
                logger.debug("could not end CONNECT stream", exc_info=True)

    def _close_for_flood(self, session: NuwaSession | None) -> None:
        """Close a flooding client: every session of the connection with a
        CLOSE_WEBTRANSPORT_SESSION capsule (code :data:`GRANT_FLOOD_CLOSE_CODE`, reason
        "grant flood"), then the QUIC connection with the same application error code.
        ``session`` is the one whose datagram tripped a guard (None: a datagram for no
        session tripped the connection's guard); it closes as ``grant_flood``, the
        others as ``connection_grant_flood``."""
        if self.flooded:
            return
        self.flooded = True
        reason = b"grant flood"
        payload = GRANT_FLOOD_CLOSE_CODE.to_bytes(4, "big") + reason
        capsule = encode_uint_var(CLOSE_WEBTRANSPORT_SESSION_CAPSULE) + encode_uint_var(
            len(payload)) + payload
        others = [s for s in self._sessions.values() if s is not session]
        for s in [session, *others] if session is not None else others:
            if self._h3 is not None:
                try:
                    self._h3.send_data(s.session_id, capsule, end_stream=False)
                except Exception:  # noqa: BLE001 - the stream may already be closed
                    logger.debug("could not send the close capsule", exc_info=True)
            self._close_session(s, "grant_flood" if s is session else "connection_grant_flood")
        self.transmit()
        self._loop.call_later(FLOOD_CONNECTION_CLOSE_DELAY_S, self._close_connection_for_flood)

    def _close_connection_for_flood(self) -> None:
        self._quic.close(error_code=GRANT_FLOOD_CLOSE_CODE, reason_phrase="grant flood")
        self.transmit()

    def close_all(self, reason: str) -> None:
        """Close every session (server shutdown) and the connection."""
        for session in list(self._sessions.values()):
            self._close_session(session, reason)
        self.close()

    # ------------------------------------------------------------------ sending

    def transmit(self) -> None:
        """Write the frames that can leave now, then let aioquic send (see module doc)."""
        if not self._pumping:
            self._pumping = True
            try:
                self._pump()
            except Exception:  # noqa: BLE001 - never let the sender kill the connection
                logger.exception("pump failed")
            finally:
                self._pumping = False
        super().transmit()
        if self._sessions:
            # Departure check: frame bytes never sent after this transmit() (held
            # by cwnd, pacing or flow control) were stamped before departure.
            # Retransmissions are counted apart: their frames' stamps are old by
            # nature (RFC 9002 §6 loss recovery).
            new_bytes = self._unsent_new_bytes()
            retransmit = new_bytes == 0 and self._unsent_bytes() > 0
            if new_bytes or retransmit:
                for session in self._sessions.values():
                    stats = session.departure
                    if new_bytes:
                        stats.transmits_with_unsent_new_bytes += 1
                        stats.max_unsent_new_bytes = max(stats.max_unsent_new_bytes, new_bytes)
                    else:
                        stats.transmits_with_retransmit_backlog += 1

    def _unsent_new_bytes(self) -> int:
        """Stream bytes queued in aioquic and never sent yet (no retransmissions)."""
        total = 0
        for stream in self._quic._streams.values():
            sender = stream.sender
            if not sender.buffer_is_empty:
                total += sender._buffer_stop - sender.highest_offset
        return total

    def _unsent_bytes(self) -> int:
        """Stream bytes queued in aioquic but not yet sent (incl. retransmissions)."""
        total = 0
        for stream in self._quic._streams.values():
            sender = stream.sender
            if not sender.buffer_is_empty:
                for r in sender._pending:
                    total += r.stop - r.start
        return total

    def _pump(self) -> None:
        """Write frames while the connection can send them at once (module doc).

        Each frame is handed to aioquic and flushed to the socket before the
        next is considered, so it travels in its own packet(s) and its stamp
        precedes its departure by the time to build the packet. Stops at the
        first frame that would not leave now: congestion window, pacer,
        bytes still queued from before (flow control, retransmissions), or
        every session's grant. ACKs, grants and timers call transmit() again.
        """
        sessions = [s for s in self._sessions.values() if s.active]
        if not sessions:
            return
        loss = self._quic._loss
        pacer = loss._pacer
        payload_bytes = self._config.frame_payload_bytes
        queued = self._unsent_bytes()
        ceiling_cc = isinstance(loss._cc, NuwaCeilingCongestionControl)
        blocked: set[int] = set()
        while len(blocked) < len(sessions):
            progressed = False
            for session in sessions:
                if session.session_id in blocked:
                    continue
                if not session.active:
                    blocked.add(session.session_id)
                    continue
                stream = session.active[0]
                peeked = stream.peek(payload_bytes)
                if peeked is None:
                    session.active.popleft()
                    continue
                ftype, payload, fin = peeked
                frame_bytes = FRAME_HEADER_BYTES + len(payload)
                cwnd = loss.congestion_window
                bytes_in_flight = loss.bytes_in_flight
                # transport: RFC 9002 §7 window, nothing queued ahead of us
                if queued or bytes_in_flight + frame_bytes + PACKET_OVERHEAD_BYTES > cwnd:
                    return
                t_us = now_us()
                level = session.grants.poll_fallback(t_us)
                if level is not None:
                    self._log_fallback(session, level, t_us)
                budget = session.grants.budget(t_us, bytes_in_flight)
                if not budget.allows(frame_bytes, cwnd):
                    window = budget.window_bytes
                    if ceiling_cc and window is not None and budget.allows(frame_bytes, window):
                        # the grant allows it, the ceiling does not: the window is in use
                        loss._cc.on_window_limited()  # type: ignore[attr-defined]
                    blocked.add(session.session_id)
                    self._wake_for_timeout(session, t_us)
                    continue
                # aioquic's pacer (RFC 9002 §7.7): a packet may leave while its bucket > 0
                if pacer.packet_time is not None:
                    loop_now = self._loop.time()
                    pacer.update_bucket(now=loop_now)
                    if pacer.bucket_time <= 0:
                        # the grant allows this frame: the window is in use (RFC 9002 §7.8)
                        if ceiling_cc:
                            loss._cc.on_window_limited()  # type: ignore[attr-defined]
                        self._wake(loop_now + pacer.packet_time)
                        return
                self._write_frame(session, stream, ftype, payload, fin, budget, cwnd,
                                  bytes_in_flight)
                for data, addr in self._quic.datagrams_to_send(now=self._loop.time()):
                    self._transport.sendto(data, addr)  # type: ignore[union-attr]
                queued = self._unsent_bytes()
                progressed = True
                session.active.rotate(-1)
                if stream.done:
                    session.stream_finished(stream)
            if not progressed:
                break

    def _write_frame(
        self,
        session: NuwaSession,
        stream: ResponseStream,
        ftype: FrameType,
        payload: bytes,
        fin: bool,
        budget: WriteBudget,
        ceiling_bytes: int,
        bytes_in_flight: int,
    ) -> None:
        seq = session.take_seq()
        send_time_us = now_us()
        data = encode_frame_header(ftype, seq, send_time_us, len(payload)) + payload
        try:
            self._quic.send_stream_data(stream.stream_id, data, end_stream=fin)
        except Exception as exc:  # noqa: BLE001 - stream gone under us (reset, stop)
            logger.info("session %s: stream %d not writable (%s)", session.name,
                        stream.stream_id, exc)
            session.on_stream_abort(stream.stream_id, f"write_failed:{exc}")
            return
        stream.commit()
        outstanding = session.grants.on_frame_written(len(data), budget)
        session.log.frame(seq, stream.stream_id, ftype, len(data), send_time_us, outstanding,
                          budget.window_bytes, ceiling_bytes, bytes_in_flight)

    def _log_fallback(self, session: NuwaSession, level: int, t_us: int) -> None:
        budget = session.grants.budget(t_us, 0)
        logger.info("session %s: grant timeout, fallback level %d, window %s bytes",
                    session.name, level, budget.window_bytes)
        session.log.event("grant_fallback", level=level, window_bytes=budget.window_bytes,
                          last_grant_seq=session.grants.last_grant_seq)

    def _wake_for_timeout(self, session: NuwaSession, t_us: int) -> None:
        """Blocked by the grant: wake at the next grant-timeout boundary."""
        g = session.grants
        if not g.config.enforce:
            return
        since = g.last_grant_time_us if g.last_grant_time_us is not None else g.start_time_us
        level = g.fallback_level(t_us)
        self._wake((since + (level + 1) * g.config.grant_timeout_us) / 1e6)

    def _wake(self, at: float) -> None:
        """Call transmit() at loop time ``at`` (s, CLOCK_MONOTONIC), keeping the earliest."""
        if self._wake_at is not None and self._wake_at <= at:
            return
        self._cancel_wake()
        self._wake_at = at
        self._wake_handle = self._loop.call_at(at, self._on_wake)

    def _on_wake(self) -> None:
        self._wake_at = None
        self._wake_handle = None
        self.transmit()

    def _cancel_wake(self) -> None:
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle = None
        self._wake_at = None
