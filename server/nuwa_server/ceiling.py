"""The loss-based ceiling under Nuwa's grants: aioquic's Cubic, except after
persistent congestion.

In ``nuwa`` and ``oracle`` modes the server sends at most min(grant, cwnd): the
receiver's delay-based grant is the control, and Cubic's window is only a
safety ceiling against loss. A downlink outage (12 s on the Lumos LTE trace)
leaves every packet in flight unacknowledged, so aioquic declares persistent
congestion (RFC 9002 §7.6) and also leaves ssthresh near the minimum window
(computed from a flight that was just emptied by the loss). The ceiling then
regrows in congestion avoidance at about one packet per RTT and caps the link
at a few percent of its capacity for many seconds after it returns, however
large the receiver's grant is (docs/RELIABILITY.md, "Link outages").

This class keeps RFC 9002 §7.6.2's rule (the window drops to the minimum
window) but restarts slow start from there, as a fresh connection would
(RFC 9002 §7.3.1; RFC 7661 §4.1 restarts after an idle period the same way):
the ceiling doubles per RTT back to where the grant is, and the grant, not the
ceiling, keeps the queue bounded. The same restart follows the two other ways
an outage shows up in aioquic: losses declared long after sending without
persistent congestion, and Cubic's reset of the window after 2 s without an
ACK (``K_CUBIC_MAX_IDLE_TIME``; RFC 7661 §4.1 in spirit). The Cubic baselines
(``--cc cubic``) keep aioquic's Cubic unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from aioquic.quic.congestion.base import register_congestion_control
from aioquic.quic.congestion.cubic import K_CUBIC_MAX_IDLE_TIME, CubicCongestionControl
from aioquic.quic.packet_builder import QuicSentPacket

CEILING_NAME = "nuwa_ceiling"
OUTAGE_LOSS_AGE_S = 1.0
"""A loss declared at least this long (and 8 RTTs) after the packet was sent is an outage's."""


class NuwaCeilingCongestionControl(CubicCongestionControl):
    """aioquic Cubic that slow-starts again when an outage shows: persistent congestion
    (RFC 9002 §7.6), losses declared long after sending, or Cubic's own window reset after
    2 s without an ACK.

    The restart runs until the window is back at the window before the loss
    (Cubic's ``W_max``) or a new loss: aioquic's delay-increase exit from slow
    start (its RTT monitor, HyStart-like) is skipped meanwhile, because the
    first RTT samples after an outage belong to packets that waited through it
    (seconds) and would end the restart at once (seen end to end: the ceiling
    then grew by about one packet per RTT; docs/RELIABILITY.md "Link outages").
    """

    def __init__(self, max_datagram_size: int) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self._restart_target_bytes: int | None = None

    def _restart(self, target_bytes: int) -> None:
        """Slow start again (RFC 9002 §7.3.1) from the current window until it is back at
        ``target_bytes`` (the largest target of restarts still running) or a new loss."""
        self.ssthresh = None
        self._first_slow_start = True
        self._starting_congestion_avoidance = False
        self._restart_target_bytes = max(self._restart_target_bytes or 0, target_bytes)

    def _largest_window_bytes(self) -> int:
        """The window now or, if larger, Cubic's window before its last reduction, bytes."""
        return max(self.congestion_window, self._W_max or 0)

    def on_persistent_congestion(self) -> None:
        super().on_persistent_congestion()  # window → minimum (RFC 9002 §7.6.2)
        self._restart(self._W_max)

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        sent_s = packet.sent_time
        idle = (
            sent_s is not None
            and self.last_ack != 0.0
            and sent_s - self.last_ack >= K_CUBIC_MAX_IDLE_TIME
        )
        if not idle:
            super().on_packet_sent(packet=packet)
            return
        before_bytes = self._largest_window_bytes()
        super().on_packet_sent(packet=packet)  # aioquic resets the window after 2 s without an ACK
        # The reset leaves slow start to aioquic's delay-based exit, which the late RTT samples
        # of an outage end at once (seen on full-capacity Lumos LTE: the ceiling went 871 → 18
        # packets and regrew ~1 packet per RTT). Restart toward the window before the silence.
        # Every probe sent while still idle resets again; the target stays the largest.
        self._restart(before_bytes)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        packets = list(packets)
        sent_last = max((p.sent_time for p in packets if p.sent_time is not None), default=now)
        outage = now - sent_last >= max(OUTAGE_LOSS_AGE_S, 8 * self.rtt)
        before_bytes = self._largest_window_bytes()
        super().on_packets_lost(now=now, packets=packets)
        if outage:
            # Declared lost long after it was sent: the path was dark, not congested (a loss
            # found ~1 RTT after sending is congestion). Restart as after persistent congestion,
            # from where Cubic's decrease left the window, back toward the window before.
            self._restart(before_bytes)
        else:
            self._restart_target_bytes = None  # a new loss ends the restart (Cubic as usual)

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        target = self._restart_target_bytes
        if target is not None and self.congestion_window < target:
            self.rtt = rtt  # keep Cubic's RTT; no delay-based slow-start exit during the restart
            return
        self._restart_target_bytes = None
        super().on_rtt_measurement(now=now, rtt=rtt)


register_congestion_control(CEILING_NAME, NuwaCeilingCongestionControl)
