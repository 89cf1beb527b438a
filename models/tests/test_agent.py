"""Nuwa-RL agent definition (nuwa-rl-journal §V-B Eq. 10-13) against the paper's formulas."""

import math

import numpy as np
import pytest

from nuwa_rl import agent


def test_alpha_fair_is_eq_12() -> None:
    assert agent.alpha_fair(4.0, 0.6) == pytest.approx(4.0 ** 0.4 / 0.4)
    assert agent.alpha_fair(math.e, 1.0) == pytest.approx(1.0)
    assert agent.alpha_fair(0.0) == 0.0
    with pytest.raises(ValueError, match="x must be"):
        agent.alpha_fair(-1.0)
    with pytest.raises(ValueError, match="alpha"):
        agent.alpha_fair(1.0, 0.0)


def test_reward_is_eq_13_with_the_papers_weights() -> None:
    b, d_ms, loss = 10.0, 50.0, 2.0
    u = lambda x: x ** 0.4 / 0.4  # noqa: E731
    want = 0.4 * u(b) - 0.4 * u(d_ms / agent.DELAY_UNIT_MS) - 0.2 * u(loss)
    assert agent.reward(b, d_ms, loss) == pytest.approx(want)
    # More throughput is better, more delay and loss worse.
    assert agent.reward(11, d_ms, loss) > agent.reward(b, d_ms, loss)
    assert agent.reward(b, 60, loss) < agent.reward(b, d_ms, loss)
    assert agent.reward(b, d_ms, 3) < agent.reward(b, d_ms, loss)


def test_action_is_eq_11_clamped_to_1_9() -> None:
    assert agent.ACTIONS == (0.25, 1.0, 1.05, 1.25, 2.85)
    assert agent.apply_action(3.0, 4) == pytest.approx(8.55)
    assert agent.apply_action(8.0, 4) == 9.0
    assert agent.apply_action(2.0, 0) == 1.0
    assert agent.apply_action(4.0, 2) == pytest.approx(4.2)
    with pytest.raises(ValueError, match="action index"):
        agent.apply_action(3.0, 5)


def test_features_normalise_and_reject_bad_input() -> None:
    v = agent.features(7e6, 1200 * 15, 15.0, 50.0, 9.0)
    assert v.dtype == np.float32
    np.testing.assert_allclose(v, [0.3, 0.25, 0.5, 0.5, 1.0], rtol=1e-6)
    assert agent.features(0, 0, 0, 5000, 1)[3] == pytest.approx(10.0)  # delay clipped at 1 s
    with pytest.raises(ValueError, match="buffer_s"):
        agent.features(1, 1, float("nan"), 1, 1)


def test_history_is_eq_10_oldest_first_zero_padded() -> None:
    h = agent.History(n=3)
    a = np.full(agent.N_FEATURES, 1, np.float32)
    b = np.full(agent.N_FEATURES, 2, np.float32)
    obs = h.push(a)
    assert obs.shape == (3 * agent.N_FEATURES,)
    assert obs[: 2 * agent.N_FEATURES].sum() == 0 and obs[-1] == 1
    h.push(b)
    h.push(b)
    obs = h.push(b)  # a falls out
    assert set(obs.tolist()) == {2.0}


def test_player_buffer_fills_plays_and_stalls() -> None:
    p = agent.PlayerBuffer()
    # 300 kbit/s first rung: 75 kB = 2 s of content in one 0.2 s interval, then playback starts.
    assert p.step(75_000, 0.2) == pytest.approx(2.0 - 0.2)
    assert p.playing
    for _ in range(20):  # nothing arrives for 4 s: the buffer runs dry and stalls
        p.step(0, 0.2)
    assert p.buffer_s == 0.0 and not p.playing and p.stall_s > 0
    # Plenty of throughput: the next segments come at a higher rung; the level is capped.
    for _ in range(1500):  # 10 Mbit/s at 8 Mbit/s content: +0.05 s per 0.2 s interval
        p.step(250_000, 0.2)
    assert p.bitrate_bps == agent.LADDER_BPS[-1]  # 10 Mbit/s measured > 8 Mbit/s / 0.9
    assert p.buffer_s == agent.BUFFER_MAX_S
    with pytest.raises(ValueError):
        p.step(-1, 0.2)


def test_player_buffer_vectors_are_current() -> None:
    """packages/player/src/testdata/player-buffer.json is what PlayerBuffer gives now: the TS port
    (e2e/pages/training-buffer.ts) is tested against it (e2e/src/training-buffer.test.ts)."""
    import json

    from nuwa_rl import testdata

    committed = json.loads((testdata.OUT / "player-buffer.json").read_text())
    assert committed == json.loads(json.dumps(testdata.player_buffer_vectors()))
