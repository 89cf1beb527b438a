"""PBQ's training side (models/pbq_rl): the reward, the trace split, the environment (where
gymnasium is installed: .venv-rl), and the shipped model's parity fixtures under onnxruntime
(CI: the main .venv, no torch)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from nuwa_server.cc.bbr_model import BbrState
from nuwa_server.cc.pbq import (
    ACTION_RULE,
    ACTION_RULE_VERSION,
    STATE_SIZE,
    STATE_VERSION,
    PbqCongestionControl,
    PbqInterval,
)
from nuwa_server.cc.pbq_agent import PbqPolicy, load_policy

from pbq_rl.scenario import reward, split_traces

MODELS = Path(__file__).resolve().parents[1]

IV = PbqInterval(start_s=1.0, end_s=1.1, sent_packets=100, lost_packets=0, delivered_bytes=100_000,
                 delivery_rate_bytes_per_s=1e6, max_delivery_rate_bytes_per_s=2e6, latest_rtt_s=0.05,
                 smoothed_rtt_s=0.05, min_rtt_s=0.05, cwnd_bytes=50_000, bytes_in_flight=40_000,
                 state=BbrState.PROBE_BW_CRUISE)


def test_reward_is_the_utility_under_the_rtt_constraint() -> None:
    """docs/PBQ.md: U = rate / max rate − 5 · loss; minus (RTT / min RTT − 1.25) above 1.25."""
    assert reward(IV) == pytest.approx(0.5)
    assert reward(replace(IV, lost_packets=2)) == pytest.approx(0.5 - 5 * 0.02)
    assert reward(replace(IV, latest_rtt_s=0.0625)) == pytest.approx(0.5)  # exactly 1.25
    assert reward(replace(IV, latest_rtt_s=0.1)) == pytest.approx(0.5 - 0.75)
    assert reward(replace(IV, max_delivery_rate_bytes_per_s=0.0)) == 0.0


def test_reward_threshold_moves_the_constraint() -> None:
    """--rtt-threshold X: the penalty starts at X × min RTT and grows by 1 per unit above."""
    assert reward(replace(IV, latest_rtt_s=0.1), rtt_threshold=2.0) == pytest.approx(0.5)
    assert reward(replace(IV, latest_rtt_s=0.125), rtt_threshold=2.0) == pytest.approx(0.5 - 0.5)
    assert reward(replace(IV, latest_rtt_s=0.1), rtt_threshold=1.25) == reward(replace(IV, latest_rtt_s=0.1))


def test_held_out_traces_are_apart_from_the_training_ones() -> None:
    train, held = split_traces()
    assert len(held) == 6 and len(train) == 12 and not set(train) & set(held)


def test_env_drives_the_servers_controller() -> None:
    pytest.importorskip("gymnasium")
    from pbq_rl.env import PbqEnv

    env = PbqEnv(episode_steps=20, scenario={"kind": "constant", "rate_mbps": 10.0, "delay_ms": 20.0,
                                             "queue_bdp": 2.0, "loss": 0.0, "competitor": False})
    obs, _ = env.reset(seed=3)
    assert obs.shape == (STATE_SIZE,) and isinstance(env.cc, PbqCongestionControl)
    rewards, windows = [], []
    for i in range(20):
        obs, r, term, trunc, info = env.step(np.array([1.0 if i < 5 else -1.0], np.float32))
        rewards.append(r)
        windows.append(info["cwnd_bytes"])
    assert trunc and not term and np.all(np.isfinite(obs))
    assert windows[4] > windows[0] and windows[-1] < windows[5]  # the actions move the window
    assert env.cc.decisions == 20


def test_shipped_model_gives_its_fixture_actions_under_onnxruntime() -> None:
    """models/pbq.onnx (./nuwa train --agent pbq) against the actions SB3's policy gave at export."""
    fixtures = json.loads((MODELS / "pbq.fixtures.json").read_text())
    policy = load_policy(MODELS / "pbq.onnx")
    assert isinstance(policy, PbqPolicy), policy  # the server accepts it (metadata, shape)
    acts = [policy.act(s) for s in fixtures["states"]]
    assert len(acts) >= 64
    assert np.max(np.abs(np.array(acts) - np.array(fixtures["actions"]))) <= fixtures["tolerance"]


def test_shipped_model_metadata() -> None:
    policy = load_policy(MODELS / "pbq.onnx")
    assert isinstance(policy, PbqPolicy)
    meta = policy.metadata
    assert meta["state_version"] == STATE_VERSION and meta["input_size"] == str(STATE_SIZE)
    assert meta["action_rule_version"] == ACTION_RULE_VERSION
    assert meta["action_rule"] == ACTION_RULE  # the rule's text, as pbq.py states it
    assert meta["training_command"].startswith("./nuwa train --agent pbq")
    assert len(meta["git_commit"]) == 40
    summary = json.loads((MODELS / "pbq.json").read_text())
    assert summary["training"]["timesteps"] > 0 and summary["held_out_traces"]
