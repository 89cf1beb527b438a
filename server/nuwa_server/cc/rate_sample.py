"""Delivery-rate sampling per packet (draft-ietf-ccwg-bbr "Delivery Rate Samples";
draft-cheng-iccrg-delivery-rate-estimation-02, "rate-estimation" below, by function name).

Each sent packet records the connection's delivery state at send time
(:class:`PacketDeliveryState`); each ACK turns the newest packet it acknowledges into
one :class:`RateSample`: bytes delivered between that packet's send and its ACK over the
longer of the send and ACK intervals. Sans-I/O: every time is an argument (s, the
caller's clock); sizes are bytes, rates bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PacketDeliveryState:
    """The connection's delivery state when a packet was sent (rate-estimation
    OnPacketSent; draft-ietf-ccwg-bbr "Delivery Rate Samples", the P.* fields).

    Attributes:
        packet_number: the packet's number (orders packets sent at the same instant).
        sent_time_s: when it was sent, s.
        size_bytes: its size, bytes.
        delivered_bytes: C.delivered at send, bytes.
        delivered_time_s: C.delivered_time at send, s.
        first_send_time_s: C.first_send_time at send, s.
        is_app_limited: C.app_limited was set at send.
        tx_in_flight_bytes: bytes in flight just after this packet was sent (BBR's
            P.tx_in_flight).
        lost_bytes: C.lost at send, bytes (BBR's P.lost, for RS.lost).
    """

    packet_number: int
    sent_time_s: float
    size_bytes: int
    delivered_bytes: int
    delivered_time_s: float
    first_send_time_s: float
    is_app_limited: bool
    tx_in_flight_bytes: int
    lost_bytes: int


@dataclass(slots=True)
class RateSample:
    """One ACK's rate sample (rate-estimation GenerateRateSample, BBR's RS.*).

    Attributes:
        valid: the sample has an interval of at least the min RTT (rate-estimation
            GenerateRateSample: shorter intervals are not reliable and are discarded).
        delivery_rate_bytes_per_s: RS.delivery_rate, bytes/s (0 unless valid).
        delivered_bytes: RS.delivered, bytes delivered over the interval.
        interval_s: RS.interval = max(send_elapsed, ack_elapsed), s.
        prior_delivered_bytes: RS.prior_delivered (C.delivered when the newest acked
            packet was sent), bytes.
        is_app_limited: RS.is_app_limited (the newest acked packet was sent app-limited).
        tx_in_flight_bytes: RS.tx_in_flight (of the newest acked packet), bytes.
        lost_bytes: RS.lost, bytes lost between the newest acked packet's send and now.
        rtt_s: now − send time of the newest acked packet, s (None: no packet acked).
        newly_acked_bytes: bytes acknowledged by this ACK.
        newest_sent_time_s: send time of the newest acked packet, s.
    """

    valid: bool = False
    delivery_rate_bytes_per_s: float = 0.0
    delivered_bytes: int = 0
    interval_s: float = 0.0
    prior_delivered_bytes: int = 0
    is_app_limited: bool = False
    tx_in_flight_bytes: int = 0
    lost_bytes: int = 0
    rtt_s: float | None = None
    newly_acked_bytes: int = 0
    newest_sent_time_s: float | None = None


class DeliveryRateSampler:
    """The connection's delivery counters C.* and the rate sample under construction
    (rate-estimation; draft-ietf-ccwg-bbr "Delivery Rate Samples").

    Use: :meth:`on_packet_sent` for every packet that counts in flight (keep the state it
    returns with the packet); for one ACK, :meth:`on_packet_acked` for each packet it
    acknowledges, then :meth:`generate`; :meth:`on_packet_lost` for each loss;
    :meth:`mark_app_limited` when the sender runs out of data.

    Attributes:
        delivered_bytes: C.delivered, bytes delivered so far.
        delivered_time_s: C.delivered_time, s.
        first_send_time_s: C.first_send_time, s.
        app_limited_bytes: C.app_limited: 0, or the C.delivered at which the current
            app-limited phase ends.
        lost_bytes: C.lost, bytes declared lost so far.
    """

    def __init__(self) -> None:
        self.delivered_bytes = 0
        self.delivered_time_s = 0.0
        self.first_send_time_s = 0.0
        self.app_limited_bytes = 0
        self.lost_bytes = 0
        self._rs = RateSample()
        self._prior_time_s: float | None = None
        self._newest_pn = -1
        self._send_elapsed_s = 0.0
        self._ack_elapsed_s = 0.0
        self._lost_at_newest_bytes = 0

    def on_packet_sent(self, *, packet_number: int, sent_time_s: float, size_bytes: int,
                       bytes_in_flight: int) -> PacketDeliveryState:
        """Snapshot the delivery state for a packet sent at ``sent_time_s`` with
        ``bytes_in_flight`` bytes (excluding it) already in flight (rate-estimation
        OnPacketSent)."""
        if bytes_in_flight == 0:
            # OnPacketSent: a send into an empty pipe restarts both clocks
            self.first_send_time_s = sent_time_s
            self.delivered_time_s = sent_time_s
        return PacketDeliveryState(
            packet_number=packet_number, sent_time_s=sent_time_s, size_bytes=size_bytes,
            delivered_bytes=self.delivered_bytes, delivered_time_s=self.delivered_time_s,
            first_send_time_s=self.first_send_time_s,
            is_app_limited=self.app_limited_bytes != 0,
            tx_in_flight_bytes=bytes_in_flight + size_bytes, lost_bytes=self.lost_bytes)

    def on_packet_acked(self, p: PacketDeliveryState, now_s: float) -> None:
        """Count packet ``p`` as delivered at ``now_s`` and, if it is the newest acked so
        far in this ACK, take the sample's prior state from it (rate-estimation
        UpdateRateSample)."""
        self.delivered_bytes += p.size_bytes
        self.delivered_time_s = now_s
        rs = self._rs
        rs.newly_acked_bytes += p.size_bytes
        newest = (self._prior_time_s is None or p.sent_time_s > self.first_send_time_s
                  or (p.sent_time_s == self.first_send_time_s
                      and p.packet_number > self._newest_pn))
        if newest:
            self._prior_time_s = p.delivered_time_s
            rs.prior_delivered_bytes = p.delivered_bytes
            rs.is_app_limited = p.is_app_limited
            rs.tx_in_flight_bytes = p.tx_in_flight_bytes
            rs.newest_sent_time_s = p.sent_time_s
            rs.rtt_s = now_s - p.sent_time_s
            self._send_elapsed_s = p.sent_time_s - p.first_send_time_s
            self._ack_elapsed_s = self.delivered_time_s - p.delivered_time_s
            self._lost_at_newest_bytes = p.lost_bytes
            self._newest_pn = p.packet_number
            self.first_send_time_s = p.sent_time_s  # UpdateRateSample: next interval from here

    def on_packet_lost(self, p: PacketDeliveryState) -> None:
        """Count ``p``'s bytes as lost (C.lost, draft-ietf-ccwg-bbr "Delivery Rate Samples")."""
        self.lost_bytes += p.size_bytes

    def mark_app_limited(self, bytes_in_flight: int) -> None:
        """The sender has no data to send: samples until what is in flight is delivered are
        app-limited (rate-estimation "Detecting application-limited phases":
        C.app_limited = C.delivered + inflight, or 1)."""
        self.app_limited_bytes = (self.delivered_bytes + bytes_in_flight) or 1

    def generate(self, min_rtt_s: float | None) -> RateSample:
        """Finish this ACK's sample and start a new one (rate-estimation
        GenerateRateSample). ``min_rtt_s``: the connection's min RTT, s (None: unknown);
        samples over a shorter interval are invalid (GenerateRateSample)."""
        rs = self._rs
        self._rs = RateSample()
        if self.app_limited_bytes and self.delivered_bytes > self.app_limited_bytes:
            self.app_limited_bytes = 0  # GenerateRateSample: the bubble is delivered
        if self._prior_time_s is None:
            return rs
        self._prior_time_s = None
        rs.lost_bytes = self.lost_bytes - self._lost_at_newest_bytes
        # GenerateRateSample: the longer of the send and ACK phases (ACK compression)
        rs.interval_s = max(self._send_elapsed_s, self._ack_elapsed_s)
        rs.delivered_bytes = self.delivered_bytes - rs.prior_delivered_bytes
        if rs.interval_s <= 0 or (min_rtt_s is not None and rs.interval_s < min_rtt_s):
            return rs  # GenerateRateSample: not a reliable sample
        rs.valid = True
        rs.delivery_rate_bytes_per_s = rs.delivered_bytes / rs.interval_s
        return rs
