"""End-to-end evaluation of Nuwa-RL against fixed k (issue 6, item 6).

``./nuwa bench --rl`` runs real bulk downloads in Chromium through the
emulator with the RL environment's controller settings (additive step, the
paper's Eq. 3 where k acts): the Nuwa-RL tuner (``tuner=rl``: the shipped ONNX
model in onnxruntime-web) and fixed k = 1, k = 7 and the best fixed k of the
simulator evaluation (``models/report/evaluation.json``, per family). This
module turns those runs into the table: per run, the reward of the training
environment (``models/nuwa_rl/agent.py`` ``reward``, nuwa-rl-journal Eq.
12-13) per 200 ms decision interval from the emulator's log (truth: delivered
throughput, mean queuing delay of the packets that left, drops over arrivals),
averaged; utilization, p95 queuing delay and loss over the run.

CLI::

    python -m nuwa_lab.rl_eval --bench-dir DIR [--md OUT.md]

reads ``DIR/rl-index.json`` (written by the bench), prints and writes the
Markdown table, and writes ``DIR/rl-eval.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .emulator.analysis import parse_log

REPO_ROOT = Path(__file__).resolve().parents[2]
INTERVAL_MS = 200
"""The agent's decision interval (agent.INTERVAL_MS)."""


def load_agent() -> ModuleType:
    """``models/nuwa_rl/agent.py`` (numpy only), loaded by path: the reward is defined once, there.

    :raises FileNotFoundError: if the file is missing.
    """
    path = REPO_ROOT / "models" / "nuwa_rl" / "agent.py"
    if not path.exists():
        raise FileNotFoundError(path)
    spec = importlib.util.spec_from_file_location("nuwa_rl_agent", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nuwa_rl_agent"] = mod
    spec.loader.exec_module(mod)
    return mod


def interval_rewards(log_path: Path, from_ms: float, to_ms: float,
                     agent: ModuleType | None = None) -> list[float]:
    """Reward of each 200 ms interval in [from_ms, to_ms) of an emulator log (log clock).

    Throughput: bytes that left the queue in the interval, Mbit/s; delay: mean
    queuing delay (departure − arrival) of those packets, ms (0 if none left);
    loss: drops / arrivals in the interval, percent (Eq. 13 units as agent.py).

    :raises ValueError: on a malformed log or an empty range.
    """
    if not to_ms > from_ms:
        raise ValueError(f"interval_rewards: empty range [{from_ms}, {to_ms})")
    ag = agent or load_agent()
    log = parse_log(log_path)
    n = int((to_ms - from_ms) // INTERVAL_MS)
    dlv = [0] * n
    qsum = [0.0] * n
    qn = [0] * n
    arr = [0] * n
    drp = [0] * n

    def idx(t: float) -> int:
        return int((t - from_ms) // INTERVAL_MS)

    for (a_t, _s), (d_t, d_size, _x) in zip(log.arrivals, log.departures, strict=False):
        i = idx(d_t)
        if 0 <= i < n:
            dlv[i] += d_size
            qsum[i] += d_t - a_t
            qn[i] += 1
    for t, _size in log.all_arrivals:
        i = idx(t)
        if 0 <= i < n:
            arr[i] += 1
    for t, _size in log.drops:
        i = idx(t)
        if 0 <= i < n:
            drp[i] += 1
    out: list[float] = []
    for i in range(n):
        mbps = dlv[i] * 8 / (INTERVAL_MS / 1000) / 1e6
        qd = qsum[i] / qn[i] if qn[i] else 0.0
        loss_pct = 100.0 * drp[i] / arr[i] if arr[i] else 0.0
        out.append(float(ag.reward(mbps, qd, loss_pct)))
    return out


def evaluate(bench_dir: Path) -> dict[str, Any]:
    """Rows of the evaluation from ``bench_dir/rl-index.json`` and each run's ``bench.json``.

    :raises FileNotFoundError: without ``rl-index.json``.
    """
    index = json.loads((bench_dir / "rl-index.json").read_text())
    agent = load_agent()
    rows: list[dict[str, Any]] = []
    for run in index["runs"]:
        run_dir = bench_dir / "runs" / run["id"]
        rec_path = run_dir / "bench.json"
        row: dict[str, Any] = {k: run[k] for k in ("id", "trace", "family", "policy", "k_mss")}
        if not rec_path.exists():
            rows.append({**row, "valid": False, "why": "no result"})
            continue
        rec = json.loads(rec_path.read_text())
        m = rec.get("metrics") or {}
        if rec.get("error") or not rec.get("valid", False):
            rows.append({**row, "valid": False,
                         "why": rec.get("error") or "; ".join(rec.get("invalid_reasons", []))})
            continue
        w = m.get("window_s") or [2.0, float(rec["duration_s"])]
        rewards = interval_rewards(run_dir / "emulator.log", 1000.0 * w[0], 1000.0 * w[1], agent)
        page = json.loads((run_dir / "page.json").read_text())
        ks = [k for _t, k, _ms in page.get("tuner_k") or []]
        inf = [ms for _t, _k, ms in page.get("tuner_k") or []]
        rows.append({
            **row, "valid": True,
            "reward": statistics.fmean(rewards) if rewards else math.nan,
            "utilization": m["utilization"], "qd_p95_ms": m["queuing_delay_ms"]["p95"],
            "qd_mean_ms": m["queuing_delay_ms"]["mean"], "loss_pct": 100.0 * m["loss_rate"],
            "k_mean": statistics.fmean(ks) if ks else run["k_mss"],
            "decisions": len(ks),
            "inference_ms_p50": statistics.median(inf) if inf else None,
        })
    return {"command": index.get("command"), "started_utc": index.get("started_utc"),
            "ended_utc": index.get("ended_utc"), "git": index.get("git"), "rows": rows}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown(result: dict[str, Any]) -> str:
    """The table and the targets (issue 6), computed from the rows."""
    rows = result["rows"]
    lines = [
        "# Nuwa-RL end to end (issue 6, item 6)", "",
        f"Produced by `{result.get('command')}` from {result.get('started_utc')} to "
        f"{result.get('ended_utc')} (UTC), commit {(result.get('git') or {}).get('commit', '?')}. "
        "Real bulk downloads in headless Chromium through the trace-driven emulator (25 ms "
        "each way, 1000-packet drop-tail queue), controller in the RL environment's settings "
        "(additive step, Td 25 ms, ρ 15 ms); `rl` runs the shipped model in onnxruntime-web "
        "every 200 ms, fed the training environment's simple player buffer. Reward: "
        "`models/nuwa_rl/agent.py` `reward` (Eq. 12–13) per 200 ms interval from the "
        "emulator log, averaged over the run after 2 s.", "",
        _row(["family", "trace", "policy", "k (mean)", "reward", "util", "Qd mean ms",
              "Qd p95 ms", "loss %", "decisions", "inference p50 ms"]),
        _row(["---"] * 11),
    ]
    for r in rows:
        if not r["valid"]:
            lines.append(_row([r["family"], r["trace"], r["policy"], "–", f"invalid: {r['why']}",
                               *[""] * 6]))
            continue
        inf = r.get("inference_ms_p50")
        lines.append(_row([
            r["family"], r["trace"], r["policy"], f"{r['k_mean']:.2f}", f"{r['reward']:.3f}",
            f"{r['utilization']:.3f}", f"{r['qd_mean_ms']:.1f}", f"{r['qd_p95_ms']:.0f}",
            f"{r['loss_pct']:.2f}", str(r["decisions"]), "–" if inf is None else f"{inf:.2f}"]))
    lines += ["", "Targets, per trace (computed):", "",
              _row(["trace", "RL reward − best fixed", "within 5 %?", "RL − worst fixed (reward)",
                    "RL util ≥ 0.95× best fixed's at ≤ its p95"]),
              _row(["---"] * 5)]
    for trace in dict.fromkeys(r["trace"] for r in rows):
        rs = [r for r in rows if r["trace"] == trace and r["valid"]]
        rl = next((r for r in rs if r["policy"] == "rl"), None)
        fixed = [r for r in rs if r["policy"] != "rl"]
        if rl is None or not fixed:
            lines.append(_row([trace, "–", "not measured", "–", "–"]))
            continue
        best = max(fixed, key=lambda r: r["reward"])
        worst = min(fixed, key=lambda r: r["reward"])
        gap = rl["reward"] - best["reward"]
        within = gap >= 0 or abs(gap) <= 0.05 * abs(best["reward"])
        util_ok = (rl["utilization"] >= 0.95 * best["utilization"]
                   and rl["qd_p95_ms"] <= best["qd_p95_ms"])
        lines.append(_row([
            trace, f"{gap:+.3f} ({best['policy']})", "yes" if within else "no",
            f"{rl['reward'] - worst['reward']:+.3f} ({worst['policy']})",
            f"{'yes' if util_ok else 'no'} ({rl['utilization']:.3f} / {rl['qd_p95_ms']:.0f} ms vs "
            f"{best['utilization']:.3f} / {best['qd_p95_ms']:.0f} ms)"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-dir", type=Path, required=True)
    ap.add_argument("--md", type=Path, help="also write the Markdown here")
    a = ap.parse_args(argv)
    try:
        result = evaluate(a.bench_dir)
    except FileNotFoundError as e:
        ap.exit(2, f"rl_eval: {e}\n")
    (a.bench_dir / "rl-eval.json").write_text(json.dumps(result, indent=1))
    md = markdown(result)
    (a.bench_dir / "rl-eval.md").write_text(md)
    if a.md:
        a.md.write_text(md)
    print(md)


if __name__ == "__main__":
    main()
