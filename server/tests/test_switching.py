"""Live controller switching (nuwa_server/cc/switching.py): what each mode carries over."""

from __future__ import annotations

import pytest
from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import QuicPacketPacer, QuicPacketRecovery

from nuwa_server.cc.bbr import BBR_CC_NAME, BbrCongestionControl
from nuwa_server.cc.bbr_model import INF, BbrState
from nuwa_server.cc.hystart import HYSTART_CC_NAME, HyStartCubicCongestionControl
from nuwa_server.cc.pacing import ControllerPacer
from nuwa_server.cc.switching import switch_controller
from nuwa_server.ceiling import CEILING_NAME, NuwaCeilingCongestionControl

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

MSS = 1200


def recovery(cc: str) -> QuicPacketRecovery:
    r = QuicPacketRecovery(congestion_control_algorithm=cc, initial_rtt=0.1,
                           max_datagram_size=MSS, peer_completed_address_validation=True,
                           send_probe=lambda: None)
    if cc == BBR_CC_NAME:
        from nuwa_server.cc.pacing import install_controller_pacer
        install_controller_pacer(r)
    return r


class Flow:
    """Sends and ACKs through ``loss._cc`` as aioquic's recovery does; RTT 50 ms."""

    def __init__(self, loss: QuicPacketRecovery) -> None:
        self.loss = loss
        self.pn = 0
        self.t = 0.0

    def send(self, n: int) -> list[QuicSentPacket]:
        out = []
        for _ in range(n):
            p = QuicSentPacket(epoch=3, in_flight=True, is_ack_eliciting=True,  # type: ignore[arg-type]
                               is_crypto_packet=False, packet_number=self.pn,
                               packet_type=0, sent_time=self.t, sent_bytes=MSS)  # type: ignore[arg-type]
            self.pn += 1
            self.loss._cc.on_packet_sent(packet=p)
            out.append(p)
        return out

    def ack(self, packets: list[QuicSentPacket]) -> None:
        self.t += 0.05
        for p in packets:
            self.loss._cc.on_packet_acked(now=self.t, packet=p)
        self.loss._cc.on_rtt_measurement(now=self.t, rtt=0.05)
        # the connection's RTT estimator (RFC 9002 §5), as aioquic keeps it in the recovery
        self.loss._rtt_initialized = True
        self.loss._rtt_min = 0.05 if not self.loss._rtt_min else min(self.loss._rtt_min, 0.05)
        self.loss._rtt_smoothed = 0.05
        self.loss._rtt_latest = 0.05

    def rounds(self, n: int, flight: int) -> None:
        for _ in range(n):
            self.ack(self.send(flight))


def grown_cubic(name: str = "cubic") -> tuple[QuicPacketRecovery, Flow]:
    """A Cubic flow past slow start (a loss set W_max) with 8 packets in flight."""
    loss = recovery(name)
    f = Flow(loss)
    f.rounds(4, 40)
    lost = f.send(2)
    f.t += 0.05
    loss._cc.on_packets_lost(now=f.t, packets=lost)
    f.rounds(3, 30)
    f.send(8)
    return loss, f


def test_unrestricted_cubic_to_ceiling_carries_cubic_private_state() -> None:
    loss, f = grown_cubic()
    old = loss._cc
    w_max, k, cwnd, ssthresh = old._W_max, old.K, old.congestion_window, old.ssthresh
    assert ssthresh is not None and w_max > 0 and old.bytes_in_flight == 8 * MSS
    rec = switch_controller(loss, CEILING_NAME, "unrestricted", f.t)
    new = loss._cc
    assert isinstance(new, NuwaCeilingCongestionControl) and new is not old
    assert (new.congestion_window, new.ssthresh, new.bytes_in_flight) == (cwnd, ssthresh, 8 * MSS)
    assert (new._W_max, new.K) == (w_max, k)
    assert "_W_max" in rec.carried and rec.bytes_in_flight == 8 * MSS
    assert rec.to_cc == CEILING_NAME and rec.mode == "unrestricted"


def test_limited_switch_keeps_connection_state_and_resets_private_state() -> None:
    loss, f = grown_cubic()
    old = loss._cc
    cwnd, ssthresh = old.congestion_window, old.ssthresh
    rtt_min, srtt = loss._rtt_min, loss._rtt_smoothed
    rec = switch_controller(loss, CEILING_NAME, "limited", f.t)
    new = loss._cc
    assert (new.congestion_window, new.ssthresh, new.bytes_in_flight) == (cwnd, ssthresh, 8 * MSS)
    fresh = NuwaCeilingCongestionControl(MSS)
    assert old._W_max != fresh._W_max == new._W_max  # private: from defaults
    assert "_W_max" not in rec.carried
    assert (loss._rtt_min, loss._rtt_smoothed) == (rtt_min, srtt)  # connection-level RTT


def test_packets_sent_before_a_switch_are_accounted_after_it() -> None:
    """Bytes in flight move with the switch, so ACKs of packets the old controller sent
    bring the new one's flight back to zero (neither negative nor stuck)."""
    for to, mode in ((CEILING_NAME, "limited"), (BBR_CC_NAME, "unrestricted"),
                     (BBR_CC_NAME, "limited"), ("reno", "limited")):
        loss, f = grown_cubic()
        flight = f.send(5)
        switch_controller(loss, to, mode, f.t)  # type: ignore[arg-type]
        assert loss._cc.bytes_in_flight == 13 * MSS
        f.ack(flight)
        assert loss._cc.bytes_in_flight == 8 * MSS


def test_into_bbr_from_the_ceiling_the_bandwidth_in_use_is_at_most_its_pipeack() -> None:
    """The Nuwa ceiling's window only caps the grants': after a probe it may hold a Cubic
    stint's window while the grants allow a tenth of it. BBR's first bandwidth sample is
    then the window in use, at most the ceiling's pipeACK (RFC 7661 §4.2) ÷ sRTT; with no
    round in pipeACK's period, the window."""
    from collections import deque

    loss, f = grown_cubic(CEILING_NAME)
    cwnd = loss._cc.congestion_window
    assert cwnd > 10 * MSS
    loss._cc._pipeack_samples = deque([(f.t, 5 * MSS)])  # type: ignore[attr-defined]
    rec = switch_controller(loss, BBR_CC_NAME, "unrestricted", f.t)
    assert loss._cc.max_bw_bytes_per_s == pytest.approx(5 * MSS / 0.05)
    assert rec.seeded["pipeack_bytes"] == 5 * MSS
    loss2, f2 = grown_cubic(CEILING_NAME)
    loss2._cc._pipeack_samples = deque()  # type: ignore[attr-defined]
    rec2 = switch_controller(loss2, BBR_CC_NAME, "unrestricted", f2.t)
    assert loss2._cc.max_bw_bytes_per_s == pytest.approx(loss2._cc.congestion_window / 0.05)
    assert "pipeack_bytes" not in rec2.seeded


def test_unrestricted_into_bbr_seeds_min_rtt_and_bandwidth_limited_starts_fresh() -> None:
    loss, f = grown_cubic()
    cwnd = loss._cc.congestion_window
    rec = switch_controller(loss, BBR_CC_NAME, "unrestricted", f.t)
    bbr = loss._cc
    assert isinstance(bbr, BbrCongestionControl) and isinstance(loss._pacer, ControllerPacer)
    assert bbr.min_rtt_s == pytest.approx(0.05)  # Linux bbr_init: tcp_min_rtt()
    assert bbr.max_bw_bytes_per_s == pytest.approx(cwnd / 0.05)
    assert bbr.full_bw_reached and bbr.state is BbrState.DRAIN
    assert bbr.pacing_rate_bytes_per_s < cwnd / 0.05  # draining, not Startup's 2.77×
    assert rec.seeded["min_rtt_s"] == pytest.approx(0.05)
    loss2, f2 = grown_cubic()
    switch_controller(loss2, BBR_CC_NAME, "limited", f2.t)
    fresh = loss2._cc
    assert fresh.min_rtt_s == INF and fresh.state is BbrState.STARTUP
    assert not fresh.full_bw_reached and fresh.congestion_window == cwnd


def test_bbr_to_bbr_unrestricted_carries_delivery_rate_state() -> None:
    loss = recovery(BBR_CC_NAME)
    f = Flow(loss)
    f.rounds(12, 20)
    old = loss._cc
    assert old.max_bw_bytes_per_s > 0
    switch_controller(loss, BBR_CC_NAME, "unrestricted", f.t)
    new = loss._cc
    assert new is not old and new._sampler is old._sampler
    assert new.max_bw_bytes_per_s == old.max_bw_bytes_per_s and new.state is old.state
    switch_controller(loss, BBR_CC_NAME, "limited", f.t)
    assert loss._cc._sampler is not old._sampler and loss._cc.max_bw_bytes_per_s == 0


def test_bbr_to_cubic_leaves_the_controller_pacer_and_skips_slow_start() -> None:
    loss = recovery(BBR_CC_NAME)
    f = Flow(loss)
    f.rounds(12, 20)
    assert loss._cc.full_bw_reached
    cwnd = loss._cc.congestion_window
    switch_controller(loss, "cubic", "unrestricted", f.t)
    assert type(loss._pacer) is QuicPacketPacer
    assert loss._cc.ssthresh == cwnd  # congestion avoidance from the inherited window


def test_bad_mode_or_name_is_refused_and_leaves_the_controller() -> None:
    loss, f = grown_cubic()
    old = loss._cc
    with pytest.raises(ValueError, match="mode"):
        switch_controller(loss, "cubic", "partial", f.t)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="vegas"):
        switch_controller(loss, "vegas", "limited", f.t)
    assert loss._cc is old


# ---------------------------------------------------------------- a Nuwa connection

def nuwa_sessions(config, n: int = 2):
    from nuwa_server.session import NuwaSession
    return [NuwaSession(4 * i, f"s{i}", config, None, 0) for i in range(n)]


def test_set_control_mode_moves_a_nuwa_connection_between_grants_and_its_controller() -> None:
    """Sender-driven: grants advisory on every session, Cubic governs (carrying the
    ceiling's Cubic state); receiver-driven again: grants bind, the ceiling is back."""
    from nuwa_server.config import SessionConfig
    from nuwa_server.switch_policy import RECEIVER, SENDER
    from nuwa_server.switcher import set_control_mode

    config = SessionConfig(switch="rule").validate()
    loss, f = grown_cubic(CEILING_NAME)
    sessions = nuwa_sessions(config)
    assert all(s.grants.config.enforce for s in sessions)
    cwnd = loss._cc.congestion_window
    rec = set_control_mode(loss, [s.grants for s in sessions], config, SENDER, 5_000_000)
    assert type(loss._cc).__name__ == "CubicCongestionControl" and rec.to_cc == "cubic"
    assert loss._cc.congestion_window == cwnd and rec.now_s == 5.0
    assert not any(s.grants.config.enforce for s in sessions)
    assert sessions[0].grants.budget(5_000_000, 0).window_bytes is None  # grants advisory
    set_control_mode(loss, [s.grants for s in sessions], config, RECEIVER, 9_000_000)
    assert isinstance(loss._cc, NuwaCeilingCongestionControl)
    assert all(s.grants.config.enforce for s in sessions)
    hystart = SessionConfig(switch="rule", sender_cc=HYSTART_CC_NAME).validate()  # on request
    rec = set_control_mode(loss, [s.grants for s in sessions], hystart, SENDER, 9_500_000)
    assert isinstance(loss._cc, HyStartCubicCongestionControl) and rec.to_cc == HYSTART_CC_NAME
    set_control_mode(loss, [s.grants for s in sessions], config, RECEIVER, 9_800_000)
    bbr_config = SessionConfig(switch="rule", sender_cc="bbr", switch_mode="limited").validate()
    set_control_mode(loss, [s.grants for s in sessions], bbr_config, SENDER, 10_000_000)
    assert isinstance(loss._cc, BbrCongestionControl) and loss._cc.state is BbrState.STARTUP


def switcher_on_a_ceiling():
    """A rule-switched connection on the Cubic ceiling, past slow start, with one session
    whose min RTT is 50 ms, and its :class:`ConnectionSwitcher` from t = 0."""
    from nuwa_server.config import SessionConfig
    from nuwa_server.switcher import ConnectionSwitcher

    config = SessionConfig(switch="rule").validate()
    loss, _ = grown_cubic(CEILING_NAME)
    sessions = nuwa_sessions(config, 1)
    sessions[0].rtt_min_us = 50_000
    return loss, sessions, ConnectionSwitcher(config, 0)


def test_connection_switcher_acts_on_grants_that_show_a_standing_queue() -> None:
    """Grants at the floor window whose echoes show a queue that never drains for Y
    switch the connection to sender-driven (one switch, counted on each session). The rule
    asks for a packet train once it suspects a competitor and, with no answer (these grants
    echo no frame), waits Y for one before it acts: at 6 s, not 3 s."""
    from nuwa_server.grants import GrantDecision

    loss, sessions, sw = switcher_on_a_ceiling()
    records = []
    for k in range(1, 160):  # 8 s of grants every 50 ms: window 1200, RTT 450 ms
        t = k * 50_000
        sw.on_grant(sessions[0], GrantDecision(True, "ok", None, 1200, 0, 450_000), t)
        rec = sw.poll(loss, sessions, t, 4433)
        if rec is not None:
            records.append((t, rec))
    assert len(records) == 1 and 6_000_000 <= records[0][0] <= 6_300_000
    assert sessions[0].train.pending  # asked for, never written (no data)
    assert sw.mode == "sender" and sessions[0].switches == 1
    assert not sessions[0].grants.config.enforce


def test_the_switcher_installs_the_controller_the_rule_chooses() -> None:
    """A rule that found a competitor whose queue drains (``drained_sender_cc``,
    switch_policy module doc) names the sender-driven controller; the switcher installs it
    (BBR here) instead of ``--sender-cc``, and the ceiling again on the way back."""
    from nuwa_server.switch_policy import RECEIVER, SENDER

    loss, sessions, sw = switcher_on_a_ceiling()

    class Chooser:  # the rule's interface as the switcher uses it
        mode = RECEIVER
        target = SENDER

        def decide(self, now_us: int) -> str:
            return self.target

        def sender_cc(self, default: str) -> str:
            assert default == "cubic"
            return "bbr"

        def switched(self, now_us: int, mode: str) -> None:
            self.mode = mode

    sw.policy = Chooser()  # type: ignore[assignment]
    rec = sw.poll(loss, sessions, 1_000_000, 4433)
    assert rec is not None and rec.to_cc == "bbr" and isinstance(loss._cc, BbrCongestionControl)
    assert not sessions[0].grants.config.enforce
    sw.policy.target = RECEIVER  # type: ignore[attr-defined]
    rec = sw.poll(loss, sessions, 2_000_000, 4433)
    assert rec is not None and isinstance(loss._cc, NuwaCeilingCongestionControl)
    assert sessions[0].grants.config.enforce


def _switch_through_a_probe(probe_s: float, rtt_during_probe_us: int):
    """The rule's whole cycle on one connection: a standing queue (grants at the floor, RTT
    450 ms over a 50 ms base) for 3 s moves it to sender-driven; 20 s later it probes back
    to receiver-driven, where the ceiling follows the few packets the grants allow (set
    here as the ceiling would leave it); the grants' RTT during the probe is
    ``rtt_during_probe_us`` for ``probe_s``, then the standing queue again."""
    from nuwa_server.grants import GrantDecision

    loss, sessions, sw = switcher_on_a_ceiling()
    seen = []
    sender_cwnd = None
    probe_at = None
    for k in range(1, 1200):  # 60 s of grants every 50 ms
        t = k * 50_000
        rtt = 450_000
        if probe_at is not None and t < probe_at + probe_s * 1e6:
            rtt = rtt_during_probe_us
        sw.on_grant(sessions[0], GrantDecision(True, "ok", None, 1200, 0, rtt), t)
        if sw.mode == "sender":
            loss._cc.congestion_window = 300 * MSS  # the share its stint reached
        rec = sw.poll(loss, sessions, t, 4433)
        if rec is None:
            continue
        if sw.mode == "receiver":
            sender_cwnd, probe_at = 300 * MSS, t
            loss._cc.congestion_window = 4 * MSS  # the ceiling under the probe's grants
        seen.append((t, sw.mode, loss._cc.congestion_window))
        if len(seen) == 3:
            return seen, sender_cwnd, sw, loss
    raise AssertionError(f"no probe and return: {seen}")


def test_a_failed_probe_gives_the_sender_driven_window_back() -> None:
    """Back to sender-driven within the probe's span (the competitor is still there): Cubic
    resumes with the window and state of its stint, not the probe's few packets
    (draft-ietf-ccwg-bbr's BBRRestoreCwnd; cc.switching.restore_after_probe)."""
    seen, sender_cwnd, sw, loss = _switch_through_a_probe(0.0, 450_000)
    (t1, m1, _), (t2, m2, w2), (t3, m3, w3) = seen
    assert (m1, m2, m3) == ("sender", "receiver", "sender") and w2 == 4 * MSS
    assert t3 - t2 < 10_000_000 and w3 == sender_cwnd
    assert len(sw.restored) == 1 and sw.restored[0]["congestion_window"] == sender_cwnd
    # Cubic's epoch moved on by the probe's length (RFC 9438 §5.8)
    assert sw.restored[0]["_t_epoch"] >= (t3 - t2) / 1e6


def test_a_probe_that_held_restores_nothing() -> None:
    """A probe that held (no standing queue for longer than its span: the competitor left)
    and a later return to sender-driven start from the window in use then."""
    seen, _, sw, loss = _switch_through_a_probe(20.0, 60_000)
    (_, m1, _), (t2, m2, _), (t3, m3, w3) = seen
    assert (m1, m2, m3) == ("sender", "receiver", "sender") and t3 - t2 > 20_000_000
    assert sw.restored == [] and w3 == 4 * MSS


def test_restore_after_probe_refuses_time_travel_and_other_families() -> None:
    from nuwa_server.cc.switching import restore_after_probe

    loss, f = grown_cubic()
    saved = loss._cc
    switch_controller(loss, BBR_CC_NAME, "limited", f.t)
    assert restore_after_probe(loss, saved, f.t, f.t + 1) == {}  # BBR keeps its own model
    switch_controller(loss, "cubic", "limited", f.t)
    with pytest.raises(ValueError, match="before"):
        restore_after_probe(loss, saved, f.t + 1, f.t)
    loss._cc.congestion_window = saved.congestion_window + MSS
    assert restore_after_probe(loss, saved, f.t, f.t + 1) == {}  # max(cwnd, prior)


def test_switch_config_is_validated() -> None:
    from nuwa_server.config import SessionConfig

    with pytest.raises(ValueError, match="needs cc 'nuwa'"):
        SessionConfig(cc="cubic", switch="rule").validate()
    with pytest.raises(ValueError, match="sender_cc"):
        SessionConfig(switch="rule", sender_cc="vegas").validate()
    with pytest.raises(ValueError, match="switch_mode"):
        SessionConfig(switch="rule", switch_mode="partial").validate()
