"""The Nuwa ceiling (ceiling.py): Cubic, except that persistent congestion
restarts slow start instead of leaving the window in congestion avoidance."""

from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.packet_builder import QuicSentPacket

from nuwa_server.ceiling import CEILING_NAME, NuwaCeilingCongestionControl
from nuwa_server.session import SessionConfig

MSS = 1200


def _packet(n: int, t: float) -> QuicSentPacket:
    return QuicSentPacket(
        epoch=3,  # type: ignore[arg-type]
        in_flight=True,
        is_ack_eliciting=True,
        is_crypto_packet=False,
        packet_number=n,
        packet_type=0,
        sent_time=t,
        sent_bytes=MSS,
    )


def _acked(cc: CubicCongestionControl, first: int, count: int, sent_s: float, ack_s: float) -> int:
    """Send packets first.. at sent_s and ack each at ack_s; returns the next packet number."""
    for n in range(first, first + count):
        p = _packet(n, sent_s)
        cc.on_packet_sent(packet=p)
        cc.on_packet_acked(now=ack_s, packet=p)
    return first + count


def _outage_then_acks(cc: CubicCongestionControl, late_rtt_s: float | None = None) -> int:
    """Grow, lose a whole flight (an outage), declare persistent congestion, then
    ack 40 packets; returns the window after those acks, bytes."""
    n = 0
    n = _acked(cc, n, 100, 0.0, 0.1)  # slow start to a large window
    flight = [_packet(n + i, 1.0) for i in range(50)]
    n += 50
    for p in flight:
        cc.on_packet_sent(packet=p)
    cc.on_packets_lost(now=13.0, packets=flight)
    cc.on_persistent_congestion()
    assert cc.congestion_window == 2 * MSS  # RFC 9002 §7.6.2 holds in both
    if late_rtt_s is not None:
        # RTT samples of packets that waited through the outage: rising, seconds long.
        for k in range(20):
            cc.on_rtt_measurement(now=13.0 + 0.01 * k, rtt=0.05 + late_rtt_s * k / 20)
    _acked(cc, n, 40, 13.1, 13.2)
    return cc.congestion_window


def test_ceiling_slow_starts_after_persistent_congestion() -> None:
    cubic = _outage_then_acks(CubicCongestionControl(max_datagram_size=MSS))
    ceiling = _outage_then_acks(NuwaCeilingCongestionControl(max_datagram_size=MSS))
    # Slow start: +1 MSS per MSS acked; aioquic's Cubic stays in avoidance.
    assert ceiling == 2 * MSS + 40 * MSS
    assert cubic < ceiling / 4


def test_nuwa_mode_uses_the_ceiling_and_baselines_keep_cubic() -> None:
    assert SessionConfig(cc="nuwa").quic_congestion_control == CEILING_NAME
    assert SessionConfig(cc="cubic").quic_congestion_control == "cubic"
    assert SessionConfig(cc="reno").quic_congestion_control == "reno"


def test_restart_survives_the_outage_rtt_samples_and_ends_at_the_old_window() -> None:
    """aioquic's RTT monitor would end slow start on the outage's late samples."""
    cubic = _outage_then_acks(CubicCongestionControl(max_datagram_size=MSS), late_rtt_s=12.0)
    ceiling_cc = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    ceiling = _outage_then_acks(ceiling_cc, late_rtt_s=12.0)
    assert ceiling == 2 * MSS + 40 * MSS
    assert cubic < ceiling / 4
    # Once back at the window before the loss, Cubic's own rules apply again.
    assert ceiling_cc._restart_target_bytes is not None
    ceiling_cc.congestion_window = ceiling_cc._restart_target_bytes
    ceiling_cc.on_rtt_measurement(now=20.0, rtt=0.05)
    assert ceiling_cc._restart_target_bytes is None


def test_a_new_loss_ends_the_restart() -> None:
    cc = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    _outage_then_acks(cc)
    assert cc._restart_target_bytes is not None
    p = _packet(10_000, 14.0)
    cc.on_packet_sent(packet=p)
    cc.on_packets_lost(now=14.5, packets=[p])
    assert cc._restart_target_bytes is None
    assert cc.ssthresh is not None  # Cubic's multiplicative decrease, avoidance again


def test_losses_found_long_after_sending_restart_slow_start_without_persistent_congestion() -> None:
    """After an outage aioquic may declare the dark period's packets lost without persistent
    congestion (seen end to end on Lumos LTE: the ceiling then grew ~20 packets per second)."""

    def run(cc: CubicCongestionControl) -> int:
        n = 0
        n = _acked(cc, n, 100, 0.0, 0.1)
        cc.on_rtt_measurement(now=0.1, rtt=0.05)
        lost = [_packet(n + i, 1.0) for i in range(5)]
        n += 5
        for p in lost:
            cc.on_packet_sent(packet=p)
        cc.on_packets_lost(now=13.0, packets=lost)  # 12 s after sending; no persistent congestion
        for k in range(10):  # the outage's late RTT samples
            cc.on_rtt_measurement(now=13.0 + 0.01 * k, rtt=0.05 + 12.0 * k / 10)
        _acked(cc, n, 40, 13.1, 13.2)
        return cc.congestion_window

    w_cubic = run(CubicCongestionControl(max_datagram_size=MSS))
    ceiling = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    w_ceiling = run(ceiling)
    assert w_ceiling >= w_cubic + 30 * MSS  # slow start: +1 MSS per MSS acked
    # An ordinary loss (found within an RTT) is Cubic as usual.
    cc = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    for i in range(100):
        p = _packet(i, 0.0)
        cc.on_packet_sent(packet=p)
        cc.on_packet_acked(now=0.1, packet=p)
    cc.on_rtt_measurement(now=0.1, rtt=0.05)
    p = _packet(100, 1.0)
    cc.on_packet_sent(packet=p)
    cc.on_packets_lost(now=1.06, packets=[p])
    assert cc.ssthresh is not None and cc._restart_target_bytes is None


def test_idle_reset_during_an_outage_restarts_slow_start_through_the_late_rtt_samples() -> None:
    """aioquic's Cubic resets its window when a packet goes out 2 s after the last ACK (a PTO
    probe in an outage) and then leaves slow start on the first rising RTT: the outage's late
    samples. Seen on full-capacity Lumos LTE: the ceiling went 871 → 18 packets and regrew
    ~1 packet per RTT. The ceiling keeps slow start until the window before the silence."""

    def run(cc: CubicCongestionControl) -> int:
        # (sent at 0.5 s: aioquic reads a last-ACKed send time of 0.0 as "none yet")
        n = _acked(cc, 0, 100, 0.5, 0.6)
        for k in range(5):
            cc.on_rtt_measurement(now=0.6 + 0.01 * k, rtt=0.05)
        for k in range(3):  # PTO probes into the dark link, 3 s, 5 s, 9 s after the last ACK
            cc.on_packet_sent(packet=_packet(n, 3.0 + 2.0 * k * k))
            n += 1
        assert cc.congestion_window == 10 * MSS  # aioquic's idle reset (K_CUBIC_MAX_IDLE_TIME)
        first = _packet(n, 12.0)  # the link is back: the first packet sent resets once more
        n += 1
        cc.on_packet_sent(packet=first)
        cc.on_packet_acked(now=12.05, packet=first)
        for k in range(10):  # the outage's late RTT samples: packets that waited through it
            cc.on_rtt_measurement(now=12.05 + 0.01 * k, rtt=11.5 - 0.01 * k)
        cc.on_rtt_measurement(now=12.2, rtt=0.05)  # then the link's own RTT again
        _acked(cc, n, 40, 12.1, 12.2)
        return cc.congestion_window

    w_cubic = run(CubicCongestionControl(max_datagram_size=MSS))
    ceiling = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    w_ceiling = run(ceiling)
    assert w_ceiling == 10 * MSS + 41 * MSS  # slow start: +1 MSS per MSS acked
    assert w_cubic < 15 * MSS  # aioquic alone: avoidance from the reset window
    assert ceiling._restart_target_bytes is not None and ceiling._restart_target_bytes >= 100 * MSS
    # A later outage-age loss keeps the larger target.
    late = _packet(10_000, 12.1)
    ceiling.on_packet_sent(packet=late)
    ceiling.on_packets_lost(now=14.0, packets=[late])
    assert ceiling._restart_target_bytes >= 100 * MSS and ceiling.ssthresh is None


def test_no_restart_without_idleness() -> None:
    cc = NuwaCeilingCongestionControl(max_datagram_size=MSS)
    for i in range(100):
        p = _packet(i, 0.01 * i)
        cc.on_packet_sent(packet=p)
        cc.on_packet_acked(now=0.01 * i + 0.05, packet=p)
    assert cc._restart_target_bytes is None
