"""Cubic with RFC 9406's HyStart++ slow start (nuwa_server/cc/hystart.py), driven by a
scripted sender and ACK clock: each round sends the window, then ACKs it with a given RTT."""

from __future__ import annotations

import pytest
from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import QuicPacketRecovery
from bbr_sim import MSS, Script

from nuwa_server.cc.hystart import (
    CSS_GROWTH_DIVISOR,
    CSS_ROUNDS,
    HYSTART_CC_NAME,
    MAX_RTT_THRESH_S,
    MIN_RTT_THRESH_S,
    HyStartCubicCongestionControl,
)
from nuwa_server.cc.switching import switch_controller
from nuwa_server.ceiling import CEILING_NAME

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


class Clock(Script):
    """:class:`bbr_sim.Script`'s send vocabulary with a clock: :meth:`round` sends the window,
    then ACKs it packet by packet at ``rtt_s`` each, as aioquic's recovery does
    (on_packet_acked per packet, one RTT sample per ACK)."""

    def __init__(self, cc: HyStartCubicCongestionControl) -> None:
        super().__init__(cc)  # type: ignore[arg-type]  # any aioquic controller takes the script
        self.t = 0.0

    def send_now(self, n: int) -> list[QuicSentPacket]:
        """``n`` packets of MSS at the clock's time."""
        return self.send(n, self.t)

    def round(self, rtt_s: float) -> int:
        """One round trip: the whole window out, every packet ACKed with ``rtt_s``.
        Returns the window before the round, bytes."""
        cwnd = self.cc.congestion_window
        packets = self.send_now(max(1, cwnd // MSS))
        self.t += rtt_s
        for p in packets:
            self.t += 1e-4
            self.cc.on_packet_acked(now=self.t, packet=p)
            self.cc.on_rtt_measurement(now=self.t, rtt=rtt_s)
        return cwnd


def new_cc() -> HyStartCubicCongestionControl:
    return HyStartCubicCongestionControl(max_datagram_size=MSS)


def in_css() -> tuple[HyStartCubicCongestionControl, Clock]:
    """Two rounds at 50 ms, then one at 70 ms (over last round's + 6.25 ms): in CSS."""
    cc = new_cc()
    clock = Clock(cc)
    clock.round(0.050)
    clock.round(0.050)
    clock.round(0.070)
    assert cc.css_baseline_min_rtt_s == pytest.approx(0.070)
    return cc, clock


def test_registered_with_aioquic_by_name() -> None:
    r = QuicPacketRecovery(congestion_control_algorithm=HYSTART_CC_NAME, initial_rtt=0.1,
                           max_datagram_size=MSS, peer_completed_address_validation=True,
                           send_probe=lambda: None)
    assert isinstance(r._cc, HyStartCubicCongestionControl)


def test_flat_rtt_keeps_standard_slow_start() -> None:
    """RFC 9406 §4.2: while no round's minimum RTT rises, the window doubles per round."""
    cc = new_cc()
    clock = Clock(cc)
    for _ in range(6):
        before = clock.round(0.050)
        assert cc.congestion_window == 2 * before
    assert cc.ssthresh is None and cc.css_baseline_min_rtt_s is None and cc.css_entries == 0


def test_a_rise_of_rtt_thresh_enters_css_then_congestion_avoidance_after_css_rounds() -> None:
    """A round whose minimum RTT is last round's + clamp(last/8, 4, 16 ms) enters CSS
    (growth at 1/CSS_GROWTH_DIVISOR of slow start's); after CSS_ROUNDS rounds in CSS,
    congestion avoidance with ssthresh = cwnd (RFC 9406 §4.2)."""
    cc = new_cc()
    clock = Clock(cc)
    clock.round(0.050)
    clock.round(0.050)
    # last round 50 ms: RttThresh = 50/8 = 6.25 ms; 56 ms is under it, 57 ms over
    before = clock.round(0.056)
    assert cc.css_baseline_min_rtt_s is None and cc.congestion_window == 2 * before
    clock.round(0.0630)
    assert cc.css_baseline_min_rtt_s == pytest.approx(0.0630) and cc.css_entries == 1
    for k in range(CSS_ROUNDS - 1):
        before = clock.round(0.0630)
        grown = cc.congestion_window - before
        assert grown == pytest.approx(before / CSS_GROWTH_DIVISOR, abs=MSS), k
        assert cc.ssthresh is None
    clock.round(0.0630)  # the round that completes CSS_ROUNDS ends CSS at its start
    assert cc.ssthresh is not None and cc.css_baseline_min_rtt_s is None
    assert cc.ssthresh <= cc.congestion_window


def test_rtt_under_the_baseline_in_css_resumes_slow_start() -> None:
    """RFC 9406 §4.2: in CSS, a round's minimum RTT under cssBaselineMinRtt means the
    rise was spurious: slow start again, with its doubling."""
    cc, clock = in_css()  # asserts the CSS entry at 70 ms
    clock.round(0.060)  # under the baseline
    assert cc.css_baseline_min_rtt_s is None and cc.ssthresh is None
    before = clock.round(0.060)
    assert cc.congestion_window == 2 * before


def test_rtt_thresh_is_clamped_to_4_and_16_ms() -> None:
    """RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / 8, MAX_RTT_THRESH)):
    on a 1 s path a rise of 20 ms (2 %) is enough, on a 10 ms path 3 ms (30 %) is not."""
    assert (MIN_RTT_THRESH_S, MAX_RTT_THRESH_S) == (0.004, 0.016)
    long = new_cc()
    c = Clock(long)
    c.round(1.0)
    c.round(1.0)
    c.round(1.0 + MAX_RTT_THRESH_S + 0.004)
    assert long.css_entries == 1
    short = new_cc()
    c = Clock(short)
    c.round(0.010)
    c.round(0.010)
    c.round(0.013)
    assert short.css_entries == 0 and short.ssthresh is None


def test_too_few_samples_judge_nothing() -> None:
    """A round with fewer than N_RTT_SAMPLE (8) RTT samples is not judged: the initial
    window's first rounds of 10 packets are, a 4-packet round is not."""
    cc = new_cc()
    clock = Clock(cc)
    clock.round(0.050)
    packets = clock.send_now(4)
    clock.t += 0.2
    for p in packets:
        cc.on_packet_acked(now=clock.t, packet=p)
        cc.on_rtt_measurement(now=clock.t, rtt=0.2)
    assert cc.css_entries == 0


def test_loss_in_css_enters_congestion_avoidance() -> None:
    """RFC 9406 §4.2: a loss in slow start or CSS ends both (Cubic's reduction)."""
    cc, clock = in_css()  # asserts the CSS entry at 70 ms
    lost = clock.send_now(2)
    cwnd = cc.congestion_window
    clock.t += 0.1
    cc.on_packets_lost(now=clock.t, packets=lost)
    assert cc.ssthresh is not None and cc.congestion_window < cwnd
    before = cc.congestion_window
    clock.round(0.050)
    assert cc.congestion_window < 1.5 * before  # Cubic's avoidance, not CSS's or slow start's


def test_reset_starts_hystart_afresh() -> None:
    """Cubic's reset (idle restart) clears the rounds: the next slow start is judged anew."""
    cc, clock = in_css()  # asserts the CSS entry at 70 ms
    cc.reset()
    assert cc.ssthresh is None and cc.css_baseline_min_rtt_s is None
    before = clock.round(0.300)
    assert cc.congestion_window == 2 * before  # no round before it to compare with


def test_switch_from_the_ceiling_starts_hystart_from_the_inherited_window() -> None:
    """The switch rule's case: the ceiling's window, no ssthresh yet, and a path whose RTT
    is already a competitor's standing queue. The first round doubles; the next one's
    rise (our own queue) enters CSS rather than ending slow start as aioquic's monitor
    does on a fresh controller."""
    r = QuicPacketRecovery(congestion_control_algorithm=CEILING_NAME, initial_rtt=0.1,
                           max_datagram_size=MSS, peer_completed_address_validation=True,
                           send_probe=lambda: None)
    r._cc.congestion_window = 200 * MSS
    switch_controller(r, HYSTART_CC_NAME, "unrestricted", 5.0)
    cc = r._cc
    assert isinstance(cc, HyStartCubicCongestionControl) and cc.ssthresh is None
    assert cc.congestion_window == 200 * MSS
    clock = Clock(cc)
    clock.t = 5.0
    clock.round(0.400)  # 400 ms: a Cubic download's queue
    assert cc.congestion_window == 400 * MSS
    clock.round(0.600)  # our 200 packets more queue
    assert cc.css_baseline_min_rtt_s == pytest.approx(0.600) and cc.ssthresh is None
