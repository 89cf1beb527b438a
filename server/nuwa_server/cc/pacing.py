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

from aioquic.quic.recovery import K_MICRO_SECOND, K_SECOND, QuicPacketPacer, QuicPacketRecovery


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
        self.bucket_max = max(quantum, self._max_datagram_size) / rate
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
        """When the next packet may leave (None: now), at the controller's current rate."""
        self._sync()
        return super().next_send_time(now)


def install_controller_pacer(loss: QuicPacketRecovery) -> bool:
    """Give ``loss`` (a connection's ``_loss``) a :class:`ControllerPacer` if its controller
    sets its own pacing rate; returns whether it did."""
    cc = loss._cc
    if not hasattr(cc, "pacing_rate_bytes_per_s") or not hasattr(cc, "send_quantum_bytes"):
        return False
    mss = loss._pacer._max_datagram_size
    loss._pacer = ControllerPacer(max_datagram_size=mss, cc=cc)  # type: ignore[arg-type]
    return True
