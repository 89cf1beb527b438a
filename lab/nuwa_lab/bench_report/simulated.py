"""The report's SIMULATED sections, from ``bench-index.json`` (``@nuwa/cc``'s in-process
simulator, packages/cc/src/sim/): every trace per queue, the gap to the end-to-end runs of the
same traces, the parameter sweeps (with their plot) and flows sharing one bottleneck."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from .markdown import fmt, qname, table
from .metrics import Cells
from .plots import plot_sweeps


def sim_section(sim: list[dict[str, Any]], cells: Cells) -> list[str]:
    """Simulated runs (``index["sim"]``: {name, family, scheme, queue_packets, utilization,
    queuing_delay_ms.p95, loss_rate}) per queue, and their gap to the end-to-end cells (the
    simulated ``aimd`` against the real ``cubic``); empty when ``sim`` is."""
    md: list[str] = []
    if sim:
        md += ["## SIMULATED: every trace in the in-process simulator", "",
               "Model (packages/cc/src/sim/bench-sim.ts): 1 ms steps, Mahimahi drop-tail link, "
               "25 ms each way, paced sender with loss recovery and the server's ceiling (AIMD "
               "with Cubic's β = 0.7). `aimd` is that ceiling alone: a simulated loss-based "
               "sender standing in for cubic, not Cubic's curve. mmWave/NSA traces are here "
               "only: above ~60 Mbit/s the end-to-end path measures this machine's CPU "
               "(docs/DESIGN.md §8).", ""]
        by_q: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for s in sim:
            by_q[int(s["queue_packets"])].append(s)
        for q, rs in sorted(by_q.items(), reverse=True):
            md += [f"SIMULATED, {qname(q)}: utilization / p95 (ms) / loss", ""]
            names = list(dict.fromkeys(r["name"] for r in rs))
            rows = []
            for n in names:
                row = [n, next(r["family"] for r in rs if r["name"] == n)]
                for sch in ("nuwa", "oracle", "aimd"):
                    sr = next((x for x in rs if x["name"] == n and x["scheme"] == sch), None)
                    row.append("–" if sr is None else
                               f"{sr['utilization']:.3f} / {sr['queuing_delay_ms']['p95']:.0f} / "
                               f"{100 * sr['loss_rate']:.2f}%")
                rows.append(row)
            md += table(["trace", "family", "nuwa", "oracle", "aimd"], rows)
        # gap check
        rows = []
        for s in sim:
            e2e_scheme = {"nuwa": "nuwa", "oracle": "oracle", "aimd": "cubic"}.get(s["scheme"])
            if e2e_scheme is None:
                continue
            q = int(s["queue_packets"])
            eu = cells.get("bulk", s["name"], e2e_scheme, q, "util")
            ep = cells.get("bulk", s["name"], e2e_scheme, q, "p95")
            if eu is None or ep is None:
                continue
            label = s["scheme"] if e2e_scheme == s["scheme"] else f"{s['scheme']} vs {e2e_scheme}"
            rows.append([s["name"], label, str(q), f"{s['utilization']:.3f}", fmt(eu, 3),
                         f"{eu - s['utilization']:+.3f}", f"{s['queuing_delay_ms']['p95']:.0f}",
                         fmt(ep), f"{ep - s['queuing_delay_ms']['p95']:+.0f}"])
        md += ["## Simulator against end to end (same traces, same settings)", "",
               "The gap = end-to-end − SIMULATED. The simulator has exact timestamps, one flow, "
               "no ACK/grant jitter and no browser; a large gap says where the real path "
               "differs. `aimd vs cubic` compares the simulated AIMD stand-in with aioquic's "
               "real cubic.", ""]
        md += (table(["trace", "scheme", "queue", "util sim", "util e2e", "Δ util", "p95 sim",
                      "p95 e2e", "Δ p95 ms"], rows) if rows else
               ["No end-to-end run of the simulated traces in this invocation.", ""])
    return md


def sweeps_section(sweeps: list[dict[str, Any]], plots_dir: Path,
                   img_prefix: str) -> tuple[list[str], list[Path]]:
    """Parameter sweeps (``index["sweeps"]``: {param, value, results: [{family, utilization,
    queuing_delay_ms.p95}]}): the table per family, the best value per parameter and family,
    and ``sweeps.png``; empty when ``sweeps`` is."""
    md: list[str] = []
    plots: list[Path] = []
    if sweeps:
        md += ["## SIMULATED: parameter sweeps (papers' Fig. 8–10)", "",
               "One parameter at a time over the settings above, deep queue, every trace; per "
               "family: mean utilization / median p95 queuing delay (ms). k acts only in the "
               "paper's additive step, so its sweep uses `step: additive`; g is its counterpart "
               "in the multiplicative step.", ""]
        fams = sorted({r["family"] for p in sweeps for r in p["results"]})
        rows = []
        for p in sweeps:
            row = [p["param"], str(p["value"])]
            for f in fams:
                rs = [r for r in p["results"] if r["family"] == f]
                row.append("–" if not rs else
                           f"{statistics.fmean(r['utilization'] for r in rs):.3f} / "
                           f"{statistics.median(r['queuing_delay_ms']['p95'] for r in rs):.0f}")
            rows.append(row)
        md += table(["parameter", "value", *fams], rows)
        md += ["Per parameter and family, the value with the highest mean utilization among "
               "those whose median p95 ≤ 50 ms (else the lowest median p95), computed:", ""]
        rows = []
        for param in dict.fromkeys(p["param"] for p in sweeps):
            row = [param]
            for f in fams:
                cand = []
                for p in sweeps:
                    rs = [r for r in p["results"] if r["family"] == f and p["param"] == param]
                    if rs:
                        cand.append((statistics.fmean(r["utilization"] for r in rs),
                                     statistics.median(r["queuing_delay_ms"]["p95"] for r in rs),
                                     p["value"]))
                ok = [c for c in cand if c[1] <= 50]
                best = (max(ok, key=lambda c: (c[0], -c[1])) if ok
                        else min(cand, key=lambda c: c[1]) if cand else None)
                row.append("–" if best is None else
                           f"{best[2]} ({best[0]:.3f} / {best[1]:.0f} ms)")
            rows.append(row)
        md += table(["parameter", *fams], rows)
        p4 = plots_dir / "sweeps.png"
        plot_sweeps(sweeps, p4)
        plots.append(p4)
        md += [f"![sweeps]({img_prefix}{p4.name})", ""]
    return md, plots


def fairness_section(fairness: list[dict[str, Any]]) -> list[str]:
    """Flows sharing one bottleneck (``index["fairness"]``: {additive_increase_mss, scenario,
    jain_index, utilization, p95_ms, loss_rate}); empty when ``fairness`` is."""
    md: list[str] = []
    if fairness:
        md += ["## SIMULATED: flows sharing one bottleneck (issue 7 fairness)", "",
               "`sim/shared.ts`: several Nuwa receivers, each with its own grant-obeying sender "
               "and QUIC loss repair, through one deep drop-tail queue (1000 packets), 25 ms "
               "each way, 60 s; Jain's index (Jain, Chiu, Hawe 1984) over the flows' goodputs "
               "from 20 s. `a` is `additive_increase_mss`: the window-independent part of the "
               "increase that makes the multiplicative step converge to equal shares "
               "(Chiu & Jain 1989); a = 0 is the step without it.", ""]
        rows = [[str(p["additive_increase_mss"]), p["scenario"], f"{p['jain_index']:.3f}",
                 f"{p['utilization']:.3f}", f"{p['p95_ms']:.0f}", f"{100 * p['loss_rate']:.2f}%"]
                for p in fairness]
        md += table(["a (MSS/RTT)", "scenario", "Jain", "util", "p95 ms", "loss"], rows)
        by_a: dict[float, list[float]] = {}
        for p in fairness:
            by_a.setdefault(p["additive_increase_mss"], []).append(p["jain_index"])
        md += ["Mean / minimum Jain's index per a: "
               + "; ".join(f"a = {a:g}: {statistics.fmean(v):.3f} / {min(v):.3f}"
                           for a, v in by_a.items()), ""]
    return md
