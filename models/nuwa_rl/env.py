"""Gymnasium environment of Nuwa-RL: replays the repo's traces through @nuwa/cc's
trace simulator (the TypeScript core itself, see sim.py), one decision interval
per step (nuwa-rl-journal §V-B)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from . import agent
from .episode import REWARD_BASELINE_K_MSS, BaselineRun, Episode
from .sim import REPO_ROOT, Stepper

#: Training traces: every trace of the repo's 3G, 4G and 5G families.
TRAIN_FAMILIES = ("3G", "4G", "5G")


def repo_traces(families: tuple[str, ...] = TRAIN_FAMILIES) -> list[Path]:
    """The repo's traces of those families, sorted (relative order fixes the seeded draws)."""
    out = sorted(p for f in families for p in (REPO_ROOT / "traces" / f).glob("*.mahi"))
    if not out:
        raise FileNotFoundError(f"no traces under {REPO_ROOT / 'traces'} for {families}")
    return out


class NuwaKEnv(gym.Env[np.ndarray, int]):
    """Each episode: a trace drawn uniformly, a start drawn uniformly in whole
    seconds of its period, k = K_INITIAL_MSS, EPISODE_STEPS intervals.

    Observation: float32 [OBS_DIM] (agent.FEATURES x HISTORY_LEN, oldest first).
    Action: index into agent.ACTIONS. Reward: agent.reward (Eq. 13) minus the reward of the
    same trace and start at a fixed k (`reward_baseline_k_mss`, episode.BaselineRun; None: the
    raw Eq. 13 reward). info["raw_reward"] is always the agent's own Eq. 13 reward.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, traces: list[Path] | None = None, episode_steps: int = agent.EPISODE_STEPS,
                 interval_ms: int = agent.INTERVAL_MS,
                 reward_baseline_k_mss: float | None = REWARD_BASELINE_K_MSS) -> None:
        self.traces = traces or repo_traces()
        self.episode_steps = episode_steps
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (agent.OBS_DIM,), np.float32)
        self.action_space = gym.spaces.Discrete(len(agent.ACTIONS))
        self.ep = Episode(Stepper(), interval_ms=interval_ms)
        self.baseline = (None if reward_baseline_k_mss is None else
                         BaselineRun(Episode(Stepper(), interval_ms=interval_ms), reward_baseline_k_mss))
        self.periods_ms: dict[Path, int] = {}
        self.t = 0
        self.trace: Path = self.traces[0]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.trace = self.traces[int(self.np_random.integers(len(self.traces)))]
        if self.trace not in self.periods_ms:
            self.periods_ms[self.trace] = int(self.ep.stepper.reset(self.trace)["period_ms"])
        start_ms = 1000 * int(self.np_random.integers(self.periods_ms[self.trace] // 1000))
        self.t = 0
        if self.baseline is not None:
            self.baseline.reset(self.trace, start_ms)
        return self.ep.reset(self.trace, start_ms), {"trace": str(self.trace), "start_ms": start_ms}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        r = self.ep.step(int(action))
        reward = r.reward - (self.baseline.reward() if self.baseline is not None else 0.0)
        self.t += 1
        info = {"k_mss": self.ep.k_mss, "raw_reward": r.reward, "throughput_mbps": r.throughput_mbps,
                "queuing_delay_ms": r.queuing_delay_ms, "loss_pct": r.loss_pct, "trace": self.trace.name}
        return r.obs, reward, False, self.t >= self.episode_steps, info

    def close(self) -> None:
        self.ep.stepper.close()
        if self.baseline is not None:
            self.baseline.episode.stepper.close()
