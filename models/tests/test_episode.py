"""The episode core over the real @nuwa/cc stepper (Node, JSON lines): one interval per step."""

import numpy as np
import pytest

from nuwa_rl import agent
from nuwa_rl.episode import Episode
from nuwa_rl.sim import REPO_ROOT, Stepper, StepperError

TRACE = REPO_ROOT / "traces" / "4G" / "mahimahi-verizon-lte-short.mahi"


def test_episode_steps_the_typescript_core() -> None:
    ep = Episode(Stepper(), record_queuing_delays=True)
    try:
        obs = ep.reset(TRACE)
        assert obs.shape == (agent.OBS_DIM,) and not obs.any()  # zero-padded history
        ks = []
        for a in (4, 4, 1, 0, 0, 0):
            r = ep.step(a)
            ks.append(ep.k_mss)
            assert r.stats["interval_ms"] == agent.INTERVAL_MS
            assert r.stats["aggressiveness_mss"] == ep.k_mss  # the stepper ran at the agent's k
            assert np.isfinite(r.reward)
        assert ks == pytest.approx([8.55, 9.0, 9.0, 2.25, 1.0, 1.0])  # Eq. 11 from k = 3
        assert r.obs[-1] == pytest.approx(1.0 / 9.0)  # k feature of the newest interval
        s = ep.stepper.summary()
        assert s["packets"] > 100 and s["queuing_delay_ms"]["p95"] >= s["queuing_delay_ms"]["p50"]
    finally:
        ep.stepper.close()


def test_stepper_errors_are_clear() -> None:
    st = Stepper()
    try:
        with pytest.raises(StepperError, match="step before reset"):
            st.step(3.0, 200)
        with pytest.raises(StepperError, match="ENOENT|no such file"):
            st.reset(REPO_ROOT / "traces" / "nope.mahi")
        st.reset(TRACE)
        with pytest.raises(StepperError, match="interval_ms"):
            st.step(3.0, 0)
    finally:
        st.close()


def test_baseline_run_is_the_same_simulation_at_a_fixed_k() -> None:
    """The training reward's baseline (episode.BaselineRun): same trace and start, fixed k, lockstep.
    Run at the agent's own k, it reproduces the agent's rewards exactly (the difference the agent
    is trained on is then 0); at another k it differs."""
    from nuwa_rl.episode import BaselineRun

    ep = Episode(Stepper())
    same = BaselineRun(Episode(Stepper()), agent.K_INITIAL_MSS)
    other = BaselineRun(Episode(Stepper()), 9.0)
    try:
        ep.reset(TRACE, 2000)
        same.reset(TRACE, 2000)
        other.reset(TRACE, 2000)
        keep = agent.ACTIONS.index(1.0)
        diffs_same, diffs_other = [], []
        for _ in range(25):
            r = ep.step(keep).reward
            diffs_same.append(r - same.reward())
            diffs_other.append(r - other.reward())
        assert diffs_same == [0.0] * 25
        assert max(abs(d) for d in diffs_other) > 1e-3
    finally:
        for e in (ep, same.episode, other.episode):
            e.stepper.close()
