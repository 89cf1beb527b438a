"""The one send loop of both transports (issue 16 item 3): the per-frame work, done once.

Sending discipline (docs/DESIGN.md §2 step 3, PROTOCOL.md "Responses"): a frame is
stamped and handed to the transport only when it can leave at once, so its
``send_time_us`` is its departure time (over QUIC) or the time TCP took it
(over the WebSocket fallback). For each frame, in this order:

* the transport's own window (:meth:`FrameTransport.can_send`; QUIC: nothing
  queued unsent ahead of it and bytes in flight + frame + packet overhead ≤
  cwnd, RFC 9002 §7): if not, the whole pump stops until the transport calls
  it again;
* the grant-timeout fallback (:meth:`.grants.GrantState.poll_fallback`, logged
  when a level is entered);
* a packet train's later frames (:mod:`.packet_train`, armed by the switch rule) skip the
  next two steps: they leave back to back, one past the window each;
* the grant rule (``--cc nuwa``, :mod:`.grants`): outstanding + frame ≤
  min(grant window, the transport's ceiling); a session it blocks waits for
  a grant or its next timeout step; when the grant allowed the frame but the
  ceiling did not, the ceiling's window is in use (RFC 9002 §7.8);
* the grant pacer (``--cc nuwa``, :meth:`.grants.GrantState.pace_wait_us`): a frame
  the window allows leaves at 2 × min(window, ceiling) ÷ RTT; a session it holds waits
  like one its grant holds, until the time its bucket has the frame;
* the pacer (QUIC: aioquic's, RFC 9002 §7.7): a held frame stops the pump
  until the pacer's next packet time, and the window counts as in use;
* then the frame gets its seq and stamp, is written, and is counted
  (outstanding bytes) and logged (``frames.jsonl``).

Sessions are served round robin, and each session's streams round robin, one
frame at a time. The transports (:class:`FrameTransport`): QUIC in
:mod:`.connection`, the WebSocket in :mod:`.websocket`; they differ only in
how they answer the interface and when they run the loop again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .config import now_us
from .grants import WriteBudget
from .protocol import FRAME_HEADER_BYTES, FrameType, encode_frame_header
from .session import NuwaSession
from .streams import ResponseStream

logger = logging.getLogger("nuwa_server.send_loop")


class FrameTransport(Protocol):
    """What the send loop asks of a transport. Every method answers for the instant it is
    called; none blocks."""

    def can_send(self, frame_bytes: int) -> bool:
        """Whether a frame of ``frame_bytes`` (header + payload, bytes) fits the transport's
        own window now. False stops the pump; the transport runs it again when that changes."""
        ...

    def bytes_in_flight(self) -> int:
        """Bytes sent and not yet acknowledged by the transport, bytes (the grant-timeout
        fallback's measure, :meth:`.grants.GrantState.budget`)."""
        ...

    def ceiling_bytes(self) -> int:
        """The transport's window the grant sits under, bytes (logged per frame)."""
        ...

    def pacer_wait(self) -> float | None:
        """None if a packet may leave now; else the event-loop time (s, CLOCK_MONOTONIC) at
        which the pacer lets the next one go."""
        ...

    def window_limited(self) -> None:
        """The grant allowed a frame that the ceiling or the pacer held: the ceiling's
        window is in use (RFC 9002 §7.8)."""
        ...

    def write(self, stream_id: int, data: bytes, fin: bool) -> bool:
        """Hand one stamped frame (``data``: header + payload) to the transport, ending the
        stream with it if ``fin``. Returns whether the loop may consider another frame at
        once (False: the transport must flush this one first).

        Raises:
            Exception: the stream cannot be written (reset or stopped under us); the loop
                then ends that stream.
        """
        ...


@dataclass(slots=True)
class PumpResult:
    """What one :func:`pump` did and why it stopped.

    ``frames``: frames written; ``transport_blocked``: stopped by the transport (its
    window, its pacer, or a write it must flush first); ``pacer_wake_s``: event-loop time
    (s) at which the pacer frees the next packet, when it held a frame; ``grant_blocked``:
    a session was held by its grant; ``grant_wake_us``: the earliest grant-timeout step
    (CLOCK_MONOTONIC µs) of a held session whose grants are enforced.
    """

    frames: int = 0
    transport_blocked: bool = False
    pacer_wake_s: float | None = None
    grant_blocked: bool = False
    grant_wake_us: int | None = None


def grant_wake_us(session: NuwaSession, t_us: int) -> int | None:
    """When a session blocked by its grant at ``t_us`` should be looked at again: its next
    grant-timeout step (:meth:`.grants.GrantState.fallback_level`), CLOCK_MONOTONIC µs;
    None when grants are not enforced (``--cc cubic|reno``)."""
    g = session.grants
    if not g.config.enforce:
        return None
    since = g.last_grant_time_us if g.last_grant_time_us is not None else g.start_time_us
    level = g.fallback_level(t_us)
    return since + (level + 1) * g.config.grant_timeout_us


def pump(sessions: Iterable[NuwaSession], transport: FrameTransport,
         payload_bytes: int) -> PumpResult:
    """Write frames of ``sessions`` while ``transport`` and their grants let them leave now
    (module doc). ``payload_bytes``: DATA payload per frame, bytes. Never blocks."""
    result = PumpResult()
    active = [s for s in sessions if s.active]
    blocked: set[int] = set()
    while len(blocked) < len(active):
        progressed = False
        for session in active:
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
            if not transport.can_send(frame_bytes):
                result.transport_blocked = True
                return result
            ceiling = transport.ceiling_bytes()
            in_flight = transport.bytes_in_flight()
            t_us = now_us()
            level = session.grants.poll_fallback(t_us)
            if level is not None:
                _log_fallback(session, level, t_us)
            budget = session.grants.budget(t_us, in_flight)
            # a packet train's later frames (:mod:`.packet_train`) leave at once, past the
            # grant's window and pacer; the transport's window and pacer still gate them
            train_frame = session.train.bypass(t_us)
            if not train_frame and not budget.allows(frame_bytes, ceiling):
                window = budget.window_bytes
                if window is not None and budget.allows(frame_bytes, window):
                    transport.window_limited()  # the grant allows it, the ceiling does not
                blocked.add(session.session_id)
                result.grant_blocked = True
                wake = grant_wake_us(session, t_us)
                if wake is not None and (result.grant_wake_us is None
                                         or wake < result.grant_wake_us):
                    result.grant_wake_us = wake
                continue
            pace_us = None if train_frame else session.grants.pace_wait_us(
                t_us, frame_bytes, budget, ceiling)
            if pace_us is not None:
                blocked.add(session.session_id)
                result.grant_blocked = True
                if result.grant_wake_us is None or pace_us < result.grant_wake_us:
                    result.grant_wake_us = pace_us
                continue
            pacer_wake_s = transport.pacer_wait()
            if pacer_wake_s is not None:
                transport.window_limited()  # the grant allows this frame: the window is in use
                result.transport_blocked = True
                result.pacer_wake_s = pacer_wake_s
                return result
            written, go_on = _write_frame(transport, session, stream, ftype, payload, fin,
                                          budget, ceiling, in_flight, train_frame)
            result.frames += written
            progressed = True
            session.active.rotate(-1)
            if stream.done:
                session.stream_finished(stream)
            if not go_on:
                result.transport_blocked = True
                return result
        if not progressed:
            break
    return result


def _write_frame(transport: FrameTransport, session: NuwaSession, stream: ResponseStream,
                 ftype: FrameType, payload: bytes, fin: bool, budget: WriteBudget,
                 ceiling_bytes: int, bytes_in_flight: int,
                 train_frame: bool = False) -> tuple[bool, bool]:
    """Stamp, write, count and log one frame (``train_frame``: a packet train's frame past
    the window, not a grant violation). Returns (written, go on): go on is
    :meth:`FrameTransport.write`'s answer; a failed write ends the stream and goes on."""
    seq = session.take_seq()
    send_time_us = now_us()
    data = encode_frame_header(ftype, seq, send_time_us, len(payload)) + payload
    try:
        go_on = transport.write(stream.stream_id, data, fin)
    except Exception as exc:  # noqa: BLE001 - stream gone under us (reset, stop)
        logger.info("session %s: stream %d not writable (%s)", session.name,
                    stream.stream_id, exc)
        session.on_stream_abort(stream.stream_id, f"write_failed:{exc}")
        return False, True
    stream.commit()
    outstanding = session.grants.on_frame_written(len(data), budget, train_frame)
    session.train.on_written(send_time_us, budget.outstanding_bytes, len(data))
    session.log.frame(seq, stream.stream_id, ftype, len(data), send_time_us, outstanding,
                      budget.window_bytes, ceiling_bytes, bytes_in_flight)
    return True, go_on


def _log_fallback(session: NuwaSession, level: int, t_us: int) -> None:
    budget = session.grants.budget(t_us, 0)
    logger.info("session %s: grant timeout, fallback level %d, window %s bytes",
                session.name, level, budget.window_bytes)
    session.log.event("grant_fallback", level=level, window_bytes=budget.window_bytes,
                      last_grant_seq=session.grants.last_grant_seq)
