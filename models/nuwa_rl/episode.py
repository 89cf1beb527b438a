"""One Nuwa-RL episode over the simulator, without gymnasium: the core the
gymnasium environment wraps and the evaluation reuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import agent
from .sim import Stepper


@dataclass
class StepResult:
    obs: np.ndarray
    reward: float
    stats: dict[str, Any]
    throughput_mbps: float
    queuing_delay_ms: float
    loss_pct: float


@dataclass
class Episode:
    """k-tuning episode: apply an action (Eq. 11), run one interval, observe (Eq. 10), score (Eq. 13)."""

    stepper: Stepper
    interval_ms: int = agent.INTERVAL_MS
    one_way_delay_ms: int = 25
    queue_packets: int = 1000
    k_mss: float = agent.K_INITIAL_MSS
    history: agent.History = field(default_factory=agent.History)
    player: agent.PlayerBuffer = field(default_factory=agent.PlayerBuffer)
    trace_mean_bps: float = 0.0
    #: Keep per-packet queuing delays in the stepper (evaluation: per-packet percentiles).
    record_queuing_delays: bool = False

    def reset(self, trace: str | Path, trace_start_ms: int = 0,
              k_initial_mss: float = agent.K_INITIAL_MSS) -> np.ndarray:
        info = self.stepper.reset(trace, trace_start_ms, one_way_delay_ms=self.one_way_delay_ms,
                                  queue_packets=self.queue_packets,
                                  record_queuing_delays=self.record_queuing_delays)
        self.trace_mean_bps = float(info["mean_bps"])
        self.k_mss = k_initial_mss
        self.history.reset()
        self.player = agent.PlayerBuffer()
        return self.history.observation()

    def step_k(self, k_mss: float) -> StepResult:
        """Run one interval at k (for fixed-k baselines; the agent goes through step())."""
        self.k_mss = k_mss
        st = self.stepper.step(k_mss, self.interval_ms)
        interval_s = self.interval_ms / 1000
        throughput_mbps = st["delivered_bytes"] * 8 / interval_s / 1e6
        n = st["departed_packets"]
        qd_ms = st["queuing_delay_sum_ms"] / n if n else 0.0
        loss_pct = 100.0 * st["dropped_packets"] / st["sent_packets"] if st["sent_packets"] else 0.0
        r = agent.reward(throughput_mbps, qd_ms, loss_pct)
        buf = self.player.step(st["received_frame_bytes"], interval_s)
        v = agent.features(st["received_frame_bytes"] * 8 / interval_s, st["window_bytes"], buf,
                           max(0.0, st["last_raw_queuing_delay_ms"]), self.k_mss)
        return StepResult(self.history.push(v), r, st, throughput_mbps, qd_ms, loss_pct)

    def step(self, action: int) -> StepResult:
        """Eq. 11, then one interval."""
        return self.step_k(agent.apply_action(self.k_mss, action))


#: k of the counterfactual baseline the training reward is measured against (None: raw Eq. 13 reward).
REWARD_BASELINE_K_MSS: float | None = 1.0


@dataclass
class BaselineRun:
    """The agent's trace and start replayed at a fixed k in lockstep with the agent.

    Training reward = agent's Eq. 13 reward − this run's Eq. 13 reward in the same interval.
    The baseline does not depend on the agent's actions, so the return it subtracts is the
    same for every policy and the optimal policy is unchanged (a state-independent baseline,
    Williams 1992; Greensmith et al. 2004); what it removes is the trace's own variance: how
    good this second of this trace is for any k, which is 25-50x larger than the effect of k
    (models/README.md) and buried the signal of the action in the raw reward.
    """

    episode: Episode
    k_mss: float

    def reset(self, trace: str | Path, trace_start_ms: int) -> None:
        self.episode.reset(trace, trace_start_ms, k_initial_mss=self.k_mss)

    def reward(self) -> float:
        """Run one interval at the fixed k; its Eq. 13 reward."""
        return self.episode.step_k(self.k_mss).reward
