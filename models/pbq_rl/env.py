"""Gymnasium environment of PBQ (docs/PBQ.md "Training"): one PBQ flow, sometimes beside one
BBR flow (the paper's 2-flow dumbbell), in the sender-side simulator (``nuwa_lab.sendersim``:
aioquic's recovery and pacer over the Mahimahi link model).

The controller the agent drives is the server's own :class:`nuwa_server.cc.pbq.
PbqCongestionControl`, created by aioquic's registry under its name ``pbq`` exactly as a
server connection creates it: each step calls the methods the server's
:class:`nuwa_server.cc.pbq_agent.PbqAgent` calls (``apply_action``, then ``observe`` 100 ms of
simulated time later), so a trained policy acts on the code that ships.

Episode (:class:`PbqEnv`): a link drawn per episode: half the episodes a constant link
(2–50 Mbit/s, log-uniform), half a 30 s stretch of a training trace (:func:`split_traces`);
one-way delay 10–50 ms; drop-tail queue 0.5–4 BDP (at least 8 packets); random loss 0–2.5 %
on half the episodes (the paper's Fig. 9–10 range), none on the others; a BBR competitor on
half the episodes. :data:`EPISODE_STEPS` decisions of 100 ms (30 s).

Reward (docs/PBQ.md "Reward"): ``U = delivery_rate / max_delivery_rate − 5 · loss_rate``;
``r = U − 1 · (latest_RTT / min_RTT − 1.25)`` when the RTT exceeds 1.25 min RTT, else U.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from nuwa_lab.emulator import Trace, constant_rate_trace, load_trace
from nuwa_lab.sendersim.core import Path as SimPath
from nuwa_lab.sendersim.core import Sim
from nuwa_lab.sendersim.quic import WIRE_BYTES, QuicReceiver, QuicSender
from nuwa_lab.sendersim.schemes import load_plugins, pacer_hook
from nuwa_server.cc.pbq import INTERVAL_S, PBQ_CC_NAME, STATE_SIZE, PbqCongestionControl

from .scenario import RTT_THRESHOLD, reward, split_traces

EPISODE_STEPS = 300
"""Decisions per episode: 30 s of 100 ms intervals (docs/PBQ.md)."""


class PbqEnv(gym.Env[np.ndarray, np.ndarray]):
    """One PBQ flow in the sender-side simulator (module doc).

    Observation: float32 [STATE_SIZE] (``pbq-state-v1``). Action: float32 [1] in [−1, 1]
    (the exponent of the window ratio). info: the interval's ``delivery_mbps``,
    ``loss_rate``, ``rtt_ratio``, ``cwnd_bytes`` and the episode's ``scenario``.

    Args:
        traces: training traces (default: :func:`split_traces`'s first list).
        episode_steps: decisions per episode.
        scenario: fixed scenario keys overriding the draws (``kind`` constant|trace, ``rate_mbps``,
            ``trace``, ``start_s``, ``delay_ms``, ``queue_bdp``, ``loss``, ``competitor``):
            the evaluation's settings.
        rtt_threshold: the reward's delay constraint, × min RTT (:func:`.scenario.reward`).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, traces: list[Path] | None = None, episode_steps: int = EPISODE_STEPS,
                 scenario: dict[str, Any] | None = None, rtt_threshold: float = RTT_THRESHOLD) -> None:
        load_plugins()  # registers pbq, bbr with aioquic
        self.traces = traces if traces is not None else split_traces()[0]
        self.episode_steps = episode_steps
        self.fixed = dict(scenario or {})
        self.rtt_threshold = rtt_threshold
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (STATE_SIZE,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._loaded: dict[Path, Trace] = {}
        self.scenario: dict[str, Any] = {}
        self.t = 0
        self.sim: Sim | None = None
        self.cc: PbqCongestionControl | None = None
        self.receivers: list[QuicReceiver] = []

    def _draw(self) -> dict[str, Any]:
        rng = self.np_random
        sc: dict[str, Any] = {
            "kind": "constant" if rng.random() < 0.5 else "trace",
            "rate_mbps": float(math.exp(rng.uniform(math.log(2), math.log(50)))),
            "delay_ms": float(rng.uniform(10, 50)),
            "queue_bdp": float(rng.uniform(0.5, 4.0)),
            "loss": float(rng.uniform(0, 0.025)) if rng.random() < 0.5 else 0.0,
            "competitor": bool(rng.random() < 0.5),
        }
        if sc["kind"] == "trace":
            sc["trace"] = str(self.traces[int(rng.integers(len(self.traces)))])
        sc.update(self.fixed)
        if sc["kind"] == "trace":
            sc.pop("rate_mbps", None)  # the trace's own rate
        return sc

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        sc = self._draw()
        if sc["kind"] == "trace":
            p = Path(sc["trace"])
            if p not in self._loaded:
                self._loaded[p] = load_trace(p)
            trace = self._loaded[p]
            span_s = max(1, trace.period_ms // 1000 - self.episode_steps // 10)
            sc.setdefault("start_s", int(self.np_random.integers(span_s)))
            rate_bps = trace.mean_rate_bps
        else:
            trace = constant_rate_trace(sc["rate_mbps"] * 1e6)
            sc.setdefault("start_s", 0)
            rate_bps = sc["rate_mbps"] * 1e6
        bdp_packets = rate_bps / 8 * (2 * sc["delay_ms"] / 1000) / WIRE_BYTES
        sc["queue_packets"] = max(8, int(sc["queue_bdp"] * bdp_packets))
        self.scenario = sc
        seed_run = int(self.np_random.integers(2**31))
        self.sim = Sim()
        path = SimPath(self.sim, trace, sc["queue_packets"], sc["delay_ms"], sc["loss"], seed_run)
        start_ms = sc["start_s"] * 1000.0
        hook = pacer_hook()
        pbq = QuicSender(path, 0, PBQ_CC_NAME, start_ms, hook, seed=seed_run)
        self.receivers = [QuicReceiver(path, pbq)]
        path.attach(self.receivers[0])
        if sc["competitor"]:
            other = QuicSender(path, 1, "bbr", start_ms + float(self.np_random.uniform(0, 10)), hook,
                               seed=seed_run + 1)
            self.receivers.append(QuicReceiver(path, other))
            path.attach(self.receivers[1])
        cc = pbq.recovery._cc
        if not isinstance(cc, PbqCongestionControl):
            raise TypeError(f"aioquic created {type(cc).__name__} for {PBQ_CC_NAME!r}")
        self.cc = cc
        self.t = 0
        self.sim.run_until(start_ms + INTERVAL_S * 1000)
        obs = self._observe()
        return obs, {"scenario": dict(sc)}

    def _observe(self) -> np.ndarray:
        assert self.sim is not None and self.cc is not None
        obs = np.asarray(self.cc.observe(self.sim.now_s), np.float32)
        if not np.all(np.isfinite(obs)):
            raise FloatingPointError(f"non-finite state {obs.tolist()} in {self.scenario}")
        return obs

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        assert self.sim is not None and self.cc is not None
        a = float(np.clip(np.asarray(action, np.float64).reshape(-1)[0], -1.0, 1.0))
        self.cc.apply_action(a, self.sim.now_s)
        self.sim.run_until(self.sim.now_ms + INTERVAL_S * 1000)
        obs = self._observe()
        iv = self.cc.last_interval
        assert iv is not None
        r = reward(iv, self.rtt_threshold)
        self.t += 1
        info = {"delivery_mbps": iv.delivery_rate_bytes_per_s * 8 / 1e6, "loss_rate": iv.loss_rate,
                "rtt_ratio": iv.latest_rtt_s / iv.min_rtt_s if iv.min_rtt_s > 0 else 0.0,
                "cwnd_bytes": iv.cwnd_bytes, "reward": r}
        return obs, r, False, self.t >= self.episode_steps, info
