"""The Nuwa-RL agent's definition (nuwa-rl-journal §V-B), numpy only.

State (Eq. 10), action (Eq. 11) and reward (Eq. 12-13), plus the choices the
paper leaves open, each stated here and written into the model's metadata:

- interval: 200 ms between decisions;
- history n = HISTORY_LEN intervals, oldest first, zero-padded at episode start;
- per interval v_t = (g_t received throughput, w_t window, r_t player buffer,
  l_t one-way queuing delay) as in §V-B, plus k itself (the action is relative
  to k, so the agent is told where it is: a choice beyond the paper);
- l_t is the controller's own Eq. 1 queuing delay of the last frame (one-way
  delay minus the base one-way delay), since the absolute one-way delay
  carries the unknown clock offset in a browser;
- normalisation (FEATURES below): log2 scales for throughput and window
  (they span 0.3-1000 Mbit/s), linear for buffer, delay and k;
- reward units: b in Mbit/s, tau_r in units of DELAY_UNIT_MS = 25 ms (the
  environment's target delay Td; mean true queuing delay of the interval),
  tau_l in percent (drop-tail drops / packets sent). With tau_r in ms the
  delay term dominates Eq. 13 and k = 1 wins on every trace by a wide margin;
  in units of Td the three terms are of one size on our traces (a fixed-k
  sweep: best k is 1 on most traces, 3 on T-Mobile UMTS, 5 on T-Mobile LTE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: Eq. 11: k <- k * a.
ACTIONS: tuple[float, ...] = (0.25, 1.0, 1.05, 1.25, 2.85)
#: The paper's range of k, MSS per RTT (§V, "[1-9]").
K_MIN_MSS = 1.0
K_MAX_MSS = 9.0
#: k at the start of an episode / session: the geometric middle of [1, 9].
K_INITIAL_MSS = 3.0
INTERVAL_MS = 200
HISTORY_LEN = 8
EPISODE_STEPS = 800  # §V-B "Training": 800 steps
#: Eq. 13 weights gamma, theta, phi and Eq. 12 alpha (§V-B).
W_THROUGHPUT = 0.4
W_DELAY = 0.4
W_LOSS = 0.2
ALPHA = 0.6
#: Unit of tau_r in Eq. 13, ms (the environment's target delay Td, sim.ENV_CC_CONFIG).
DELAY_UNIT_MS = 25.0

#: Observation features per interval, in order, with their normalisation.
FEATURES: tuple[dict[str, str], ...] = (
    {"name": "throughput", "source": "received frame bytes in the interval * 8 / interval",
     "normalise": "log2(1 + throughput_Mbps) / 10"},
    {"name": "window", "source": "controller window at the end of the interval",
     "normalise": "log2(1 + window_bytes / 1200) / 16"},
    {"name": "buffer", "source": "player buffer level at the end of the interval",
     "normalise": "buffer_s / 30"},
    {"name": "queuing_delay", "source": "controller raw Eq. 1 queuing delay of the last frame",
     "normalise": "min(queuing_delay_ms, 1000) / 100"},
    {"name": "k", "source": "k in force during the interval (the base of the next action)",
     "normalise": "k_mss / 9"},
)
N_FEATURES = len(FEATURES)
OBS_DIM = HISTORY_LEN * N_FEATURES


def alpha_fair(x: float, alpha: float = ALPHA) -> float:
    """Eq. 12: U_alpha(x) = log x for alpha = 1, x^(1-alpha)/(1-alpha) otherwise.

    :raises ValueError: for x < 0 (or x <= 0 with alpha = 1) or alpha <= 0.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0 (got {alpha})")
    if x < 0 or not math.isfinite(x):
        raise ValueError(f"alpha_fair: x must be finite and >= 0 (got {x})")
    if alpha == 1.0:
        if x == 0:
            raise ValueError("alpha_fair: log(0) for alpha = 1")
        return math.log(x)
    return float(x ** (1.0 - alpha) / (1.0 - alpha))


def reward(throughput_mbps: float, queuing_delay_ms: float, loss_pct: float) -> float:
    """Eq. 13: gamma*U(b) - theta*U(tau_r) - phi*U(tau_l), units as in the module doc."""
    return (W_THROUGHPUT * alpha_fair(throughput_mbps)
            - W_DELAY * alpha_fair(queuing_delay_ms / DELAY_UNIT_MS)
            - W_LOSS * alpha_fair(loss_pct))


def apply_action(k_mss: float, action: int) -> float:
    """Eq. 11: k <- clamp(k * a, 1, 9).

    :raises ValueError: for an action index outside the action set.
    """
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"action index must be in [0, {len(ACTIONS)}) (got {action})")
    return min(K_MAX_MSS, max(K_MIN_MSS, k_mss * ACTIONS[action]))


def features(throughput_bps: float, window_bytes: float, buffer_s: float,
             queuing_delay_ms: float, k_mss: float) -> np.ndarray:
    """One interval's normalised v_t (FEATURES), float32 [N_FEATURES].

    :raises ValueError: on a NaN, infinite or negative input.
    """
    raw = (throughput_bps, window_bytes, buffer_s, queuing_delay_ms, k_mss)
    for name, v in zip(("throughput_bps", "window_bytes", "buffer_s", "queuing_delay_ms", "k_mss"),
                       raw, strict=True):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"observation {name} must be finite and >= 0 (got {v})")
    return np.array([
        math.log2(1.0 + throughput_bps / 1e6) / 10.0,
        math.log2(1.0 + window_bytes / 1200.0) / 16.0,
        buffer_s / 30.0,
        min(queuing_delay_ms, 1000.0) / 100.0,
        k_mss / K_MAX_MSS,
    ], dtype=np.float32)


@dataclass
class History:
    """Eq. 10: S_t = (v_{t-n+1}, ..., v_t), oldest first, flattened [OBS_DIM]."""

    n: int = HISTORY_LEN
    rows: list[np.ndarray] = field(default_factory=list)

    def reset(self) -> None:
        self.rows.clear()

    def push(self, v: np.ndarray) -> np.ndarray:
        self.rows.append(v)
        if len(self.rows) > self.n:
            self.rows.pop(0)
        return self.observation()

    def observation(self) -> np.ndarray:
        pad = [np.zeros(N_FEATURES, np.float32)] * (self.n - len(self.rows))
        return np.concatenate(pad + self.rows).astype(np.float32)


#: The DASH ladder of lab/nuwa_lab/dashgen.py (DEFAULT_LADDER), bits per second.
LADDER_BPS: tuple[int, ...] = (300_000, 750_000, 1_200_000, 1_850_000, 2_850_000,
                               4_300_000, 6_000_000, 8_000_000)
SEGMENT_S = 2.0
BUFFER_MAX_S = 30.0


@dataclass
class PlayerBuffer:
    """A simple player: a rate-based bitrate choice per 2 s segment, 1 s/s playback.

    The bulk download feeds it: received bits / bitrate = seconds of content.
    The bitrate of each segment is the highest rung <= 0.9 x the harmonic mean
    of the last 5 interval throughputs (a rate rule like dash.js's
    ThroughputRule). Playback starts (and restarts after a stall) at one
    segment of buffer. The level is capped at BUFFER_MAX_S (a player stops
    fetching there; the simulated sender does not, so the surplus is dropped).
    """

    buffer_s: float = 0.0
    playing: bool = False
    bitrate_bps: int = LADDER_BPS[0]
    segment_left_s: float = SEGMENT_S
    stall_s: float = 0.0
    recent_bps: list[float] = field(default_factory=list)

    def step(self, received_bytes: float, interval_s: float) -> float:
        """Advance one interval; returns the buffer level, s."""
        if received_bytes < 0 or interval_s <= 0:
            raise ValueError("PlayerBuffer.step: received_bytes >= 0 and interval_s > 0")
        self.recent_bps = (self.recent_bps + [received_bytes * 8 / interval_s])[-5:]
        bits = received_bytes * 8.0
        while bits > 0:
            take_s = min(bits / self.bitrate_bps, self.segment_left_s)
            self.buffer_s += take_s
            bits -= take_s * self.bitrate_bps
            self.segment_left_s -= take_s
            if self.segment_left_s <= 1e-9:
                self.segment_left_s = SEGMENT_S
                self._choose()  # the next segment's bitrate
            if bits < 1e-6:
                break
        if not self.playing and self.buffer_s >= SEGMENT_S:
            self.playing = True
        if self.playing:
            self.buffer_s -= interval_s
            if self.buffer_s < 0:
                self.stall_s += -self.buffer_s
                self.buffer_s = 0.0
                self.playing = False
        self.buffer_s = min(self.buffer_s, BUFFER_MAX_S)
        return self.buffer_s

    def _choose(self) -> None:
        xs = [x for x in self.recent_bps if x > 0]
        hm = len(xs) / sum(1 / x for x in xs) if xs else 0.0
        ok = [r for r in LADDER_BPS if r <= 0.9 * hm]
        self.bitrate_bps = ok[-1] if ok else LADDER_BPS[0]
