"""The seam that lets a controller's own pacing rate drive aioquic's pacer.

aioquic's :class:`~aioquic.quic.recovery.QuicPacketPacer` paces at cwnd / smoothed RTT
and learns a new rate only at an RTT sample or a loss (``update_rate``). BBR paces at
its model's rate times a gain (draft-ietf-ccwg-bbr BBRSetPacingRate), which may be far
from cwnd / sRTT (2.77 × bw in Startup, 0.9 × bw in ProbeBW_DOWN). :class:`ControllerPacer`
replaces the connection's pacer and reads the controller's
``pacing_rate_bytes_per_s`` and ``send_quantum_bytes`` whenever the pacer is consulted,
so every new rate takes effect at the next packet. Nothing in site-packages is edited:
:func:`install_controller_pacer` swaps the object on one connection's recovery.
"""

from __future__ import annotations

from typing import Protocol

from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import (
    K_MICRO_SECOND,
    K_SECOND,
    QuicPacketPacer,
    QuicPacketRecovery,
    QuicPacketSpace,
)

#: Sending time the pacer may catch up after a late wake-up, s (see ControllerPacer._sync).
WAKEUP_CREDIT_S = 0.005

#: Bucket shortfall (s) still counted as a whole packet's time: timers fire at the time asked
#: for, and the sum of float intervals may fall a few ns short of it.
_BUCKET_TOLERANCE_S = 1e-7


class PacedController(Protocol):
    """A congestion controller that sets its own pacing rate (e.g. :mod:`.bbr`)."""

    pacing_rate_bytes_per_s: float
    """Pacing rate, bytes/s."""
    send_quantum_bytes: int
    """Largest burst the pacer may release at once, bytes."""


class ControllerPacer(QuicPacketPacer):
    """aioquic's token-bucket pacer at ``cc.pacing_rate_bytes_per_s`` with a bucket of
    ``cc.send_quantum_bytes`` (draft-ietf-ccwg-bbr BBRSetSendQuantum), instead of
    cwnd / sRTT with a quarter-window bucket."""

    def __init__(self, *, max_datagram_size: int, cc: PacedController) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self._cc = cc
        self._rate_bytes_per_s = -1.0
        self._quantum_bytes = -1
        self._sync()

    def _sync(self) -> None:
        rate = self._cc.pacing_rate_bytes_per_s
        quantum = self._cc.send_quantum_bytes
        if rate == self._rate_bytes_per_s and quantum == self._quantum_bytes:
            return
        self._rate_bytes_per_s = rate
        self._quantum_bytes = quantum
        if rate <= 0:
            self.packet_time = None  # no rate yet: do not pace
            return
        # one packet's time at the rate, clamped as aioquic clamps it
        self.packet_time = max(K_MICRO_SECOND, min(self._max_datagram_size / rate, K_SECOND))
        # The bucket holds one send quantum (draft: BBRSetSendQuantum) or the credit of a late
        # wake-up, whichever is larger: the server's pacer is woken by asyncio timers that fire
        # at whole ms and then some, and a 2-SMSS bucket (2.2 ms at 10 Mbit/s) lost the credit
        # of every late wake (0.84 of a constant link end to end). A burst is still at most
        # WAKEUP_CREDIT_S of the pacing rate (5 ms: 6 kB at 10 Mbit/s).
        self.bucket_max = max(quantum, self._max_datagram_size, rate * WAKEUP_CREDIT_S) / rate
        if self.bucket_time > self.bucket_max:
            self.bucket_time = self.bucket_max

    def update_rate(self, congestion_window: int, smoothed_rtt: float) -> None:
        """aioquic's hook (after an RTT sample or a loss): take the controller's rate; the
        window and sRTT are not used."""
        self._sync()

    def update_bucket(self, now: float) -> None:
        """Refill the bucket up to ``now`` (s) at the controller's current rate."""
        self._sync()
        super().update_bucket(now=now)

    def next_send_time(self, now: float) -> float | None:  # type: ignore[override]
        """When the next packet may leave (None: now), at the controller's current rate.

        A packet leaves only when the bucket holds a whole packet's time. aioquic's pacer
        lets one go whenever the bucket is above zero and then forgives the rest of its
        cost (``update_after_send`` sets a short bucket to 0), so every event that looks at
        it a little later (an ACK arriving 0.1 ms after a send) releases a packet early:
        with ACKs every two packets a flow sent at the delivery rate while BBR paced at
        0.9 × bw in ProbeBW_DOWN, and never drained its queue (p95 79 ms on a constant
        10 Mbit/s link, cwnd-limited at 2 BDP). The draft's pacing is a rate, not a
        release per event (draft-ietf-ccwg-bbr "Pacing Rate": next_send_time =
        Now() + packet.size / pacing_rate)."""
        self._sync()
        if self.packet_time is None:
            return None
        self.update_bucket(now=now)
        short_s = self.packet_time - self.bucket_time
        if short_s <= _BUCKET_TOLERANCE_S:  # a whole packet's time (float rounding aside)
            return None
        return now + max(short_s, K_MICRO_SECOND)

    def refund(self, sent_bytes: int) -> None:
        """Give back the part of a packet's charge it did not use: ``update_after_send``
        charges a full ``max_datagram_size`` (aioquic does not pass the size), the packet
        had ``sent_bytes`` (0 for one that is not in flight: ACK-only packets are not paced,
        RFC 9002 §7.7). Pacing is then by bytes, as the draft's packet.size / pacing_rate;
        charging the maximum paced 1270-byte packets at 0.94 × the rate."""
        if self.packet_time is None or self._rate_bytes_per_s <= 0:
            return
        unused_bytes = self._max_datagram_size - max(0, min(sent_bytes, self._max_datagram_size))
        self.bucket_time = min(self.bucket_time + unused_bytes / self._rate_bytes_per_s,
                               self.bucket_max)

    def update_after_send(self, now: float) -> None:
        """Charge one packet's time at the current rate; the deficit is kept, not forgiven
        (see :meth:`next_send_time`). ACK-only packets bypass the pacer (aioquic sends them
        unpaced) and are charged too, so the bucket may go below zero, at most one packet."""
        self._sync()
        if self.packet_time is None:
            return
        self.update_bucket(now=now)
        self.bucket_time = max(self.bucket_time - self.packet_time, -self.packet_time)


def install_controller_pacer(loss: QuicPacketRecovery) -> bool:
    """Give ``loss`` (a connection's ``_loss``) a :class:`ControllerPacer` if its controller
    sets its own pacing rate; returns whether it did."""
    cc = loss._cc
    if not hasattr(cc, "pacing_rate_bytes_per_s") or not hasattr(cc, "send_quantum_bytes"):
        return False
    mss = loss._pacer._max_datagram_size
    pacer = ControllerPacer(max_datagram_size=mss, cc=cc)  # type: ignore[arg-type]
    loss._pacer = pacer
    record_sent = loss.on_packet_sent

    def on_packet_sent(*, packet: QuicSentPacket, space: QuicPacketSpace) -> None:
        # the packet's real size reaches the pacer here (after update_after_send charged
        # the maximum): see ControllerPacer.refund
        record_sent(packet=packet, space=space)
        pacer.refund(packet.sent_bytes if packet.in_flight else 0)

    loss.on_packet_sent = on_packet_sent  # type: ignore[method-assign]
    return True
