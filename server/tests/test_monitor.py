"""The flow monitor (nuwa_server/monitor.py) and the rule-based switching policy
(nuwa_server/switch_policy.py), under a simulated clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from switch_inputs import replay_switch_inputs

from nuwa_server.monitor import FlowMonitor, MonitorConfig, jain_index
from nuwa_server.switch_policy import RECEIVER, SENDER, RuleConfig, RuleSwitchPolicy

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

MS = 1000
S = 1_000_000


def feed(mon: FlowMonitor, rates_bps: dict[int, float], t0: int, t1: int,
         step: int = 100 * MS, rtt_us: dict[int, list[int]] | None = None) -> int:
    """Each flow delivers at its rate from t0 to t1 (counters every ``step``); RTTs cycle
    through ``rtt_us[flow]``; returns t1."""
    delivered = {i: 0 for i in rates_bps}
    k = 0
    for t in range(t0, t1 + 1, step):
        for i, r in rates_bps.items():
            if t > t0:
                delivered[i] += int(r * step / 8e6)
            mon.on_counters(i, t, delivered[i], sent_packets=10 * k,
                            lost_packets=k // 2)
            if rtt_us:
                mon.on_rtt(i, t, rtt_us[i][k % len(rtt_us[i])])
        k += 1
    return t1


def test_throughput_rtt_jitter_loss_over_the_window() -> None:
    mon = FlowMonitor(MonitorConfig(window_us=2 * S))
    mon.add_flow(1, 0)
    feed(mon, {1: 8e6}, 0, 4 * S, rtt_us={1: [50 * MS, 60 * MS]})
    mon.on_window(1, 24_000)
    s = mon.flow_stats(1, 4 * S)
    assert s.throughput_bps == pytest.approx(8e6, rel=0.01)
    assert s.rtt_ms == pytest.approx(55, abs=0.5)
    assert s.jitter_ms == pytest.approx(10)  # |60 − 50| every sample
    assert s.loss_rate == pytest.approx(0.05, abs=0.01)
    assert s.window_bytes == 24_000
    assert s.queuing_delay_ms in (0, 10) and s.min_queuing_delay_ms == 0


def test_jain_flags_unfairness_only_among_flows_present_the_whole_window() -> None:
    mon = FlowMonitor(MonitorConfig(window_us=2 * S))
    mon.add_flow(1, 0)
    mon.add_flow(2, 0)
    t = feed(mon, {1: 9e6, 2: 1e6}, 0, 3 * S)
    r = mon.report(t)
    assert r.jain_index == pytest.approx(jain_index([9e6, 1e6]), rel=0.02)
    assert r.jain_index < 0.8 and r.unfair
    mon2 = FlowMonitor(MonitorConfig(window_us=2 * S))
    mon2.add_flow(1, 0)
    mon2.add_flow(2, 0)
    t = feed(mon2, {1: 5e6, 2: 5e6}, 0, 3 * S)
    assert not mon2.report(t).unfair
    mon2.add_flow(3, t)  # a newcomer is not judged before a full window
    assert len(mon2.report(t).flows) == 3 and not mon2.report(t).unfair


def test_starvation_needs_more_than_five_seconds_below_a_fifth_of_the_fair_share() -> None:
    """Arun et al. (SIGCOMM 2022) in the issue's operational form: < 20 % of the fair share
    for > 5 s. 4.9 s below is not starvation; 5.2 s is; recovering clears it."""
    mon = FlowMonitor(MonitorConfig(window_us=1 * S))
    mon.add_flow(1, 0)
    mon.add_flow(2, 0)
    delivered = {1: 0, 2: 0}
    starving_at = None
    for k in range(1, 121):  # 12 s in 100 ms steps; flow 2 gets 1 % from 2 s to 9 s
        t = k * 100 * MS
        rate2 = 0.1e6 if 2 * S < t <= 9 * S else 10e6
        delivered[1] += int(10e6 * 0.1 / 8)
        delivered[2] += int(rate2 * 0.1 / 8)
        mon.on_counters(1, t, delivered[1])
        mon.on_counters(2, t, delivered[2])
        r = mon.report(t, capacity_bps=20e6)
        if r.starving and starving_at is None:
            starving_at = t
        if t == int(7.5 * S):
            assert 2 not in r.starving  # below since ~2.5 s (window 1 s): < 5 s
    assert starving_at is not None and 7.5 * S < starving_at <= 8.2 * S
    assert mon.report(12 * S, capacity_bps=20e6).starving == ()


def test_bad_config_and_unknown_flow() -> None:
    with pytest.raises(ValueError, match="starve_fraction"):
        MonitorConfig(starve_fraction=1.5).validate()
    mon = FlowMonitor()
    with pytest.raises(KeyError):
        mon.on_rtt(9, 0, 1)
    mon.add_flow(9, 0)
    with pytest.raises(ValueError):
        mon.add_flow(9, 0)


# ---------------------------------------------------------------- the rule

def run_policy(p: RuleSwitchPolicy, t0: int, t1: int, window: int, qd_us: int | None,
               step: int = 50 * MS, rate_bps: float | None = None) -> list[tuple[int, str]]:
    """Observe every ``step`` and act on every decision; returns the switches. ``rate_bps``:
    the receiver counts that rate's bytes at each grant (None: no delivery reported)."""
    out = []
    delivered = None if rate_bps is None else int(rate_bps * step / 8e6)
    for t in range(t0, t1, step):
        p.observe(t, window, qd_us, delivered_bytes=delivered)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            out.append((t, d))
    return out


def test_a_buffer_filler_moves_the_flow_to_sender_driven_after_y() -> None:
    p = RuleSwitchPolicy(0)
    sw = run_policy(p, 0, 10 * S, window=1200, qd_us=400 * MS)
    assert sw[0][1] == SENDER and 3 * S <= sw[0][0] <= 3.2 * S


def test_alone_the_queue_drains_and_the_flow_never_switches() -> None:
    """Window at the floor but the queue drains (qd 0 now and then): no switch; Nuwa
    holding its own queue near Td (30 ms < X): no switch; with the floor condition on, a
    standing queue with a window above the floor: no switch."""
    p = RuleSwitchPolicy(0)
    sw = []
    for k in range(600):  # 30 s, qd 300 ms except every 40th sample
        t = k * 50 * MS
        p.observe(t, 1200, 0 if k % 40 == 0 else 300 * MS)
        if p.decide(t) is not None:
            sw.append(t)
    assert sw == []
    assert run_policy(RuleSwitchPolicy(0), 0, 30 * S, window=60_000, qd_us=30 * MS) == []
    # with the window condition on: a standing queue while the window is above the floor
    # does not switch; by default (queue alone) it does
    floor = RuleConfig(floor_window_bytes=4800)
    assert run_policy(RuleSwitchPolicy(0, floor), 0, 30 * S, window=60_000, qd_us=400 * MS) == []
    assert run_policy(RuleSwitchPolicy(0, floor), 0, 5 * S, window=1200, qd_us=400 * MS) != []
    assert run_policy(RuleSwitchPolicy(0), 0, 5 * S, window=60_000, qd_us=400 * MS) != []


def test_an_outage_is_no_evidence() -> None:
    """No queuing-delay samples (an outage: no frames, no grants) means no switch, however
    small the window."""
    p = RuleSwitchPolicy(0)
    assert run_policy(p, 0, 20 * S, window=1200, qd_us=None) == []


def outage_script(p: RuleSwitchPolicy, t0: int, t1: int, qd_us: int,
                  trickle_every_us: int | None = None) -> list[tuple[int, str]]:
    """A lone flow's outage as the server sees it (docs/BENCHMARKS.md, UMTS driving at 30 s):
    the page grants every 50 ms at the floor window and every grant echoes the last frame
    read, so the RTT sample (and qd) repeats; with ``trickle_every_us`` one new frame gets
    through that often (a new echo, a larger qd). Returns the switches."""
    out = []
    echo, qd = t0 - 100 * MS, qd_us
    for t in range(t0, t1, 50 * MS):
        if trickle_every_us is not None and (t - t0) % trickle_every_us == 0 and t > t0:
            echo, qd = t - qd_us - 50 * MS, qd + trickle_every_us
        p.observe(t, 1200, qd, echo_us=echo)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            out.append((t, d))
    return out


def test_an_outage_that_repeats_one_frames_sample_is_no_evidence() -> None:
    """The five lone-flow switches of the 18-trace sweep: grants through an outage echo the
    same frame, so one frame's queuing delay arrived 20+ times in Y. Counted once, they are
    no evidence (old rule: a switch after 3 s on both scripts)."""
    p = RuleSwitchPolicy(0)
    run_policy(p, 0, 10 * S, window=60_000, qd_us=20 * MS)  # a lone flow near Td
    assert outage_script(p, 10 * S, 30 * S, qd_us=70 * MS) == []
    assert p.stale_samples >= 390
    # a trickle of one frame a second (NYC 3G subway-cross): 3 fresh samples per Y, each
    # larger than the last
    p2 = RuleSwitchPolicy(0)
    assert outage_script(p2, 0, 30 * S, qd_us=770 * MS, trickle_every_us=1 * S) == []


def test_evidence_must_cover_y_a_slow_stretch_then_an_outage_does_not_switch() -> None:
    """Lumos LTE driving at 11–14 s (the link slows, Nuwa's own queue drains above X for
    0.8 s, then an outage: no frame for 2.2 s): 32 fresh samples ≥ X in the last Y, all
    from its first 0.8 s. Not a queue that never drained: no switch (the old rule switched
    at 3 s). Samples resuming every 100 ms above X then switch once they cover Y."""
    p = RuleSwitchPolicy(0)
    run_policy(p, 0, 10 * S, window=60_000, qd_us=20 * MS)  # a lone flow near Td
    for k in range(32):  # 11.2-12.0 s: one fresh sample per 25 ms, qd 200 -> 610 ms
        t = 11_200 * MS + k * 25 * MS
        p.observe(t, 1200, 200 * MS + k * 13 * MS)
    for t in range(12 * S, 14_300 * MS, 50 * MS):  # the outage: grants, no new frame
        p.observe(t, 1200, None)
        assert p.decide(t) is None, t
    assert p.mode == RECEIVER
    # a standing queue observed throughout Y (a frame per 100 ms, qd 620 ms) does switch
    sw = []
    for t in range(14_300 * MS, 20 * S, 100 * MS):
        p.observe(t, 1200, 620 * MS, echo_us=t - 670 * MS)
        if (d := p.decide(t)) is not None:
            sw.append((t, d))
    assert sw and sw[0] == (16_300 * MS, SENDER)  # Y after 13.3 s: its first 1 s is a gap ≤ 1 s


def test_a_competitors_queue_gives_fresh_samples_and_still_switches() -> None:
    """Next to a buffer filler each frame read is a new echo: the switch comes after Y as
    before; the same with a stale sample between fresh ones."""
    p = RuleSwitchPolicy(0)
    sw = []
    for k in range(200):  # grants every 50 ms, a new frame echoed on every other one
        t = k * 50 * MS
        echo = t - 450 * MS - (50 * MS if k % 2 else 0)  # odd k: the previous grant's echo
        p.observe(t, 1200, 400 * MS, echo_us=echo)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            sw.append((t, d))
    assert sw and sw[0][1] == SENDER and 3 * S <= sw[0][0] <= 3.2 * S
    assert p.stale_samples == 100  # every other grant of the 200, each counted once


def test_the_switcher_passes_the_grants_echo() -> None:
    """ConnectionSwitcher.on_grant hands the policy the grant's echo: grants through an
    outage (same echo) add no sample; a newer echo adds one."""
    from types import SimpleNamespace

    from nuwa_server.config import SessionConfig
    from nuwa_server.grants import GrantDecision
    from nuwa_server.protocol import Grant
    from nuwa_server.switcher import ConnectionSwitcher

    sw = ConnectionSwitcher(SessionConfig(switch="rule").validate(), 0)
    session = SimpleNamespace(rtt_min_us=50 * MS, name="s")
    for k in range(100, 200):  # 5 s of grants, 5-10 s, all echoing the frame sent at 4.9 s
        t = k * 50 * MS
        g = Grant(k, t, 0, 1200, 4_900 * MS, 0)
        sw.on_grant(session, GrantDecision(True, "ok", g, 1200, 0, t - 4_900 * MS), t)  # type: ignore[arg-type]
    assert sw.policy.decide(10 * S) is None  # the old rule: "sender" (100 samples ≥ 50 ms)
    assert sw.policy.stale_samples == 99
    g = Grant(200, 10 * S, 0, 1200, 9_500 * MS, 0)
    sw.on_grant(session, GrantDecision(True, "ok", g, 1200, 0, 500 * MS), 10 * S)  # type: ignore[arg-type]
    assert sw.policy.stale_samples == 99


def test_flapping_input_does_not_flap_the_mode() -> None:
    """Evidence that comes and goes every second never holds for Y = 3 s: no switch; and
    after a switch there is none within min_dwell."""
    p = RuleSwitchPolicy(0)
    sw = []
    for k in range(400):
        t = k * 50 * MS
        bad = (t // S) % 2 == 0
        p.observe(t, 1200 if bad else 50_000, 400 * MS if bad else 5 * MS)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            sw.append(t)
    assert sw == []
    p2 = RuleSwitchPolicy(0, RuleConfig(probe_us=2 * S, probe_max_us=2 * S))
    times = [t for t, _ in run_policy(p2, 0, 30 * S, window=1200, qd_us=400 * MS)]
    assert all(b - a >= p2.config.min_dwell_us for a, b in zip(times, times[1:], strict=False))


def test_probes_back_with_backoff_and_stays_when_the_competitor_left() -> None:
    p = RuleSwitchPolicy(0)
    sw = run_policy(p, 0, 90 * S, window=1200, qd_us=400 * MS)  # the competitor stays
    modes = [m for _, m in sw]
    assert modes[:4] == [SENDER, RECEIVER, SENDER, RECEIVER]
    gaps = [b[0] - a[0] for a, b in zip(sw, sw[1:], strict=False) if a[1] == SENDER]
    assert gaps[0] == pytest.approx(20 * S, abs=0.1 * S)
    assert gaps[1] == pytest.approx(40 * S, abs=0.1 * S)  # the failed probe doubled it
    # on a probe the window condition is off: a receiver whose window left the floor under
    # the standing queue (it took part of it for base delay) still sends the flow back
    floor = RuleConfig(floor_window_bytes=4800)
    p3 = RuleSwitchPolicy(0, floor)
    assert run_policy(p3, 0, 4 * S, window=1200, qd_us=400 * MS)[0][1] == SENDER
    back = run_policy(p3, 4 * S, 40 * S, window=60_000, qd_us=400 * MS)
    assert [m for _, m in back][:2] == [RECEIVER, SENDER]
    # the competitor leaves while sender-driven: the next probe sees a drained queue, stays
    t_end = sw[-1][0]
    if p.mode == RECEIVER:
        p.switched(t_end, SENDER)
    more = run_policy(p, t_end, t_end + 100 * S, window=30_000, qd_us=2 * MS)
    assert [m for _, m in more] == [RECEIVER] and p.mode == RECEIVER
    # the probe held: the first probe wait is back, and so (p3) is the window condition
    assert p.probe_wait_us == p.config.probe_us and p._probing_since_us is None
    t3 = back[-1][0]
    assert p3.mode == SENDER
    assert [m for _, m in run_policy(p3, t3, t3 + 60 * S, window=30_000, qd_us=2 * MS)] == [
        RECEIVER]
    assert run_policy(p3, t3 + 60 * S, t3 + 90 * S, window=60_000, qd_us=400 * MS) == []


def feed_sender(p: RuleSwitchPolicy, t0: int, t1: int, rate_bps: float, qd_us: int,
                 window: int = 60_000, step: int = 50 * MS,
                 evidence: list[dict] | None = None) -> list[tuple[int, str]]:
    """Grants every ``step`` as a sender-driven flow sees them: fresh echoes, the bytes
    delivered at ``rate_bps`` since the last grant, one queuing delay; acts on decisions
    (the policy's evidence at each, as the switcher logs it, into ``evidence``)."""
    out = []
    for t in range(t0, t1, step):
        p.observe(t, window, qd_us, echo_us=t - qd_us, delivered_bytes=int(rate_bps * step / 8e6))
        d = p.decide(t)
        if d is not None:
            if evidence is not None:
                evidence.append(p.evidence())
            p.switched(t, d)
            out.append((t, d))
    return out


def test_the_competitor_leaving_brings_the_probe_early() -> None:
    """Sender-driven at 5 Mbit/s behind a 1 s queue; the other flow leaves at 10 s: our rate
    doubles and the queue falls to 450 ms at the same window. The probe comes once the last
    two whole 1 s bins show it (11–12 s), not at the timed 20 s."""
    p = RuleSwitchPolicy(0, mode=SENDER)
    assert feed_sender(p, 0, 10 * S, 5e6, 1000 * MS) == []
    evidence: list[dict] = []
    sw = feed_sender(p, 10 * S, 14 * S, 10e6, 450 * MS, evidence=evidence)
    assert [m for _, m in sw] == [RECEIVER]
    assert 11 * S <= sw[0][0] <= 12 * S + 100 * MS
    assert p.early_probes == 1
    (ev,) = evidence
    assert ev["early_probe"] == 1 and ev["rate_ratio"] >= 1.5 and ev["qd_ratio"] <= 0.75


def test_a_competitor_that_leaves_during_a_failed_probe_is_seen_against_the_stint_before() -> None:
    """The timed probe at 20 s meets the competitor's queue, which stands for Y while the
    competitor leaves: the probe fails, and the next stint is at the full rate from its first
    bin. Against the stint before the probe (2.5 Mbit/s, 900 ms) that is a leave: early probe
    once three whole bins show it, 4 s into the new stint. Without a failed probe before it,
    a new stint has no reference for its first bins (the first detection's stint below)."""
    p = RuleSwitchPolicy(0, mode=SENDER)
    sw = feed_sender(p, 0, 20 * S + 50 * MS, 2.5e6, 900 * MS)
    assert sw == [(20 * S, RECEIVER)] and p.early_probes == 0
    t = 20 * S
    while p.mode == RECEIVER:  # the probe: the queue stands for Y (the competitor's, leaving)
        t += 50 * MS
        p.observe(t, 1200, 800 * MS)
        if (d := p.decide(t)) is not None:
            p.switched(t, d)
    stint = t
    sw2 = feed_sender(p, t + 50 * MS, t + 4500 * MS, 10e6, 300 * MS)
    assert [m for _, m in sw2] == [RECEIVER] and p.early_probes == 1
    assert stint + 4 * S <= sw2[0][0] <= stint + 4 * S + 100 * MS
    first = RuleSwitchPolicy(0)
    assert run_policy(first, 0, 4 * S, window=1200, qd_us=400 * MS)[0][1] == SENDER
    t0 = first.since_us
    assert feed_sender(first, t0 + 50 * MS, t0 + 5 * S, 10e6, 300 * MS) == []


def test_our_own_window_growing_is_not_a_leave_and_an_outage_gives_nothing() -> None:
    """The rate doubles at the same queue (our Cubic regaining its share): no early probe,
    the timed one at 20 s. An outage (no grants, then a trickle) gives no bins: nothing."""
    p = RuleSwitchPolicy(0, mode=SENDER)
    sw = feed_sender(p, 0, 10 * S, 2.5e6, 1000 * MS) + feed_sender(p, 10 * S, 21 * S, 5e6,
                                                                     1000 * MS)
    assert [t for t, _ in sw] == [20 * S] and p.early_probes == 0
    assert "early_probe" not in p.evidence()  # cleared by the switch
    p2 = RuleSwitchPolicy(0, mode=SENDER)
    assert feed_sender(p2, 0, 8 * S, 5e6, 1000 * MS) == []
    assert feed_sender(p2, 14 * S, 19 * S, 5e6, 100 * MS, step=1000 * MS) == []
    assert p2.early_probes == 0 and p2.mode == SENDER


def test_a_failed_early_probe_backs_off_on_its_own() -> None:
    """A capacity jump with the competitor still there looks like a leave: the early probe
    fails (the queue stands again within Y), the timed wait doubles to 40 s, and early
    probes wait ``leave_backoff_us`` (10 s) from the failure, then 20 s after a second."""
    p = RuleSwitchPolicy(0, mode=SENDER)
    feed_sender(p, 0, 10 * S, 5e6, 1000 * MS)
    sw = feed_sender(p, 10 * S, 13 * S, 10e6, 450 * MS)
    assert [m for _, m in sw] == [RECEIVER]
    t = sw[0][0]
    while p.mode == RECEIVER and t < sw[0][0] + 6 * S:  # the competitor's queue stands again
        t += 50 * MS
        p.observe(t, 1200, 400 * MS)
        if (d := p.decide(t)) is not None:
            p.switched(t, d)
    assert p.mode == SENDER and p.probe_wait_us == 40 * S
    t1, failed = t + 50 * MS, t
    # the same rise 8 s into the next stint: evidence from 9 s, too soon after the failure
    assert feed_sender(p, t1, t1 + 8 * S, 5e6, 1000 * MS) == []
    sw2 = feed_sender(p, t1 + 8 * S, t1 + 12 * S, 10e6, 450 * MS)
    assert [m for _, m in sw2] == [RECEIVER]
    assert failed + 10 * S <= sw2[0][0] <= failed + 10 * S + 100 * MS
    assert p.early_probes == 2
    # it fails again: the early probe's wait doubles to 20 s
    t = sw2[0][0]
    while p.mode == RECEIVER:
        t += 50 * MS
        p.observe(t, 1200, 400 * MS)
        if (d := p.decide(t)) is not None:
            p.switched(t, d)
    failed2 = t
    assert feed_sender(p, t + 50 * MS, t + 18 * S, 5e6, 1000 * MS) == []
    sw3 = feed_sender(p, t + 18 * S, t + 21 * S, 10e6, 450 * MS)
    assert [m for _, m in sw3] == [RECEIVER]
    assert failed2 + 20 * S <= sw3[0][0] <= failed2 + 20 * S + 100 * MS


def test_the_switcher_passes_the_bytes_the_receiver_counted() -> None:
    """ConnectionSwitcher.on_grant: the rise of a session's cum_received_bytes between its
    grants is the policy's delivery (the first grant only sets the mark)."""
    from types import SimpleNamespace

    from nuwa_server.config import SessionConfig
    from nuwa_server.grants import GrantDecision
    from nuwa_server.protocol import Grant
    from nuwa_server.switcher import ConnectionSwitcher

    sw = ConnectionSwitcher(SessionConfig(switch="rule").validate(), 0)
    seen: list[int | None] = []
    sw.policy.observe = lambda *a, **k: seen.append(a[4])  # type: ignore[method-assign]
    for name in ("a", "b"):
        session = SimpleNamespace(rtt_min_us=50 * MS, name=name)
        for k, cum in enumerate((1000, 5000, 5000, 9000)):
            g = Grant(k, k * MS, cum, 60_000, 0, 0)
            sw.on_grant(session, GrantDecision(True, "ok", g, 60_000, cum, None), k * MS)  # type: ignore[arg-type]
    assert seen == [None, 4000, 0, 4000] * 2


def test_bad_rule_config() -> None:
    with pytest.raises(ValueError, match="probe"):
        RuleConfig(probe_us=10, probe_max_us=5).validate()
    with pytest.raises(ValueError, match="floor_share"):
        RuleConfig(floor_share=0).validate()
    with pytest.raises(ValueError, match="leave_rate_factor"):
        RuleConfig(leave_rate_factor=1.0).validate()
    with pytest.raises(ValueError, match="leave_qd_factor"):
        RuleConfig(leave_qd_factor=0).validate()
    with pytest.raises(ValueError, match="leave_backoff_us"):
        RuleConfig(leave_backoff_us=0).validate()


def test_the_server_context_monitors_every_open_session(caplog: pytest.LogCaptureFixture) -> None:
    """ServerContext.monitor_tick: each open session is a flow (receiver's count when it
    grants, else written − in flight), at most every 100 ms; a starving flow is logged."""
    from types import SimpleNamespace

    from nuwa_server.config import SessionConfig
    from nuwa_server.context import ServerContext
    from nuwa_server.session import NuwaSession

    ctx = ServerContext.create(SessionConfig())
    a, b = (NuwaSession(4 * i, f"s{i}", ctx.config, None, 0) for i in range(2))
    for s in (a, b):
        ctx.add_session(s)
    loss = SimpleNamespace(bytes_in_flight=0, _rtt_initialized=True, _rtt_latest=0.06)
    proto = SimpleNamespace(_quic=SimpleNamespace(_loss=loss), open_sessions=lambda: [a, b])
    ctx.protocols.append(proto)  # type: ignore[arg-type]
    caplog.set_level("INFO", logger="nuwa_server.context")
    for k in range(0, 90):  # 9 s: a gets 10 Mbit/s, b 0.1 Mbit/s
        t = k * 100 * MS
        a.grants.bytes_written = a.grants.cum_received_bytes = int(10e6 / 8 * t / S)
        b.grants.bytes_written = int(0.1e6 / 8 * t / S)
        assert ctx.monitor_tick(t) is not None
        assert ctx.monitor_tick(t + 50 * MS) is None  # rate-limited
    r = ctx.monitor_report
    assert r is not None and [f.flow_id for f in r.flows] == [a.serial, b.serial]
    assert r.flows[0].throughput_bps == pytest.approx(10e6, rel=0.02)
    assert r.flows[0].rtt_ms == pytest.approx(60)
    assert r.unfair and r.starving == (b.serial,)
    assert any(f"starving=[{b.serial}]" in m for m in caplog.messages)


def replay_inputs(path: Path, config: RuleConfig | None = None) -> list[tuple[int, str]]:
    """Feed a recorded sequence of the rule's inputs (time, window, qd, echo per grant) to
    a fresh rule, asking it every 50 ms as the switcher does; returns the switches."""
    return replay_switch_inputs(path, config)[0]


def test_a_lone_flows_outage_recorded_end_to_end_is_no_evidence() -> None:
    """The rule's inputs recorded end to end (lone Nuwa, AT&T LTE driving, 1000 packets;
    docs/BENCHMARKS.md "A lone Nuwa flow, end to end"): a 10 s outage lets one frame a
    second trickle out, then the link returns and the rest of the frames that waited arrive
    at once, queuing delay 7-10 s, 23 fresh samples covering Y. The old rule switched to
    sender-driven at 28.15 s (Cubic then filled the queue for 20 s: p95 710 ms). Those frames
    all left the sender within 0.2 s and were read over 3 s: no standing queue, no switch."""
    path = Path(__file__).parent / "data" / "switch-inputs-att-lte-outage.txt"
    old = replay_inputs(path, RuleConfig(min_send_span_share=0.0))
    assert [m for _, m in old] == [SENDER] and 27_500 * MS <= old[0][0] <= 28_400 * MS
    assert replay_inputs(path) == []


def test_the_evidence_count_keeps_a_lone_umts_flow_from_switching() -> None:
    """The rule's inputs recorded end to end (lone Nuwa, T-Mobile UMTS driving, 1000 packets,
    60 s bulk, no competitor and no switching: the forty-third session's seed-2 run; 25-40 s of
    it, where the link goes near-dark): the shipped rule (20 fresh samples in Y) never moves
    it; with 15 or fewer it would move this lone flow to sender-driven control at about
    34.6 s, and Cubic would then fill the queue (docs/BENCHMARKS.md, forty-sixth session: why
    min_samples stays 20 though a competitor's first detection can wait for it)."""
    path = Path(__file__).parent / "data" / "switch-inputs-umts-lone.txt"
    assert replay_inputs(path) == []
    assert replay_inputs(path, RuleConfig(min_samples=17)) == []
    early = replay_inputs(path, RuleConfig(min_samples=15))
    assert [m for _, m in early] == [SENDER] and 34_000 * MS <= early[0][0] <= 35_200 * MS


def test_a_competitors_first_detection_recorded_end_to_end() -> None:
    """The rule's inputs recorded end to end next to a Cubic download (a Nuwa video on Verizon
    LTE short, the download from about 5 s, 1000 packets; forty-sixth session, run vzab-2;
    0-25 s): the shipped rule detects it, but only at about 21.8 s, because the flow's window
    at its floor reads too few frames for 20 fresh samples in Y until then; 17 would have
    sufficed at about 11.6 s (the margin above: 15 switches the lone UMTS flow)."""
    path = Path(__file__).parent / "data" / "switch-inputs-verizon-cubic.txt"
    shipped = replay_inputs(path)
    assert [m for _, m in shipped][:1] == [SENDER] and 21_000 * MS <= shipped[0][0] <= 22_500 * MS
    seventeen = replay_inputs(path, RuleConfig(min_samples=17))
    assert [m for _, m in seventeen][:1] == [SENDER]
    assert 11_000 * MS <= seventeen[0][0] <= 12_300 * MS


def test_a_standing_queue_switches_a_link_that_delivers_old_frames_late_does_not() -> None:
    """standing(): frames measured in Y that left the sender as far apart as they were read
    (a competitor's standing queue, even one that grows as Cubic's does) are evidence;
    frames sent within a moment and read over seconds (a near-dark link draining our own
    old frames) are not, nor does one frame sent after the link came back make them so."""
    p = RuleSwitchPolicy(0)
    for k in range(80):  # 4 s, a frame read every 50 ms; qd 400 ms growing 10 % a second
        t = k * 50 * MS
        qd = int(400 * MS * (1 + 0.1 * t / S))
        p.observe(t, 1200, qd, echo_us=t - qd - 50 * MS)
    assert p.standing(4 * S) and p.decide(4 * S) == SENDER
    q = RuleSwitchPolicy(0)
    for k in range(80):  # 4 s, frames sent 1 ms apart before the link went dark
        t = k * 50 * MS
        q.observe(t, 1200, 2 * S + t, echo_us=-2 * S + k * MS)
    assert not q.standing(4 * S) and q.decide(4 * S) is None
    q.observe(4 * S + 10 * MS, 1200, 300 * MS, echo_us=4 * S - 300 * MS)  # sent after: 1 pair
    assert not q.standing(4 * S + 10 * MS)
    ev = q.evidence()
    assert ev["samples"] == 60 and ev["send_share"] < 0.05
    assert p.evidence()["send_share"] == pytest.approx(0.96, abs=0.01)  # qd grows 4 % of time


def _to_probe(p: RuleSwitchPolicy, qd_us: int) -> int:
    """A sender-driven stint next to a competitor (fresh samples every 50 ms at ``qd_us``)
    up to the timed probe; returns the probe's time (the flow is receiver-driven then)."""
    sw = feed_sender(p, 0, 4 * S, 2e6, 400 * MS)  # receiver-driven: detection, then sender
    assert [m for _, m in sw] == [SENDER]
    t = 4 * S
    while p.mode == SENDER:  # fresh samples every 50 ms up to the timed probe
        p.observe(t, 60_000, qd_us, echo_us=t - qd_us, delivered_bytes=12_500)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
        t += 50 * MS
        assert t < 60 * S
    return t - 50 * MS


def _probe_reads(p: RuleSwitchPolicy, reads: list[tuple[float, int]],
                 delivered_per_read: int = 1200) -> list[tuple[int, str]]:
    """Frames read at (t µs, qd µs), each sent qd + 25 ms before it was read (a fresh echo),
    the receiver counting ``delivered_per_read`` bytes with each (one frame: the window's
    only one), polled every 50 ms as the switcher polls; returns the switches."""
    out: list[tuple[int, str]] = []
    t_end = int(reads[-1][0])
    pending = list(reads)
    for t in range(int(reads[0][0]) - 50 * MS, t_end + 50 * MS, 50 * MS):
        while pending and pending[0][0] <= t:
            tr, q = pending.pop(0)
            p.observe(int(tr), 1200, q, echo_us=int(tr) - q - 25 * MS,
                      delivered_bytes=delivered_per_read)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            out.append((t, d))
    return out


def test_a_probe_next_to_a_deep_queue_fails_on_the_few_frames_it_reads() -> None:
    """Recorded end to end (Norway HSDPA, a video next to a Cubic download, session 16): on a
    probe the window fell to one frame and a frame came back every 0.6–1.6 s, its queuing
    delay rising, then the queue reached 7.7 s; the first detection's 20 samples in Y never
    came and the flow starved 20 s. The probe's own verdict ends it once it has lasted Y,
    and it counts as failed (the next wait doubles). Without the verdict: no switch back."""
    reads = [(0.58, 430), (1.17, 532), (1.82, 603), (2.59, 714), (3.62, 982), (5.23, 1552),
             (13.0, 7741), (18.5, 5391)]
    for cfg, want in ((RuleConfig(), 1), (RuleConfig(probe_fail_min_samples=None), 0)):
        p = RuleSwitchPolicy(0, cfg)
        t_probe = _to_probe(p, 700 * MS)
        sw = _probe_reads(p, [(t_probe + r * S, q * MS) for r, q in reads])
        assert [m for _, m in sw] == [SENDER] * want
        if want:
            # Y after the probe (the allowance, 1.5 × 700 ms, is shorter), 4 reads by then
            assert sw[0][0] - t_probe == pytest.approx(3 * S, abs=0.06 * S)
            assert p.failed_probes == 1 and p.probe_wait_us == 2 * cfg.probe_us
        else:
            assert p.failed_probes == 0 and p.mode == RECEIVER


def test_a_probe_that_sees_the_competitors_queue_drain_once_still_fails() -> None:
    """Recorded end to end (HSDPA train 13, session 17): on the probe the queue fell to 27 ms
    once (Cubic's loss), then filled again, a frame read every 0.3 s at 103 ms rising past
    1 s; the old rule needed 20 samples in Y and the probe lasted 20 s. The verdict looks at
    the last Y: it fails the probe Y after the drained sample. The opt-in rate verdict (a frame
    per 0.3 s against the stint's 2 Mbit/s) ends it sooner, once the probe's bins 1–3 are whole."""
    reads = [(2.73, 27), (2.88, 103), (3.18, 241), (3.50, 269), (3.81, 260), (4.11, 241),
             (4.41, 249), (4.72, 258), (5.05, 274), (5.38, 273), (5.71, 280), (6.07, 298),
             (6.42, 300), (6.81, 337), (7.24, 380)]
    for cfg, at_s in ((RuleConfig(), 5.75), (RuleConfig(probe_rate_floor=0.6), 4.0)):
        p = RuleSwitchPolicy(0, cfg)
        t_probe = _to_probe(p, 1600 * MS)  # the drain allowance: 2.4 s, under Y
        sw = _probe_reads(p, [(t_probe + r * S, q * MS) for r, q in reads])
        assert [m for _, m in sw] == [SENDER] and p.failed_probes == 1
        assert sw[0][0] - t_probe == pytest.approx(at_s * S, abs=0.06 * S)  # 2.73 s + Y


def test_alone_a_probe_drains_its_own_deep_queue_and_stays() -> None:
    """The queue a probe starts from may be our own (Cubic's, sender-driven, alone): at one
    frame it leaves in about its depth, the samples fall under X and the probe holds; the
    verdict waits 1.5 × the deepest delay before the probe (6 s here: 9 s), so a slow drain
    that is still above X at Y is no failure."""
    p = RuleSwitchPolicy(0)
    t_probe = _to_probe(p, 6000 * MS)
    draining = [(1.0, 5200), (2.5, 4100), (4.0, 3000), (5.5, 1900), (7.0, 900), (8.5, 120),
                (8.9, 30)]
    # the queue is ours: the receiver counts the link's 2 Mbit/s of it (1.5 s = 375 kB apart)
    assert _probe_reads(p, [(t_probe + r * S, q * MS) for r, q in draining],
                        delivered_per_read=375_000) == []
    # the rest of the probe: our own queue near Td, the whole link; it holds
    assert run_policy(p, t_probe + 9 * S, t_probe + 40 * S, window=30_000, qd_us=20 * MS,
                      rate_bps=2e6) == []
    assert p.mode == RECEIVER and p.failed_probes == 0 and p._probing_since_us is None
    # the same queue still above X at 8.5 s (a link that slowed): no verdict before 9 s
    p2 = RuleSwitchPolicy(0)
    t2 = _to_probe(p2, 6000 * MS)
    slow = [(1.0 + 0.5 * k, 5200 - 400 * k) for k in range(12)]  # 5.2 s down to 0.8 s at 6.5 s
    assert _probe_reads(p2, [(t2 + r * S, q * MS) for r, q in slow],
                        delivered_per_read=125_000) == []


def test_an_outage_during_a_probe_is_no_verdict() -> None:
    """A link that goes dark on a probe delivers frames sent within a moment over seconds
    (each read later by the time that passed, its queuing delay growing): no standing
    queue, no verdict; so does a probe that reads fewer than 4 frames."""
    p = RuleSwitchPolicy(0)
    t_probe = _to_probe(p, 700 * MS)
    sent = t_probe + 200 * MS  # all sent at once, read one a second
    for k in range(8):
        t = t_probe + (1 + k) * S
        p.observe(t, 1200, t - sent, echo_us=sent + k * MS)
        assert p.decide(t) is None
    p2 = RuleSwitchPolicy(0)
    t2 = _to_probe(p2, 700 * MS)
    three = [(0.6, 430), (1.9, 900), (3.4, 1500)]
    assert _probe_reads(p2, [(t2 + r * S, q * MS) for r, q in three]) == []
    assert all(p2.decide(t2 + k * 100 * MS) is None for k in range(35, 80))


def test_a_probe_next_to_bbr_fails_on_its_rate() -> None:
    """Recorded end to end (fifty-first session, 10 Mbit/s, 1000 packets, next to BBR): on
    the probe BBR's queue stood at 20–80 ms, under X every second or so (its ProbeBW cycle
    and ProbeRTT), so the queue verdict never held; Nuwa's rate fell from the stint's 6.5
    Mbit/s to 3.2 by 5 s into the probe and 1–2 for the rest of the run (share 0.15, Jain
    0.67). The opt-in rate verdict fails such a probe once its bins 1–3 are whole: below 0.6 ×
    the stint's rate (2 Mbit/s here). The same queue at the stint's rate or above (the
    competitor left; this is Nuwa's own jitter) holds, and so does a probe on the default rule."""
    pattern_ms = (30, 60, 45, 20, 70, 35)
    rate_rule = RuleConfig(probe_rate_floor=0.6)
    for cfg, rate_bps, want in ((rate_rule, 0.8e6, [SENDER]), (rate_rule, 2.4e6, []),
                                (RuleConfig(), 0.8e6, [])):
        p = RuleSwitchPolicy(0, cfg)
        t_probe = _to_probe(p, 400 * MS)
        sw = []
        evidence: dict = {}
        for k, t in enumerate(range(t_probe + 50 * MS, t_probe + 14 * S, 50 * MS)):
            q = pattern_ms[k % len(pattern_ms)] * MS
            p.observe(t, 6000, q, echo_us=t - q - 25 * MS, delivered_bytes=int(rate_bps * 0.05 / 8))
            if (d := p.decide(t)) is not None:
                evidence = p.evidence()
                p.switched(t, d)
                sw.append((t, d))
        assert [m for _, m in sw] == want, (cfg, rate_bps)
        if want:
            assert sw[0][0] - t_probe == pytest.approx(4 * S, abs=0.06 * S)
            assert p.failed_probes == 1 and p.probe_failed_at_switch
            assert evidence["probe_rate_ratio"] == pytest.approx(0.4, abs=0.02)
        else:
            assert p.mode == RECEIVER and p._probing_since_us is None  # the probe held


def test_a_probe_that_fails_on_its_rate_alone_chooses_the_drained_sender_cc() -> None:
    """Opt-in ``drained_sender_cc`` (module doc, "A competitor whose queue drains"): the
    BBR-like probe above (a queue under X every second or so and empty now and then, the
    rate at 0.4 of the stint's) fails on the rate verdict, and the sender-driven controller
    it goes back to is the configured one; a probe that fails on a standing queue (a buffer
    filler), or on its rate with a queue that dipped but never emptied
    (``drained_below_ms``), goes back to the server's ``--sender-cc``; without the option a
    rate failure changes nothing."""
    drains_ms = (30, 60, 45, 5, 70, 35)  # BBR's: under 12.5 ms once in a while
    dips_ms = (30, 60, 45, 20, 70, 35)  # under X, never empty
    drained = RuleConfig(probe_rate_floor=0.6, drained_sender_cc="bbr")
    for cfg, pattern_ms, want_cc, is_drained in (
            (drained, drains_ms, "bbr", True), (drained, None, "cubic", False),
            (drained, dips_ms, "cubic", False),
            (RuleConfig(probe_rate_floor=0.6), drains_ms, "cubic", True)):
        standing = pattern_ms is None
        p = RuleSwitchPolicy(0, cfg)
        t_probe = _to_probe(p, 400 * MS)
        assert p.sender_cc("cubic") == "cubic"  # the first detection: a standing queue
        evidence: dict = {}
        for k, t in enumerate(range(t_probe + 50 * MS, t_probe + 14 * S, 50 * MS)):
            q = 400 * MS if pattern_ms is None else pattern_ms[k % len(pattern_ms)] * MS
            p.observe(t, 6000, q, echo_us=t - q - 25 * MS, delivered_bytes=int(0.8e6 * 0.05 / 8))
            if (d := p.decide(t)) is not None:
                evidence = p.evidence()
                chosen = p.sender_cc("cubic")
                p.switched(t, d)
                break
        # a standing queue ends the probe on the first detection's own condition (20 samples)
        assert d == SENDER and p.failed_probes == (0 if standing else 1), cfg
        assert chosen == want_cc, (cfg, pattern_ms)
        assert evidence.get("drained") == (1 if is_drained else None)  # logged either way
        assert p.drained_competitor == is_drained


def test_the_first_detection_may_have_its_own_floor() -> None:
    """``first_queue_floor_ms`` (module doc, "A competitor whose queue drains"): a queue
    standing at 40 ms (BBR's own, about one 50 ms base RTT, less our share) never reaches the
    default X of 50 ms; with X = 35 for the first detection it is a competitor after Y. On a
    probe the verdicts keep ``queue_floor_ms``: the same 40 ms queue does not fail it."""
    assert feed_sender(RuleSwitchPolicy(0), 0, 8 * S, 2e6, 40 * MS) == []
    p = RuleSwitchPolicy(0, RuleConfig(first_queue_floor_ms=35))
    assert feed_sender(p, 0, 8 * S, 2e6, 40 * MS) == [(3 * S, SENDER)]
    q = RuleSwitchPolicy(0, RuleConfig(first_queue_floor_ms=35))
    t_probe = _to_probe(q, 400 * MS)
    # through the probe's span (2 Y + the dwell: 8 s) nothing fails it; once it has held,
    # the first detection's own X is back, and the queue it still sees is a competitor's
    out = feed_sender(q, t_probe + 50 * MS, t_probe + 14 * S, 2e6, 40 * MS)
    assert q.failed_probes == 0 and len(out) == 1 and out[0][0] > t_probe + 8 * S
    with pytest.raises(ValueError, match="first_queue_floor_ms"):
        RuleConfig(first_queue_floor_ms=0).validate()


def test_bad_probe_verdict_config() -> None:
    with pytest.raises(ValueError, match="drained_sender_cc"):
        RuleConfig(drained_sender_cc="bbr").validate()  # no rate verdict to fail on
    with pytest.raises(ValueError, match="drained_sender_cc"):
        RuleConfig(probe_rate_floor=0.6, drained_sender_cc=3).validate()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probe_rate_floor"):
        RuleConfig(probe_rate_floor=1.0).validate()
    with pytest.raises(ValueError, match="probe_fail_min_samples"):
        RuleConfig(probe_fail_min_samples=0).validate()
    with pytest.raises(ValueError, match="probe_drain_factor"):
        RuleConfig(probe_drain_factor=-1.0).validate()


def test_the_rule_thresholds_come_from_the_servers_switch_rule() -> None:
    """``--switch-rule JSON`` (SessionConfig.switch_rule): fields changed from the defaults
    reach the policy the switcher makes; anything else is a ValueError naming it."""
    from nuwa_server.config import SessionConfig
    from nuwa_server.switcher import make_policy

    cfg = SessionConfig(switch="rule", switch_rule='{"probe_fail_min_samples": null, '
                        '"hold_us": 4000000}').validate()
    policy = make_policy(cfg, 0)
    assert isinstance(policy, RuleSwitchPolicy)
    assert policy.config == RuleConfig(probe_fail_min_samples=None, hold_us=4_000_000)
    assert make_policy(SessionConfig(switch="rule").validate(), 0).config == RuleConfig()
    for rule, msg in (('{"hold_us": 0}', "hold_us"), ("{", "not JSON"), ("3", "JSON object"),
                      ('{"probe_rate_floor": 0.6, "drained_sender_cc": "vegas"}',
                       "drained_sender_cc must be one of"),
                      ('{"holdus": 1}', "unknown field"),
                      ('{"probe_drain_factor": "x"}', "switch_rule")):
        with pytest.raises(ValueError, match=msg):
            SessionConfig(switch="rule", switch_rule=rule).validate()
    with pytest.raises(ValueError, match="needs switch"):
        SessionConfig(switch_rule="{}").validate()
