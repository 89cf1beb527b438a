"""Evaluate Nuwa-RL against fixed k in the simulator (@nuwa/cc's core through sim.py).

Every policy runs the same episodes: each trace from its start (t = 0),
EPISODE_STEPS intervals of 200 ms (160 s; shorter traces loop), k starting at
K_INITIAL_MSS for the agent. The agent is the exported ONNX model run with
onnxruntime (greedy action), so what is evaluated is what ships.

Per episode: mean reward (Eq. 13), utilization (delivered / offered bytes),
per-packet mean and p95 true queuing delay (from the link), loss.

Each trace's episodes (every fixed k, then the agent) are one Ray task (1 CPU: this process and
its Node stepper take turns), run as the CPUs allow (issue 16 item 5, docs/ARCHITECTURE.md "Runs
that spread"): a light local Ray by default, or the cluster at ``--ray-address`` (every node with
the repository, set up, at the same path). A trace's result does not depend on where or with
what else it ran (models/tests/test_evaluate.py compares with one process running them in turn).

Usage: python -m nuwa_rl.evaluate [--model models/nuwa-rl.onnx] [--json OUT] [--md OUT]
       [--ray-address ADDR]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import agent, sim
from .episode import Episode
from .sim import REPO_ROOT, Stepper

FIXED_KS: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0, 7.0, 9.0)


def held_out_trace_dirs() -> list[Path]:
    """Directories of traces kept outside the repository (``NUWA_TRACE_DIRS``, colon-separated,
    each laid out as ``3G/ 4G/ 5G/ broadband/``); none when unset (docs/DESIGN.md §7)."""
    return [Path(d) for d in os.environ.get("NUWA_TRACE_DIRS", "").split(":") if d]


def eval_traces() -> list[tuple[str, Path]]:
    """(family, path): the repo's 3G/4G/5G traces (the training set), plus mmWave 5G and
    broadband from the held-out directories of ``NUWA_TRACE_DIRS`` (not trained on)."""
    out = [(f, p) for f in ("3G", "4G", "5G") for p in sorted((REPO_ROOT / "traces" / f).glob("*.mahi"))]
    for d in held_out_trace_dirs():
        out += [("5G-mmWave", p) for p in sorted((d / "5G").glob("lumos5g-*mmwave*.mahi"))]
        out += [("broadband", p) for p in sorted((d / "broadband").glob("*.mahi"))]
    return out


class OnnxAgent:
    """The exported actor step, greedy. Shapes as in export.py's metadata."""

    def __init__(self, model: Path) -> None:
        import onnxruntime as ort

        self.sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        meta = json.loads(model.with_suffix(".json").read_text())
        self.hidden = int(meta["lstm"]["hidden_size"])
        self.reset()

    def reset(self) -> None:
        self.h = np.zeros((1, 1, self.hidden), np.float32)
        self.c = np.zeros((1, 1, self.hidden), np.float32)
        self.start = np.ones((1,), np.float32)

    def act(self, obs: np.ndarray) -> int:
        logits, self.h, self.c = self.sess.run(
            None, {"obs": obs[None, :].astype(np.float32), "h": self.h, "c": self.c,
                   "episode_start": self.start})
        self.start = np.zeros((1,), np.float32)
        return int(np.argmax(logits[0]))


def run_episode(ep: Episode, trace: Path, policy: Callable[[np.ndarray], float] | None,
                fixed_k: float | None, steps: int) -> dict[str, Any]:
    """One episode; `policy(obs) -> action index` or a fixed k."""
    obs = ep.reset(trace, 0)
    rewards, qds, ks = [], [], []
    delivered = capacity = sent = dropped = 0
    for _ in range(steps):
        r = ep.step_k(fixed_k) if fixed_k is not None else ep.step(int(policy(obs)))  # type: ignore[misc]
        obs = r.obs
        rewards.append(r.reward)
        qds.append(r.queuing_delay_ms)
        ks.append(ep.k_mss)
        delivered += r.stats["delivered_bytes"]
        capacity += r.stats["capacity_bytes"]
        sent += r.stats["sent_packets"]
        dropped += r.stats["dropped_packets"]
    per_packet = ep.stepper.summary()["queuing_delay_ms"]
    return {"reward": float(np.mean(rewards)), "utilization": delivered / max(1, capacity),
            "qd_mean_ms": float(per_packet["mean"] or 0.0), "qd_p95_ms": float(per_packet["p95"] or 0.0),
            "qd_p95_interval_mean_ms": float(np.percentile(qds, 95)),
            "loss_pct": 100 * dropped / max(1, sent), "k_mean": float(np.mean(ks)),
            "k_series": ks if fixed_k is None else [], "stall_s": ep.player.stall_s}


def evaluate_trace(model: Path | None, family: str, trace: Path, steps: int,
                   ep: Episode | None = None) -> dict[str, Any]:
    """One row of the evaluation: every fixed k, then the agent (if ``model``), on ``trace``.
    Uses ``ep`` (a caller's episode, reset per run) or one of its own, closed at the end."""
    own = ep is None
    ep = ep or Episode(Stepper(), record_queuing_delays=True)
    try:
        res: dict[str, Any] = {"family": family, "trace": trace.name}
        for k in FIXED_KS:
            res[f"k={k:g}"] = run_episode(ep, trace, None, k, steps)
        if model:
            rl = OnnxAgent(model)
            res["rl"] = run_episode(ep, trace, rl.act, None, steps)
        return res
    finally:
        if own:
            ep.stepper.close()


def _evaluate_trace_task(model: Path | None, family: str, trace: Path, steps: int,
                         cc: dict[str, Any]) -> dict[str, Any]:
    """:func:`evaluate_trace` in a Ray worker, with the caller's controller settings (its
    ``sim.ENV_CC_CONFIG``, which ``train.py --cc`` changes in the caller's process only)."""
    sim.ENV_CC_CONFIG.clear()
    sim.ENV_CC_CONFIG.update(cc)
    return evaluate_trace(model, family, trace, steps)


def _row_line(res: dict[str, Any]) -> str:
    return f"{res['family']} {res['trace']} " + str(
        {p: round(v["reward"], 3) for p, v in res.items() if isinstance(v, dict)})


def init_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """A light local Ray (no dashboard, a 100 MB object store, ``num_cpus`` or all CPUs, no
    usage report; as lab/nuwa_lab/spread.py, which this venv does not hold) or the cluster at
    ``address``."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # local workers inherit this environment: let them import nuwa_rl where this process found
    # it on sys.path only (the repository's .venv runs models/tests without installing it)
    pkg_root = str(Path(__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    if pkg_root not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, path) if p)
    import ray

    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                 object_store_memory=100 * 1024 * 1024, log_to_driver=False)


def evaluate(model: Path | None, steps: int = agent.EPISODE_STEPS,
             traces: list[tuple[str, Path]] | None = None, ray_address: str | None = None,
             serial: bool = False) -> dict[str, Any]:
    """The evaluation table's rows, one per trace of ``traces`` (default :func:`eval_traces`),
    in that order. One Ray task per trace (1 CPU) on the Ray already running in this process,
    else on one started here (local, or the cluster at ``ray_address``) and shut down at the
    end. ``serial``: one episode in this process runs them in turn instead (the reference the
    tests compare with; not the default)."""
    traces = eval_traces() if traces is None else traces
    rows: list[dict[str, Any]] = []
    if serial:
        ep = Episode(Stepper(), record_queuing_delays=True)
        try:
            for family, trace in traces:
                rows.append(evaluate_trace(model, family, trace, steps, ep))
                print(_row_line(rows[-1]), flush=True)
        finally:
            ep.stepper.close()
        return {"steps": steps, "interval_ms": agent.INTERVAL_MS, "rows": rows}
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray_address)
    try:
        task = ray.remote(_evaluate_trace_task).options(num_cpus=1, max_retries=0)
        cc = dict(sim.ENV_CC_CONFIG)
        refs = [task.remote(model, family, trace, steps, cc) for family, trace in traces]
        index = {r: i for i, r in enumerate(refs)}
        out: list[dict[str, Any] | None] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            out[index[done[0]]] = res = ray.get(done[0])
            print(_row_line(res), flush=True)
        rows = [r for r in out if r is not None]
    finally:
        if started_here:
            ray.shutdown()
    return {"steps": steps, "interval_ms": agent.INTERVAL_MS, "rows": rows}


def family_table(result: dict[str, Any]) -> str:
    """Markdown: per family, mean over its traces, for RL, k=1, k=7, best and worst fixed k."""
    fams: dict[str, list[dict[str, Any]]] = {}
    for r in result["rows"]:
        fams.setdefault(r["family"], []).append(r)
    lines = ["| family (traces) | policy | reward | utilization | qd mean ms | qd p95 ms | loss % |",
             "|---|---|---|---|---|---|---|"]
    summary = []
    for fam, rows in fams.items():
        def mean(pol: str, key: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(np.mean([r[pol][key] for r in rows]))
        fixed = [f"k={k:g}" for k in FIXED_KS]
        best = max(fixed, key=lambda p: mean(p, "reward"))
        worst = min(fixed, key=lambda p: mean(p, "reward"))
        pols = [("k=1", "k=1"), ("k=7", "k=7"), (f"best fixed ({best})", best),
                (f"worst fixed ({worst})", worst)]
        if "rl" in rows[0]:
            pols.insert(0, ("Nuwa-RL", "rl"))
        for label, p in pols:
            lines.append(f"| {fam} ({len(rows)}) | {label} | {mean(p, 'reward'):.3f} | "
                         f"{mean(p, 'utilization'):.3f} | {mean(p, 'qd_mean_ms'):.1f} | "
                         f"{mean(p, 'qd_p95_ms'):.1f} | {mean(p, 'loss_pct'):.2f} |")
        if "rl" in rows[0]:
            # Hindsight: the best fixed k chosen per trace, knowing the whole trace. No policy that
            # keeps one k per trace can beat it; an agent gains more only by changing k within one.
            hindsight = float(np.mean([max(r[p]["reward"] for p in fixed) for r in rows]))
            summary.append({"family": fam, "rl": mean("rl", "reward"), "best": mean(best, "reward"),
                            "best_k": best, "worst": mean(worst, "reward"), "worst_k": worst,
                            "hindsight": hindsight})
    if summary:
        def rel(a: float, b: float) -> float:
            return 100.0 * (a - b) / abs(b) if b else float("nan")

        lines.append("")
        lines.append("| family | RL − best fixed (reward) | RL − worst fixed | RL vs worst, % | "
                     "hindsight per-trace k vs worst, % |")
        lines.append("|---|---|---|---|---|")
        for s in summary:
            lines.append(f"| {s['family']} | {s['rl'] - s['best']:+.3f} ({s['best_k']}) | "
                         f"{s['rl'] - s['worst']:+.3f} ({s['worst_k']}) | {rel(s['rl'], s['worst']):+.1f} | "
                         f"{rel(s['hindsight'], s['worst']):+.1f} |")
        within = all(s["rl"] >= s["best"] - 0.05 * abs(s["best"]) for s in summary)
        avg = float(np.mean([rel(s["rl"], s["worst"]) for s in summary]))
        avg_h = float(np.mean([rel(s["hindsight"], s["worst"]) for s in summary]))
        big = [s for s in summary if abs(s["worst"]) >= 0.1]
        avg_big = float(np.mean([rel(s["rl"], s["worst"]) for s in big])) if big else float("nan")
        lines.append("")
        lines.append(f"Within 5 % of the best fixed k on every family: {'yes' if within else 'no'}. "
                     f"Mean over families of RL vs the worst fixed k: {avg:+.1f} % (hindsight per-trace "
                     f"k: {avg_h:+.1f} %); without families whose rewards are near 0 (|worst| < 0.1, "
                     f"where a percentage says little): {avg_big:+.1f} %.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=REPO_ROOT / "models" / "nuwa-rl.onnx")
    ap.add_argument("--no-model", action="store_true", help="fixed k only")
    ap.add_argument("--steps", type=int, default=agent.EPISODE_STEPS)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--md", type=Path)
    ap.add_argument("--ray-address", help="join this Ray cluster (default: a local Ray)")
    a = ap.parse_args()
    res = evaluate(None if a.no_model else a.model, a.steps, ray_address=a.ray_address)
    table = family_table(res)
    print(table)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res))
    if a.md:
        a.md.parent.mkdir(parents=True, exist_ok=True)
        a.md.write_text(table + "\n")


if __name__ == "__main__":
    main()
