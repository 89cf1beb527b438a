"""Logs for the switching DQN (issue 18 item 3), from the sender-side simulator's mixed-flow runs.

Each scenario is one :func:`nuwa_lab.sendersim.simulate` run with ``switch="rule"`` whose Nuwa
flows' policy is replaced by :class:`BehaviourPolicy`: every
:data:`~nuwa_server.switch_dqn.DECISION_INTERVAL_US` it records the server's state vector
(:func:`nuwa_server.switch_dqn.features`) and picks the mode: the rule's choice, or with
probability ``epsilon`` a random mode held for 3–10 s (so both modes are seen in every
situation: offline DQN learns only what the logs contain). After the run each decision step
[t, t + 0.5 s) gets its reward from the bottleneck's truth:

    r = min(1, goodput ÷ fair share) − 0.5 × min(1, mean queuing delay ÷ 500 ms)

(fair share = the trace's capacity over the step ÷ the flows started; a step with no
capacity counts as fair). Alone, sender-driven control fills the queue and pays the delay
term for no gain; next to a buffer filler the delay is the competitor's in either mode and
the share term decides (the issue's targets: a fair share, low delay alone).

Scenarios run as Ray tasks (``--ray``, one CPU each; :mod:`nuwa_lab.spread`'s local Ray) or
one after the other. Output: one JSON file of transitions per split (``train``, ``val``: the
held-apart runs use other links, traces and seeds).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
STEP_US = 500_000

# name, flows, link ("const:MBPS" or a trace path under traces/), start gap s, duration s, seed
TRAIN: list[tuple[str, str, str, float, float, int]] = [
    ("nc10", "nuwa,cubic", "const:10", 5, 60, 1),
    ("nc20", "nuwa,cubic", "const:20", 5, 60, 2),
    ("nc12-late", "nuwa,cubic", "const:12", 20, 60, 3),
    ("cn10", "cubic,nuwa", "const:10", 5, 60, 4),
    ("nb10", "nuwa,bbr", "const:10", 5, 60, 5),
    ("nn10", "nuwa,nuwa", "const:10", 3, 40, 6),
    ("n10", "nuwa", "const:10", 0, 40, 7),
    ("n-att", "nuwa", "4G/mahimahi-att-lte-driving", 0, 60, 8),
    ("n-umts", "nuwa", "3G/mahimahi-tmobile-umts-driving", 0, 60, 9),
    ("n-lumos", "nuwa", "4G/lumos-vzw-lte-driving-50087", 0, 60, 10),
    ("n-bus", "nuwa", "3G/norway-hsdpa-bus-1", 0, 60, 11),
    ("nc-times", "nuwa,cubic", "4G/nyc2018-tmobile-lte-timessquare-static-cross", 5, 60, 12),
    ("22", "nuwa,nuwa,cubic,cubic", "const:10", 10, 60, 13),
]
VAL: list[tuple[str, str, str, float, float, int]] = [
    ("v-nc15", "nuwa,cubic", "const:15", 5, 60, 21),
    ("v-nb15", "nuwa,bbr", "const:15", 5, 60, 22),
    ("v-n-subway", "nuwa", "3G/nyc2018-unknownop-3g-subway", 0, 60, 23),
    ("v-n-walk", "nuwa", "4G/nyc2019-unknownop-lte-walking-3201711", 0, 60, 24),
    ("v-nc-walk", "nuwa,cubic", "4G/nyc2019-unknownop-lte-walking-3205967", 5, 60, 25),
]


def load_link(link: str) -> Any:
    """``const:MBPS`` or a trace path under traces/ (without .mahi)."""
    from nuwa_lab.emulator import constant_rate_trace, load_trace

    if link.startswith("const:"):
        return constant_rate_trace(float(link[6:]) * 1e6)
    return load_trace(REPO_ROOT / "traces" / f"{link}.mahi")


class BehaviourPolicy:
    """The rule with ε-random excursions (module doc); the switch-policy interface. Records
    ``steps`` = [(t_us, state, action index)]."""

    def __init__(self, now_us: int, epsilon: float, rng: random.Random) -> None:
        from nuwa_server.switch_policy import RuleSwitchPolicy

        self.rule = RuleSwitchPolicy(now_us)
        self.epsilon = epsilon
        self.rng = rng
        self.steps: list[tuple[int, list[float], int]] = []
        self._next_us = now_us
        self._hold_until_us = 0
        self._held: str | None = None

    @property
    def mode(self) -> str:
        return self.rule.mode

    @property
    def switches(self) -> int:
        return self.rule.switches

    def observe(self, now_us: int, window_bytes: int | None = None,
                queuing_delay_us: int | None = None, echo_us: int | None = None) -> None:
        self.rule.observe(now_us, window_bytes, queuing_delay_us, echo_us)

    def decide(self, now_us: int) -> str | None:
        from nuwa_server.switch_dqn import ACTIONS, features

        if now_us < self._next_us:
            return None
        self._next_us = now_us + STEP_US
        state = features(self.rule, now_us)
        if self._held is not None and now_us < self._hold_until_us:
            target: str | None = self._held
        elif self.rng.random() < self.epsilon:
            self._held = self.rng.choice(ACTIONS)
            self._hold_until_us = now_us + int(self.rng.uniform(3e6, 10e6))
            target = self._held
        else:
            self._held = None
            target = self.rule.decide(now_us)
        after = target if target is not None else self.mode
        self.steps.append((now_us, state, ACTIONS.index(after)))  # type: ignore[arg-type]
        return target if target is not None and target != self.mode else None

    def switched(self, now_us: int, mode: str) -> None:
        self.rule.switched(now_us, mode)  # type: ignore[arg-type]


def run_scenario(sc: tuple[str, str, str, float, float, int], epsilon: float) -> dict[str, Any]:
    """One logged run: its transitions (state, action, reward, next state, done) per Nuwa flow."""
    from nuwa_lab.sendersim import nuwa as sim_nuwa
    from nuwa_lab.sendersim import run as sim_run
    from nuwa_lab.sendersim.run import SimConfig

    name, flows, link, gap, dur, seed = sc
    rng = random.Random(seed)
    policies: list[BehaviourPolicy] = []
    captured: dict[str, Any] = {}

    def factory(config: Any, now_us: int, label: str = "") -> BehaviourPolicy:
        p = BehaviourPolicy(now_us, epsilon, rng)
        policies.append(p)
        return p

    def capture(schemes: Any, starts_ms: Any, delivered: Any, truth: Any, trace: Any, end_ms: int,
                from_ms: Any = None) -> Any:
        captured.update(starts_ms=list(starts_ms), delivered=delivered, truth=truth, trace=trace)
        return orig_summarize(schemes, starts_ms, delivered, truth, trace, end_ms, from_ms)

    orig_make, orig_summarize = sim_nuwa.make_policy, sim_run.summarize
    sim_nuwa.make_policy = factory  # type: ignore[assignment]
    sim_run.summarize = capture  # type: ignore[assignment]
    try:
        out = sim_run.simulate(flows.split(","), load_link(link),
                               SimConfig(start_gap_s=gap, duration_s=dur, seed=seed), switch="rule")
    finally:
        sim_nuwa.make_policy, sim_run.summarize = orig_make, orig_summarize
    nuwa_idx = [i for i, s in enumerate(flows.split(",")) if s == "nuwa"]
    trace, starts = captured["trace"], captured["starts_ms"]
    transitions = []
    for p, i in zip(policies, nuwa_idx, strict=True):
        ts, bs = captured["delivered"][i]
        tr = captured["truth"][i]
        rewards = [_reward(t, ts, bs, tr, trace, starts) for t, _, _ in p.steps]
        for k in range(len(p.steps) - 1):
            transitions.append({"s": p.steps[k][1], "a": p.steps[k][2], "r": rewards[k],
                                "s2": p.steps[k + 1][1], "done": False})
    return {"name": name, "transitions": transitions,
            "flows": [{k: f[k] for k in ("scheme", "share", "switches")} for f in out["flows"]],
            "jain_index": out["jain_index"]}


def _reward(t_us: int, ts: list[float], bs: list[int], truth: Any, trace: Any,
            starts_ms: list[float]) -> float:
    a_ms, b_ms = t_us / 1000, t_us / 1000 + STEP_US / 1000
    got = sum(b for t, b in zip(ts, bs, strict=True) if a_ms <= t < b_ms) * 8 / (STEP_US / 1e6)
    cap = len(trace.opportunities_between_ms(int(a_ms), int(b_ms))) * 1504 * 8 / (STEP_US / 1e6)
    n = sum(1 for s in starts_ms if s <= a_ms)
    share = 1.0 if cap <= 0 else min(1.0, got / (cap / max(1, n)))
    qds = [q for t, q in zip(truth.depart_ms, truth.queue_delay_ms, strict=True) if a_ms <= t < b_ms]
    qd = sum(qds) / len(qds) if qds else 0.0
    return share - 0.5 * min(1.0, qd / 500)


def collect(split: str, epsilon: float, use_ray: bool) -> list[dict[str, Any]]:
    """Every scenario of ``split`` (``train``/``val``), in parallel Ray tasks with ``use_ray``."""
    scs = TRAIN if split == "train" else VAL
    if not use_ray:
        return [run_scenario(sc, epsilon) for sc in scs]
    import ray
    from nuwa_lab.spread import init_ray

    init_ray()
    task = ray.remote(num_cpus=1)(run_scenario)
    try:
        return list(ray.get([task.remote(sc, epsilon) for sc in scs]))
    finally:
        ray.shutdown()


def main(argv: list[str] | None = None) -> None:
    """``python -m switch_rl.collect --out DIR [--epsilon E] [--ray]``: writes DIR/train.json and
    DIR/val.json."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--epsilon", type=float, default=0.15)
    p.add_argument("--ray", action="store_true")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        runs = collect(split, a.epsilon, a.ray)
        (out / f"{split}.json").write_text(json.dumps(runs))
        n = sum(len(r["transitions"]) for r in runs)
        print(f"{split}: {len(runs)} runs, {n} transitions → {out / split}.json", flush=True)


if __name__ == "__main__":
    main()
