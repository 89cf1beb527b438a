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


def _outage_then_acks(cc: CubicCongestionControl) -> int:
    """Grow, lose a whole flight (an outage), declare persistent congestion, then
    ack 40 packets; returns the window after those acks, bytes."""
    n = 0
    for _ in range(100):  # slow start to a large window
        p = _packet(n, 0.0)
        cc.on_packet_sent(packet=p)
        cc.on_packet_acked(now=0.1, packet=p)
        n += 1
    flight = [_packet(n + i, 1.0) for i in range(50)]
    n += 50
    for p in flight:
        cc.on_packet_sent(packet=p)
    cc.on_packets_lost(now=13.0, packets=flight)
    cc.on_persistent_congestion()
    assert cc.congestion_window == 2 * MSS  # RFC 9002 §7.6.2 holds in both
    for i in range(40):
        p = _packet(n + i, 13.1)
        cc.on_packet_sent(packet=p)
        cc.on_packet_acked(now=13.2, packet=p)
    return cc.congestion_window


def test_ceiling_slow_starts_after_persistent_congestion() -> None:
    cubic = _outage_then_acks(CubicCongestionControl(max_datagram_size=MSS))
    ceiling = _outage_then_acks(NuwaCeilingCongestionControl(max_datagram_size=MSS))
    # Slow start: +1 MSS per MSS acked; aioquic's Cubic stays in avoidance.
    assert ceiling == 2 * MSS + 40 * MSS
    assert cubic < ceiling / 4


def test_nuwa_and_oracle_modes_use_the_ceiling_and_baselines_keep_cubic() -> None:
    assert SessionConfig(cc="nuwa").quic_congestion_control == CEILING_NAME
    assert SessionConfig(cc="oracle").quic_congestion_control == CEILING_NAME
    assert SessionConfig(cc="cubic").quic_congestion_control == "cubic"
    assert SessionConfig(cc="reno").quic_congestion_control == "reno"
