"""PBQ (nuwa_server/cc/pbq.py, pbq_agent.py) against docs/PBQ.md: the state, the action rule,
BBR underneath, and every fallback to plain BBR with its log line.

Driven by ``bbr_sim.Bottleneck`` (the controller's own sender over one drop-tail link under a
simulated clock): 10 Mbit/s, a 39 ms base RTT, unless a test says otherwise. The fallback
tests use the hand-made models of ``server/tests/data`` (``models/pbq_rl/testmodels.py``).
"""

from __future__ import annotations

import logging
import math
import random
from pathlib import Path

import pytest
from bbr_sim import MSS, Bottleneck

from nuwa_server.cc.bbr_model import BbrState
from nuwa_server.cc.pbq import (
    FEATURES,
    FRAME_SIZE,
    FRAMES,
    INTERVAL_S,
    PBQ_CC_NAME,
    STATE_SIZE,
    PbqCongestionControl,
)
from nuwa_server.cc.pbq_agent import PbqAgent, load_policy
from nuwa_server.config import SessionConfig

RATE = 1.25e6
RTT = 0.0390625
DATA = Path(__file__).resolve().parent / "data"


def _pbq(seed: int = 1) -> PbqCongestionControl:
    return PbqCongestionControl(max_datagram_size=MSS, rng=random.Random(seed))


def _link(cc: PbqCongestionControl, **kw: object) -> Bottleneck:
    return Bottleneck(cc, rate_bytes_per_s=kw.pop("rate", RATE), rtt_s=RTT,  # type: ignore[arg-type]
                      queue_bytes=kw.pop("queue", 100 * MSS), **kw)  # type: ignore[arg-type]


def _decide(sim: Bottleneck, cc: PbqCongestionControl, actions: list[float]) -> list[list[float]]:
    """Run one interval per action, then observe and apply it; returns the states."""
    states = []
    for a in actions:
        sim.run(sim.t + INTERVAL_S)
        states.append(cc.observe(sim.t))
        cc.apply_action(a, sim.t)
    return states


def _feature(state: list[float], name: str, frame: int = FRAMES - 1) -> float:
    return state[frame * FRAME_SIZE + FEATURES.index(name)]


# ---------------------------------------------------------------- the controller

def test_registered_as_pbq_and_chosen_by_the_cc_mode() -> None:
    from aioquic.quic.congestion.base import create_congestion_control

    assert isinstance(create_congestion_control(PBQ_CC_NAME, max_datagram_size=MSS),
                      PbqCongestionControl)
    assert SessionConfig(cc="pbq").validate().quic_congestion_control == PBQ_CC_NAME
    assert not SessionConfig(cc="pbq").grant_config().enforce


def test_state_is_17_features_times_4_frames_oldest_first() -> None:
    """docs/PBQ.md "State": 68 floats; the newest interval is the last frame and the older
    ones shift down; BBR's state is one-hot; the last action is fed back."""
    assert (FRAME_SIZE, FRAMES, STATE_SIZE) == (17, 4, 68)
    cc = _pbq()
    sim = _link(cc)
    states = _decide(sim, cc, [0.0] * 10 + [0.5, -0.25])
    assert all(len(s) == STATE_SIZE for s in states)
    s = states[-1]
    assert s[:FRAME_SIZE * (FRAMES - 1)] == states[-2][FRAME_SIZE:]  # shifted by one frame
    one_hot = [_feature(s, n) for n in FEATURES if n.startswith("bbr_state_")]
    assert sorted(one_hot) == [0.0] * 6 + [1.0]
    assert _feature(s, f"bbr_state_{cc.state.value}") == 1.0
    assert _feature(s, "last_action") == 0.5  # the action applied after the previous state
    assert _feature(s, "interval_over_100ms") == pytest.approx(1.0)
    assert _feature(s, "min_rtt_s") == pytest.approx(RTT + MSS / RATE, rel=0.05)
    # a filled 10 Mbit/s link: the interval delivered close to the largest rate seen
    assert 0.7 < _feature(s, "delivery_rate_over_max_delivery_rate") <= 1.0
    assert _feature(s, "latest_rtt_over_min_rtt") >= 1.0
    iv = cc.last_interval
    assert iv is not None and iv.end_s == pytest.approx(sim.t)
    assert iv.delivery_rate_bytes_per_s == pytest.approx(iv.delivered_bytes / INTERVAL_S)
    assert all(math.isfinite(x) for st in states for x in st)


def test_action_ratio_doubles_halves_holds_and_is_clamped_to_bbrs_model() -> None:
    """cwnd ← clamp(cwnd_prev · 2^a, floor, ceiling), a clipped to [−1, 1]; the floor is the
    flight that keeps BBR's pacing rate busy for one min RTT, the ceiling BBR's own target
    (cwnd_gain BDPs), both from BBR's model (pbq-action-v2)."""
    cc = _pbq()
    sim = _link(cc)
    _decide(sim, cc, [0.0] * 40)  # 4 s: past Startup and Drain, into ProbeBW
    assert cc.state in (BbrState.PROBE_BW_DOWN, BbrState.PROBE_BW_CRUISE, BbrState.PROBE_BW_REFILL,
                        BbrState.PROBE_BW_UP)
    floor, ceiling = cc.cwnd_bounds_bytes()
    bdp = cc.bw_bytes_per_s * cc.min_rtt_s
    assert bdp == pytest.approx(RATE * RTT, rel=0.25)
    extra = cc._extra_acked.best
    want_floor = max(cc.pacing_gain * bdp + extra, 4 * MSS)
    assert floor == pytest.approx(want_floor, rel=0.01, abs=2 * MSS + 1)
    assert ceiling == pytest.approx(2 * bdp + extra, rel=0.01, abs=2 * MSS + 1)
    assert floor < ceiling
    cc.apply_action(0.0, sim.t)
    prev = cc.agent_cwnd_bytes
    assert prev is not None and floor <= prev <= ceiling
    for _ in range(10):
        cc.apply_action(1.0, sim.t)
    assert cc.agent_cwnd_bytes == ceiling == cc.congestion_window
    cc.apply_action(-1.0, sim.t)
    assert cc.agent_cwnd_bytes == max(int(ceiling / 2), floor)
    half = cc.agent_cwnd_bytes
    cc.apply_action(0.0, sim.t)
    assert cc.agent_cwnd_bytes == half
    cc.apply_action(5.0, sim.t)  # clipped to 1
    assert cc.agent_cwnd_bytes == min(half * 2, ceiling)
    for _ in range(10):
        cc.apply_action(-1.0, sim.t)
    assert cc.agent_cwnd_bytes == floor == cc.congestion_window
    with pytest.raises(ValueError):
        cc.apply_action(math.nan, sim.t)


def test_the_bounds_follow_bbrs_probes_between_decisions() -> None:
    """An agent that always halves sits on the floor, and the floor moves with BBR's pacing
    gain: in ProbeBW_UP (1.25) the window is above what it is in ProbeBW_DOWN (0.9), so BBR's
    probe for more bandwidth is not blocked by the agent's window; Startup is BBR's own."""
    cc = _pbq()
    sim = _link(cc, queue=1000 * MSS)
    in_startup = []
    by_state: dict[BbrState, list[int]] = {}
    for _ in range(150):  # 15 s: several ProbeBW cycles
        _decide(sim, cc, [-1.0])
        if cc.state is BbrState.STARTUP:
            in_startup.append(cc.congestion_window)
        by_state.setdefault(cc.state, []).append(cc.congestion_window)
        floor, ceiling = cc.cwnd_bounds_bytes()
        if cc.state is not BbrState.PROBE_RTT:  # there ProbeRTT's cap is lower still
            assert floor <= cc.congestion_window <= ceiling
    up, down = by_state.get(BbrState.PROBE_BW_UP), by_state.get(BbrState.PROBE_BW_DOWN)
    assert up and down, f"no ProbeBW_UP/DOWN seen: {sorted(s.value for s in by_state)}"
    assert min(up) > max(down)
    assert in_startup and in_startup[-1] > 2 * min(down)  # BBR's Startup, not the floor


def test_between_decisions_bbr_paces_but_the_agent_holds_the_window() -> None:
    """docs/PBQ.md: BBR's cwnd computations are ignored between decisions (ACKs, losses),
    its pacing rate is kept."""
    cc = _pbq()
    sim = _link(cc, queue=20 * MSS)  # a shallow queue: losses
    _decide(sim, cc, [0.0] * 5)
    cc.apply_action(1.0, sim.t)
    cc.apply_action(1.0, sim.t)
    held = cc.agent_cwnd_bytes
    events_before = len(sim.samples)
    for _ in range(5):
        sim.run(sim.t + 0.02)
        if cc.state is not BbrState.PROBE_RTT:
            assert cc.congestion_window == held
    assert len(sim.samples) > events_before
    assert cc.pacing_rate_bytes_per_s > 0
    assert cc.last_interval is not None


def test_probe_rtt_still_caps_the_agents_window() -> None:
    """ProbeRTT's cap (BBRBoundCwndForProbeRTT) applies to the agent's window too."""
    cc = _pbq()
    sim = _link(cc, queue=1000 * MSS)
    seen = []
    for _ in range(80):  # 8 s: ProbeRTT comes after 5 s without a lower RTT
        _decide(sim, cc, [0.3])
        if cc.state is BbrState.PROBE_RTT:
            seen.append((cc.congestion_window, cc.agent_cwnd_bytes, cc._probe_rtt_cwnd()))
    assert seen, "no ProbeRTT in 8 s"
    assert all(cwnd <= max(cap, 4 * MSS) + 1 and agent is not None and agent > cwnd
               for cwnd, agent, cap in seen)


def test_fall_back_hands_the_window_back_to_bbr() -> None:
    cc = _pbq()
    sim = _link(cc)
    _decide(sim, cc, [0.0] * 10 + [-1.0] * 4)
    small = cc.congestion_window
    cc.fall_back("test")
    assert not cc.agent_active and cc.fallback_reason == "test"
    sim.run(sim.t + 1.0)
    assert cc.congestion_window > small  # BBR's own window (about 2 BDP) again
    assert cc.apply_action(1.0, sim.t) == cc.congestion_window  # ignored after the fallback


# ---------------------------------------------------------------- the agent and its fallbacks

def _agent(model: Path | str, **kw: object) -> tuple[PbqAgent, PbqCongestionControl, Bottleneck]:
    cc = _pbq()
    policy = load_policy(model) if isinstance(model, Path) else model
    return PbqAgent(cc, policy, **kw), cc, _link(cc)  # type: ignore[arg-type]


def _steps(agent: PbqAgent, sim: Bottleneck, n: int) -> list[bool]:
    out = []
    for _ in range(n):
        sim.run(sim.t + INTERVAL_S)
        out.append(agent.step(sim.t))
    return out


def test_an_app_limited_interval_holds_the_window() -> None:
    """After an interval in which the sender ran out of data (the send loop's
    on_app_limited), the agent's ratio is not applied: the window is held (video between
    segments must not lose its window to a policy trained on backlogged flows); the next
    backlogged interval's ratio applies again."""
    cc = _pbq()
    sim = _link(cc)
    _decide(sim, cc, [1.0] * 5 + [0.0] * 5)
    held = cc.agent_cwnd_bytes
    assert held is not None
    sim.run(sim.t + INTERVAL_S / 2)
    cc.on_app_limited()
    sim.run(sim.t + INTERVAL_S / 2)
    cc.observe(sim.t)
    assert cc.last_interval is not None and cc.last_interval.app_limited
    decisions = cc.decisions
    cc.apply_action(-1.0, sim.t)
    assert cc.agent_cwnd_bytes == held and cc.decisions == decisions and cc.held_app_limited == 1
    sim.run(sim.t + INTERVAL_S)
    cc.observe(sim.t)
    assert not cc.last_interval.app_limited
    cc.apply_action(-1.0, sim.t)
    assert cc.agent_cwnd_bytes == max(int(held / 2), cc.cwnd_bounds_bytes()[0])


def test_the_agent_skips_inference_on_an_app_limited_interval() -> None:
    """PbqAgent.step: an app-limited interval costs no inference and changes no window."""
    agent, cc, sim = _agent(DATA / "pbq-linear.onnx")
    assert all(_steps(agent, sim, 5))
    window, inferences = cc.agent_cwnd_bytes, len(agent.inference_s)
    sim.run(sim.t + INTERVAL_S)
    cc.on_app_limited()
    assert agent.step(sim.t)
    assert len(agent.inference_s) == inferences and cc.agent_cwnd_bytes == window
    assert cc.held_app_limited == 1


def test_a_valid_model_sets_the_window_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    """Every step a decision; every 100 decisions one INFO line with the inference times."""
    caplog.set_level(logging.INFO, logger="nuwa.pbq")
    agent, cc, sim = _agent(DATA / "pbq-linear.onnx", label="c1")
    assert all(_steps(agent, sim, 100))
    assert cc.agent_active and cc.decisions == 100 and cc.agent_cwnd_bytes is not None
    assert len(agent.inference_s) == 100 and max(agent.inference_s) < 0.020
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith("pbq c1: 100 decisions, inference over the last 100: p50 ")


@pytest.mark.parametrize(("model", "why"), [
    ("missing.onnx", "no model file"),
    ("pbq-wrong-shape.onnx", "model inputs [('state', ['batch', 56])]"),
    ("pbq-wrong-version.onnx", "model state version 'pbq-state-v0'"),
    ("pbq-action-v1.onnx", "model action rule None, the server's is 'pbq-action-v2'"),
])
def test_an_unusable_model_falls_back_to_bbr_with_one_log_line(
        model: str, why: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nuwa.pbq")
    agent, cc, sim = _agent(DATA / model)
    assert _steps(agent, sim, 5) == [False] * 5
    assert not cc.agent_active and cc.decisions == 0 and why in (cc.fallback_reason or "")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "falling back to BBR" in lines[0] and why in lines[0]


def test_a_file_onnxruntime_cannot_load_falls_back(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx model\x00\x01" * 10)
    caplog.set_level(logging.WARNING, logger="nuwa.pbq")
    agent, cc, sim = _agent(bad)
    assert _steps(agent, sim, 2) == [False, False]
    assert "onnxruntime cannot load" in (cc.fallback_reason or "")
    assert len(caplog.records) == 1


def test_a_nan_state_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    """A NaN measurement (here an RTT sample) makes a NaN state: no inference, plain BBR."""
    caplog.set_level(logging.WARNING, logger="nuwa.pbq")
    agent, cc, sim = _agent(DATA / "pbq-linear.onnx")
    assert all(_steps(agent, sim, 5))
    cc.on_rtt_measurement(now=sim.t, rtt=math.nan)
    assert _steps(agent, sim, 2) == [False, False]
    assert cc.fallback_reason == "state has a NaN or infinite value"
    assert len(caplog.records) == 1 and cc.decisions == 5


def test_a_nan_output_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nuwa.pbq")
    agent, cc, sim = _agent(DATA / "pbq-nan.onnx")
    assert _steps(agent, sim, 2) == [False, False]
    assert cc.fallback_reason == "model output is nan" and cc.decisions == 0
    assert len(caplog.records) == 1


def test_an_inference_that_raises_or_is_slow_falls_back(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="nuwa.pbq")
    policy = load_policy(DATA / "pbq-linear.onnx")
    assert not isinstance(policy, str)

    class Raising:
        def run(self, *_: object) -> object:
            raise RuntimeError("boom")

    raising = type(policy)(session=Raising(), metadata=policy.metadata, path=policy.path)
    agent, cc, sim = _agent(raising)  # type: ignore[arg-type]
    assert _steps(agent, sim, 1) == [False]
    assert cc.fallback_reason == "inference raised RuntimeError: boom"
    ticks = iter([0.0, 0.0005, 1.0, 1.025])  # 0.5 ms, then 25 ms
    agent, cc, sim = _agent(policy, clock=lambda: next(ticks))  # type: ignore[arg-type]
    assert _steps(agent, sim, 2) == [True, False]
    assert cc.fallback_reason == "inference took 25.0 ms > 20 ms"
    assert len(caplog.records) == 2


def test_the_agent_task_steps_every_100_ms_until_cancelled() -> None:
    """PbqAgent.run: one decision per 100 ms of the loop's clock, off the packet path."""
    import asyncio

    windows: list[int] = []

    async def main() -> int:
        agent, cc, _ = _agent(DATA / "pbq-linear.onnx")
        agent.on_window = lambda: windows.append(cc.congestion_window)
        loop = asyncio.get_running_loop()
        task = loop.create_task(agent.run(loop.time))
        await asyncio.sleep(0.35)
        task.cancel()
        return cc.decisions

    assert asyncio.run(main()) == 3 and len(windows) == 3
