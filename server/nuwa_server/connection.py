"""The QUIC side: an aioquic connection protocol serving WebTransport sessions.

WebTransport (draft-ietf-webtrans-http3-02, as Chromium speaks it): extended
CONNECT (RFC 9220) with ``:protocol webtransport`` on ``/nuwa`` gets
``:status 200`` and ``sec-webtransport-http3-draft: draft02``; other paths
get 404. Grants arrive as HTTP datagrams (RFC 9297 §2.1, quarter stream id
+ payload) on the session.

Frames leave through the one send loop (:mod:`.send_loop`, which states the
sending discipline); :class:`QuicFrameTransport` is its view of the connection:
aioquic's congestion window, bytes in flight, pacer and stream writes.

ACK-only packets raise no QUIC event, so the sender is pumped from
``transmit()``, which aioquic calls after every received datagram and
every timer (docs/DESIGN.md §8 "aioquic").
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
import urllib.parse
from pathlib import Path
from typing import Any

from aioquic import tls
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
    HandshakeCompleted,
    ProtocolNegotiated,
    QuicEvent,
    StopSendingReceived,
    StreamReset,
)

from .cc.pacing import install_controller_pacer
from .cc.pbq import PbqCongestionControl
from .cc.pbq_agent import PbqAgent, load_policy
from .cc.switching import switch_controller
from .ceiling import NuwaCeilingCongestionControl
from .config import (
    GRANT_FLOOD_CLOSE_CODE,
    PACKET_OVERHEAD_BYTES,
    SESSION_SCHEMES,
    SHUTDOWN_CLOSE_CODE,
    WEBTRANSPORT_PATH,
    SessionConfig,
    now_us,
)
from .context import ServerContext
from .grants import FloodGuard
from .send_loop import pump
from .session import NuwaSession
from .switcher import ConnectionSwitcher

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
        self._frames = QuicFrameTransport(self)
        install_controller_pacer(quic._loss)  # BBR: its own pacing rate drives the pacer
        self._pbq_task: asyncio.Task[None] | None = None
        self.pbq_agent: PbqAgent | None = None
        self._start_pbq_agent()
        self._flood = FloodGuard()
        """Datagrams of all this connection's sessions together (issue 13: opening more
        sessions must not multiply a connection's grant budget)."""
        self.flooded = False
        self._cc_name = self._config.quic_congestion_control
        """The registered name of the connection's controller (``_quic._loss._cc``)."""
        self.switcher: ConnectionSwitcher | None = None
        """``--switch rule``: this connection's policy (created with its first session)."""

    def _start_pbq_agent(self) -> None:
        """Start the PBQ agent's task if the connection's controller is PBQ and none runs
        (docs/PBQ.md: every 100 ms off the packet path, one task per connection): at the
        connection's start under ``--cc pbq``, or when a session opens with ``cc=pbq``."""
        cc = self._quic._loss._cc
        if not isinstance(cc, PbqCongestionControl) or self.pbq_agent is not None:
            return
        model = Path(self._config.pbq_model) if self._config.pbq_model else None
        self.pbq_agent = PbqAgent(cc, load_policy(model), on_window=self.transmit,
                                  label=f"connection {self._conn_index}")
        self._pbq_task = self._loop.create_task(self.pbq_agent.run(self._loop.time))

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
        elif isinstance(event, HandshakeCompleted):
            # 1-RTT ACKs wait up to LOCAL_ACK_DELAY_S for a data packet to ride on
            # (piggyback_ack); Initial and Handshake packets were acknowledged at once
            # (RFC 9000 §13.2.1)
            self._quic._ack_delay = LOCAL_ACK_DELAY_S
        elif isinstance(event, ConnectionTerminated):
            for session in list(self._sessions.values()):
                self._note_ceiling(session)
                session.close(f"connection_terminated:{event.error_code}:{event.reason_phrase}")
            self._sessions.clear()
            self._cancel_wake()
            if self._pbq_task is not None:
                self._pbq_task.cancel()
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
                decision = session.on_datagram(event.data, connection_flooded=not connection_ok)
                if self.switcher is not None:
                    self.switcher.on_grant(session, decision, now_us())
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
        raw_path, _, query = headers.get(b":path", b"").partition(b"?")
        path = raw_path.decode("utf-8", "replace")
        is_connect = (method == b"CONNECT" and protocol == b"webtransport"
                      and path == WEBTRANSPORT_PATH)
        config, refusal = self._session_config(query.decode("utf-8", "replace"))
        if is_connect and refusal is not None:
            logger.warning("connection %d: CONNECT refused with 400: %s", self._conn_index,
                           refusal)
            self._h3.send_headers(event.stream_id, [(b":status", b"400")], end_stream=True)
        elif is_connect and len(self._sessions) >= MAX_SESSIONS_PER_CONNECTION:
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
            if config.quic_congestion_control != self._cc_name:
                # the session's scheme: the connection's controller before any of its bytes
                switch_controller(self._quic._loss, config.quic_congestion_control, "limited",
                                  self._loop.time(), from_name=self._cc_name)
                self._cc_name = config.quic_congestion_control
                self._start_pbq_agent()
            session = NuwaSession(event.stream_id, name, config,
                                  self._context.content_root, start)
            if self._context.oracle_window_bytes is not None:
                session.grants.set_window(self._context.oracle_window_bytes)
            self._sessions[event.stream_id] = session
            if config.switch in ("rule", "dqn") and self.switcher is None:
                self.switcher = ConnectionSwitcher(config, start)
            elif self.switcher is not None and self.switcher.mode != "receiver":
                # a session opening on a sender-driven connection follows its mode
                session.grants.config = dataclasses.replace(session.grants.config,
                                                            enforce=False)
            self._context.add_session(session)
            logger.info("session %s opened (cc=%s)", name, config.cc)
            if self._context.on_session is not None:
                self._context.on_session(session)
        else:
            self._h3.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)

    def _session_config(self, query: str) -> tuple[SessionConfig, str | None]:
        """The config of a session opened with ``query`` (the CONNECT path's query string):
        ``cc=SCHEME`` (one of :data:`SESSION_SCHEMES`) opens the session with that scheme
        instead of the server's ``--cc`` (``--switch`` applies to ``nuwa`` sessions only).
        One controller serves a connection, so every open session of a connection has the
        same scheme. Returns (config, None), or (server config, why it is refused)."""
        scheme = urllib.parse.parse_qs(query).get("cc", [None])[0]
        if scheme is None or scheme == self._config.cc:
            config = self._config
        elif scheme not in SESSION_SCHEMES:
            return self._config, f"cc={scheme!r} is not one of {SESSION_SCHEMES}"
        else:
            config = dataclasses.replace(
                self._config, cc=scheme,
                switch=self._config.switch if scheme == "nuwa" else "none")
        others = {s.config.cc for s in self.open_sessions()}
        if others and others != {config.cc}:
            return self._config, (f"cc={config.cc} on a connection whose sessions use "
                                  f"{sorted(others)} (one controller per connection)")
        return config, None

    def _refuse_stream(self, stream_id: int) -> None:
        try:
            self._quic.stop_stream(stream_id, WT_SESSION_GONE)
            if not stream_is_unidirectional(stream_id):
                self._quic.reset_stream(stream_id, WT_SESSION_GONE)
        except Exception:  # noqa: BLE001 - a dead stream is not worth a crash
            logger.debug("could not refuse stream %d", stream_id, exc_info=True)

    def _note_ceiling(self, session: NuwaSession) -> None:
        """Copy the Cubic ceiling's counters into the session's summary (other cc: none)."""
        cc = self._quic._loss._cc
        if isinstance(cc, NuwaCeilingCongestionControl):
            session.ceiling_stats = cc.stats()

    def _close_session(self, session: NuwaSession, reason: str) -> None:
        self._note_ceiling(session)
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
        others = [s for s in self._sessions.values() if s is not session]
        for s in [session, *others] if session is not None else others:
            self._send_close_capsule(s, GRANT_FLOOD_CLOSE_CODE, "grant flood")
            self._close_session(s, "grant_flood" if s is session else "connection_grant_flood")
        self.transmit()
        self._loop.call_later(FLOOD_CONNECTION_CLOSE_DELAY_S, self._close_connection_for_flood)

    def _close_connection_for_flood(self) -> None:
        self._quic.close(error_code=GRANT_FLOOD_CLOSE_CODE, reason_phrase="grant flood")
        self.transmit()

    def _send_close_capsule(self, session: NuwaSession, code: int, reason: str) -> None:
        """CLOSE_WEBTRANSPORT_SESSION capsule on the session's CONNECT stream: u32 code +
        UTF-8 reason (draft-ietf-webtrans-http3-02 §5, RFC 9297 §3.2); the page's
        ``WebTransport.closed`` resolves with them."""
        if self._h3 is None:
            return
        payload = code.to_bytes(4, "big") + reason.encode()[:1024]
        capsule = encode_uint_var(CLOSE_WEBTRANSPORT_SESSION_CAPSULE) + encode_uint_var(
            len(payload)) + payload
        try:
            self._h3.send_data(session.session_id, capsule, end_stream=False)
        except Exception:  # noqa: BLE001 - the stream may already be closed
            logger.debug("could not send the close capsule", exc_info=True)

    def close_all(self, reason: str, code: int = SHUTDOWN_CLOSE_CODE,
                  text: str = "server shutting down") -> None:
        """Close every session (server shutdown) with a CLOSE_WEBTRANSPORT_SESSION capsule
        (``code``, ``text``), log each as ``reason``, then close the connection."""
        for session in list(self._sessions.values()):
            self._send_close_capsule(session, code, text)
            self._close_session(session, reason)
        self.transmit()
        self.close()

    # ------------------------------------------------------------------ sending

    def transmit(self) -> None:
        """Write the frames that can leave now (:func:`.send_loop.pump`), then let aioquic
        send (see module doc)."""
        if not self._pumping:
            self._pumping = True
            try:
                self._context.monitor_tick(now_us())
                if self.switcher is not None:
                    self.switcher.poll(self._quic._loss, self.open_sessions(), now_us(),
                                       self.peer_port())
                result = pump(self._sessions.values(), self._frames,
                              self._config.frame_payload_bytes)
                if result.grant_wake_us is not None:
                    self._wake(result.grant_wake_us / 1e6)  # loop time is CLOCK_MONOTONIC
                if result.pacer_wake_s is not None:
                    self._wake(result.pacer_wake_s)
                if not result.transport_blocked:
                    self._frames.app_limited()  # nothing the transport held back
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
            new_bytes = unsent_new_bytes(self._quic)
            retransmit = new_bytes == 0 and unsent_bytes(self._quic) > 0
            if new_bytes or retransmit:
                for session in self._sessions.values():
                    stats = session.departure
                    if new_bytes:
                        stats.transmits_with_unsent_new_bytes += 1
                        stats.max_unsent_new_bytes = max(stats.max_unsent_new_bytes, new_bytes)
                    else:
                        stats.transmits_with_retransmit_backlog += 1

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


LOCAL_ACK_DELAY_S = 0.020
"""How long the server holds an ACK of a 1-RTT packet for a data packet to carry it, s:
under the 25 ms max_ack_delay aioquic advertises (RFC 9000 §13.2.1, §18.2), with room for
timer lateness. aioquic's own is 1 ms (K_GRANULARITY)."""


def piggyback_ack(quic: QuicConnection, now: float) -> bool:
    """Let an acknowledgement the connection owes ride on the packet about to leave.

    aioquic sends an ACK ``K_GRANULARITY`` (1 ms) after an ack-eliciting packet arrives and
    writes ACK frames only once that time has come, so the data a grant releases leaves
    at once without the grant's ACK, and an ACK-only packet follows 1 ms later. Every
    grant cost the downlink one packet: a quarter of the packets on a 3G trace, and on a
    near-dark link they waited seconds in the queue with the data (issue 14: T-Mobile
    UMTS, 2,522 of 8,282 packets, p95 1.7 s, the p95 of all packets 582 ms against 173 ms
    for data). An owed ACK due now or later is made due now when a data packet is built,
    so it goes in that packet (RFC 9000 §12.4: ACK frames travel in 1-RTT packets with
    other frames; §13.2.1: an ack-eliciting packet is acknowledged within max_ack_delay,
    which an earlier ACK meets). ``now``: aioquic's clock (the event loop's), s.
    Returns whether an owed ACK was moved."""
    space = quic._spaces.get(tls.Epoch.ONE_RTT)
    if space is None or space.ack_at is None or space.ack_at <= now:
        return False
    space.ack_at = now
    return True


def unsent_new_bytes(quic: QuicConnection) -> int:
    """Stream bytes queued in aioquic and never sent yet (no retransmissions)."""
    total = 0
    for stream in quic._streams.values():
        sender = stream.sender
        if not sender.buffer_is_empty:
            total += sender._buffer_stop - sender.highest_offset
    return total


def unsent_bytes(quic: QuicConnection) -> int:
    """Stream bytes queued in aioquic but not yet sent (incl. retransmissions)."""
    total = 0
    for stream in quic._streams.values():
        sender = stream.sender
        if not sender.buffer_is_empty:
            for r in sender._pending:
                total += r.stop - r.start
    return total


class QuicFrameTransport:
    """The send loop's view of one QUIC connection (:class:`.send_loop.FrameTransport`).

    Each frame is handed to aioquic and flushed to the socket before the next is
    considered, so it travels in its own packet(s) and its stamp precedes its departure
    by the time to build the packet. A frame may go only if nothing is queued unsent
    ahead of it (flow control, retransmissions) and it fits the congestion window
    (RFC 9002 §7), and aioquic's pacer has a packet's budget (RFC 9002 §7.7).
    """

    def __init__(self, protocol: NuwaProtocol) -> None:
        self._protocol = protocol
        self._quic = protocol._quic

    def can_send(self, frame_bytes: int) -> bool:
        """Nothing queued ahead and bytes in flight + frame + packet overhead ≤ cwnd."""
        loss = self._quic._loss
        return not unsent_bytes(self._quic) and (
            loss.bytes_in_flight + frame_bytes + PACKET_OVERHEAD_BYTES
            <= loss.congestion_window)

    def bytes_in_flight(self) -> int:
        """aioquic's bytes in flight (RFC 9002 §B.2), bytes."""
        return int(self._quic._loss.bytes_in_flight)

    def ceiling_bytes(self) -> int:
        """aioquic's congestion window (the Cubic ceiling under ``--cc nuwa``), bytes."""
        return int(self._quic._loss.congestion_window)

    def pacer_wait(self) -> float | None:
        """The connection's pacer (RFC 9002 §7.7), asked as aioquic asks it before each packet
        (``next_send_time``): aioquic's own lets a packet go while its bucket > 0; BBR's
        (:class:`.cc.pacing.ControllerPacer`) only with a whole packet's time in the bucket.
        Asking the pacer itself keeps the two in step: a frame this loop lets through is one
        aioquic sends now, so its stamp is its departure."""
        pacer = self._quic._loss._pacer
        wake = pacer.next_send_time(now=self._protocol._loop.time())
        return None if wake is None else float(wake)

    def window_limited(self) -> None:
        """Tell the Cubic ceiling its window is in use (:mod:`.ceiling`); other cc: nothing."""
        cc = self._quic._loss._cc
        if isinstance(cc, NuwaCeilingCongestionControl):
            cc.on_window_limited()

    def app_limited(self) -> None:
        """The pump stopped with the transport able to send more (no data, or grants hold
        it): a controller that samples delivery rates (BBR) marks the phase app-limited
        (draft-ietf-ccwg-bbr, "Detecting application-limited phases"); others: nothing."""
        mark = getattr(self._quic._loss._cc, "on_app_limited", None)
        if mark is not None:
            mark()

    def write(self, stream_id: int, data: bytes, fin: bool) -> bool:
        """Queue the frame on its stream and flush the connection's datagrams to the socket.

        Raises:
            Exception: aioquic refused the stream data (stream reset or stopped).
        """
        try:
            self._quic.send_stream_data(stream_id, data, end_stream=fin)
        finally:
            loop = self._protocol._loop
            now = loop.time()
            piggyback_ack(self._quic, now)
            for datagram, addr in self._quic.datagrams_to_send(now=now):
                self._protocol._transport.sendto(datagram, addr)  # type: ignore[union-attr]
        return True
