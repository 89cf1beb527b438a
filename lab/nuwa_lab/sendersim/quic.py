"""One QUIC flow's two ends: a sender whose loss recovery, congestion control and pacing are
aioquic's own objects, and a receiver that acknowledges as Chromium does.

Sender (:class:`QuicSender`): aioquic's :class:`~aioquic.quic.recovery.QuicPacketRecovery`
(RFC 9002 loss detection: packet and time thresholds §6.1, PTO §6.2, persistent congestion
§7.6; the RTT estimator §5; the pacer §7.7) with a congestion controller created by name from
aioquic's registry (``reno``, ``cubic``, the server's ``nuwa_ceiling``, ``bbr`` once
``nuwa_server.cc`` exists: :func:`~nuwa_lab.sendersim.schemes.load_plugins`). It is driven
with the simulated ``now`` and synthetic :class:`~aioquic.quic.packet_builder.QuicSentPacket`
objects, one frame per packet as the server's ``QuicFrameTransport`` sends them: a frame of
``FRAME_HEADER_BYTES`` + 1200 bytes may go when bytes in flight + frame + 50 ≤ cwnd
(connection.py ``can_send``; RFC 9002 §7) and aioquic's pacer has a packet's budget
(``next_send_time`` is None, as aioquic's ``_write_application``). A controller with its own
``random.Random`` (``_rng``: BBR's probe wait) is seeded from the run's seed. Lost frames (aioquic's
delivery handler reports LOST) are sent again first, in stream order, in new packets (RFC 9000
§13.3). A PTO's probe (aioquic ``_send_probe``) may exceed cwnd by one packet (RFC 9002 §7);
it carries the frame the PTO declared lost, or a PING when there is none and no new frame may
go.
Before data, one handshake round trip (a 1200-byte ack-eliciting packet outside bytes in
flight) gives the RTT estimator and the pacer their first sample, as the QUIC handshake does.

Receiver (:class:`QuicReceiver`): acknowledges every ``ack_every`` ack-eliciting packets
(Chromium's default: 2), at once on a packet out of order (RFC 9000 §13.2.1), else within
``max_ack_delay_ms`` (25 ms, Chromium's and aioquic's); the ACK frame carries the 32 highest
ranges received and the delay since the largest arrived (RFC 9000 §19.3). It counts each frame
once (goodput).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from aioquic.quic.packet import QuicPacketType
from aioquic.quic.packet_builder import QuicDeliveryState, QuicSentPacket
from aioquic.quic.rangeset import RangeSet
from aioquic.quic.recovery import QuicPacketRecovery, QuicPacketSpace
from aioquic.tls import Epoch

from nuwa_server.config import PACKET_OVERHEAD_BYTES
from nuwa_server.protocol import FRAME_HEADER_BYTES

from .core import Path, WirePacket

FRAME_PAYLOAD_BYTES = 1200
"""DATA payload per frame, bytes (``SessionConfig.frame_payload_bytes``)."""
FRAME_BYTES = FRAME_HEADER_BYTES + FRAME_PAYLOAD_BYTES
"""One frame, header + payload, bytes."""
WIRE_BYTES = FRAME_BYTES + PACKET_OVERHEAD_BYTES
"""One data packet on the wire (the frame + QUIC/UDP overhead as the server counts it), bytes."""
MAX_DATAGRAM_BYTES = 1350
"""aioquic's max_datagram_size as the server configures it (``SessionConfig``), bytes."""
HANDSHAKE_PACKET_BYTES = 1200
"""The handshake round trip's packet, bytes (an Initial is padded to 1200, RFC 9000 §14.1)."""
PING_PACKET_BYTES = PACKET_OVERHEAD_BYTES
"""A probe that carries no frame (a PING-only packet), bytes on the wire."""
INITIAL_RTT_S = 0.1
"""aioquic's ``QuicConfiguration.initial_rtt`` default, s."""
MAX_ACK_RANGES = 32
"""ACK ranges the receiver keeps and reports (the highest ones)."""
TIMER_SLACK_S = 1e-9
"""A loss-detection timer fires this long after aioquic's instant, s (see ``_on_timer``)."""


class QuicSender:
    """The sending end of one flow (module doc). ``cc_name``: a name in aioquic's registry.

    Subclasses gate new frames with :meth:`may_send_new` (the Nuwa flow's grant rule).
    """

    def __init__(self, path: Path, flow: int, cc_name: str, start_ms: float,
                 pacer_hook: Callable[[QuicPacketRecovery], object] | None = None,
                 seed: int | None = None) -> None:
        self.path = path
        self.sim = path.sim
        self.flow = flow
        self.start_ms = start_ms
        self.recovery = QuicPacketRecovery(
            congestion_control_algorithm=cc_name, initial_rtt=INITIAL_RTT_S,
            max_datagram_size=MAX_DATAGRAM_BYTES, peer_completed_address_validation=True,
            send_probe=self._on_probe)
        self.recovery.handshake_confirmed = True
        rng = getattr(self.recovery._cc, "_rng", None)
        if seed is not None and isinstance(rng, random.Random):
            rng.seed(seed)  # a controller's own randomness (BBRPickProbeWait): a run repeats
        self.space = QuicPacketSpace(is_application_data=True)
        self.recovery.spaces = [self.space]
        if pacer_hook is not None:
            pacer_hook(self.recovery)
        self.data_started = False
        self.next_frame_seq = 0
        self.frames_retransmitted = 0
        self._next_pn = 0
        self._retx: list[int] = []
        self._probe_pending = False
        self._wake_at_s: float | None = None
        self._timer_gen = 0
        self.sim.at(start_ms, self._handshake)

    # ------------------------------------------------------------------ sending

    def _handshake(self) -> None:
        self._send_packet(-1, HANDSHAKE_PACKET_BYTES, in_flight=False)
        self._arm_timer()

    def may_send_new(self, now_s: float) -> bool:
        """Whether a new frame may go now beside cwnd and the pacer (bulk: always)."""
        return True

    def on_sent_new(self, now_s: float) -> None:
        """A new frame of FRAME_BYTES left (hook for subclasses)."""

    def on_pacer_held(self) -> None:
        """The pacer held a new frame the other limits allowed (hook for subclasses)."""

    def try_send(self) -> None:
        """Send frames while cwnd, the pacer and :meth:`may_send_new` allow (module doc)."""
        if not self.data_started:
            if self._probe_pending:  # the handshake packet was lost: send it again
                self._probe_pending = False
                self._send_packet(-1, HANDSHAKE_PACKET_BYTES, in_flight=False)
                self._arm_timer()
            return
        rec = self.recovery
        now_s = self.sim.now_s
        while True:
            probe = self._probe_pending
            if not probe and (rec.bytes_in_flight + FRAME_BYTES + PACKET_OVERHEAD_BYTES
                              > rec.congestion_window):
                break
            retx = bool(self._retx)
            ping = probe and not retx and not self.may_send_new(now_s)
            if not retx and not probe and not self.may_send_new(now_s):
                break
            wait_s = rec._pacer.next_send_time(now=now_s)
            if wait_s is not None:
                if not retx and not probe:
                    self.on_pacer_held()
                self._wake(wait_s)
                break
            if ping:  # a probe with no data it may send: a PING (aioquic _write_application)
                self._probe_pending = False
                self._send_packet(-1, PING_PACKET_BYTES, in_flight=True)
                rec._pacer.update_after_send(now=now_s)
                continue
            if retx:
                seq = heapq.heappop(self._retx)
                self.frames_retransmitted += 1
            else:
                seq = self.next_frame_seq
                self.next_frame_seq += 1
                self.on_sent_new(now_s)
            self._probe_pending = False
            self._send_packet(seq, WIRE_BYTES, in_flight=True)
            rec._pacer.update_after_send(now=now_s)
        self._arm_timer()

    def _send_packet(self, frame_seq: int, size_bytes: int, in_flight: bool) -> None:
        now_s = self.sim.now_s
        pn = self._next_pn
        self._next_pn += 1
        packet = QuicSentPacket(
            epoch=Epoch.ONE_RTT, in_flight=in_flight, is_ack_eliciting=True,
            is_crypto_packet=False, packet_number=pn, packet_type=QuicPacketType.ONE_RTT,
            sent_time=now_s, sent_bytes=size_bytes)
        if frame_seq >= 0:
            packet.delivery_handlers.append((self._on_delivery, (frame_seq,)))
        self.recovery.on_packet_sent(packet=packet, space=self.space)
        self.path.send(WirePacket(self.flow, pn, frame_seq, size_bytes, self.sim.now_ms,
                                  int(self.sim.now_ms * 1000), is_control=frame_seq < 0))

    def _on_delivery(self, state: QuicDeliveryState, frame_seq: int) -> None:
        if state == QuicDeliveryState.LOST:
            heapq.heappush(self._retx, frame_seq)

    def _on_probe(self) -> None:
        self._probe_pending = True

    def _wake(self, at_s: float) -> None:
        if self._wake_at_s is not None and self._wake_at_s <= at_s:
            return
        self._wake_at_s = at_s
        self.sim.at(at_s * 1000.0, self._on_wake)

    def _on_wake(self) -> None:
        self._wake_at_s = None
        self.try_send()

    # ------------------------------------------------------------------ ACKs and timers

    def on_ack(self, ranges: RangeSet, ack_delay_s: float) -> None:
        """An ACK frame reached the sender now (aioquic ``on_ack_received``)."""
        self.recovery.on_ack_received(ack_rangeset=ranges, ack_delay=ack_delay_s,
                                      now=self.sim.now_s, space=self.space)
        if not self.data_started:
            self.data_started = True
        self.try_send()

    def _arm_timer(self) -> None:
        t_s = self.recovery.get_loss_detection_time(amplification_limited=False)
        self._timer_gen += 1
        if t_s is None:
            return
        gen = self._timer_gen
        self.sim.at(t_s * 1000.0, lambda: self._on_timer(gen, t_s))

    def _on_timer(self, gen: int, t_s: float) -> None:
        if gen != self._timer_gen:
            return  # re-armed since
        # 1 ns past the instant aioquic asked for: its test sent_time <= now − loss_delay can
        # miss by a rounding error at exactly loss_time, re-arming the same instant for ever
        self.recovery.on_loss_detection_timeout(now=max(t_s, self.sim.now_s) + TIMER_SLACK_S)
        self.try_send()
        self._arm_timer()


class QuicReceiver:
    """The receiving end of one flow (module doc): ACKs back over the path, goodput counted.

    ``delivered_ms`` / ``delivered_bytes``: each new frame's arrival time (ms) and payload
    (bytes), in arrival order.
    """

    def __init__(self, path: Path, sender: QuicSender, ack_every: int = 2,
                 max_ack_delay_ms: float = 25.0) -> None:
        if ack_every < 1:
            raise ValueError(f"ack_every must be >= 1, got {ack_every}")
        self.path = path
        self.sim = path.sim
        self.sender = sender
        self.ack_every = ack_every
        self.max_ack_delay_ms = max_ack_delay_ms
        self.delivered_ms: list[float] = []
        self.delivered_bytes: list[int] = []
        self._ranges = RangeSet()
        self._largest = -1
        self._largest_ms = 0.0
        self._unacked = 0
        self._ack_gen = 0
        self._ack_armed = False
        self._next_frame = 0
        self._ahead: set[int] = set()

    def on_packet(self, pkt: WirePacket, now_ms: float, queue_delay_ms: float) -> None:
        """A packet left the bottleneck at ``now_ms`` (the receiver's arrival time)."""
        pn = pkt.packet_number
        out_of_order = pn != self._largest + 1
        self._ranges.add(pn)
        if len(self._ranges) > MAX_ACK_RANGES:
            self._ranges.shift()
        if pn > self._largest:
            self._largest, self._largest_ms = pn, now_ms
        if pkt.frame_seq >= 0 and self._is_new(pkt.frame_seq):
            self.delivered_ms.append(now_ms)
            self.delivered_bytes.append(FRAME_PAYLOAD_BYTES)
            self.on_frame(pkt, now_ms)
        self._unacked += 1
        if out_of_order or self._unacked >= self.ack_every or pkt.is_control:
            self._send_ack()
        elif not self._ack_armed:
            self._ack_armed = True
            gen = self._ack_gen
            self.sim.at(now_ms + self.max_ack_delay_ms, lambda: self._ack_timer(gen))

    def on_frame(self, pkt: WirePacket, now_ms: float) -> None:
        """A new frame arrived (hook for the Nuwa receiver)."""

    def _is_new(self, seq: int) -> bool:
        if seq < self._next_frame or seq in self._ahead:
            return False
        self._ahead.add(seq)
        while self._next_frame in self._ahead:
            self._ahead.discard(self._next_frame)
            self._next_frame += 1
        return True

    def _ack_timer(self, gen: int) -> None:
        if gen == self._ack_gen:
            self._send_ack()

    def _send_ack(self) -> None:
        self._ack_gen += 1
        self._ack_armed = False
        self._unacked = 0
        ranges = RangeSet(self._ranges)
        delay_s = (self.sim.now_ms - self._largest_ms) / 1000.0
        sender = self.sender
        self.path.back(lambda: sender.on_ack(ranges, delay_s))
