"""The report's video sections: per trace and scheme the QoE with its spread over repeated
runs, and the ladder (issue 13): each neighbouring pair of schemes, one factor apart, as a gain,
a cost or no difference against the runs' spread, per family (3G/4G/5G)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..video_report import issue15_section
from .markdown import fmt, qname, table
from .metrics import Cells, finite_mean
from .schemes import LADDER_STEPS


def video_family(family: str) -> str:
    """3G / 4G / 5G from a trace family of e2e/src/bench.ts traceFamily."""
    if family.startswith("LTE"):
        return "4G"
    if family.startswith("5G"):
        return "5G"
    return family


@dataclass
class Spread:
    """Mean and range (min–max) of one cell's runs."""

    mean: float
    lo: float
    hi: float
    n: int


def spread(xs: list[float]) -> Spread | None:
    """Mean, min, max and count of ``xs`` (None when empty)."""
    if not xs:
        return None
    return Spread(statistics.fmean(xs), min(xs), max(xs), len(xs))


def fmt_spread(sp: Spread | None, d: int = 2, pct: bool = False) -> str:
    """``mean (min–max, n runs)``; a single run is shown as ``value (1 run)``."""
    if sp is None:
        return "–"
    if sp.n == 1:
        return f"{fmt(sp.mean, d, pct)} (1 run)"
    return f"{fmt(sp.mean, d, pct)} ({fmt(sp.lo, d, pct)}–{fmt(sp.hi, d, pct)}, {sp.n} runs)"


@dataclass
class Step:
    """Change of a metric from scheme A to scheme B over one or more traces.

    ``delta``: mean over traces of (mean of B's runs − mean of A's runs); ``lo``/``hi``: the
    widest differences between any run of B and any run of A on the same trace, over the
    traces (min over traces of min B − max A; max over traces of max B − min A). ``point``:
    every trace had one run of each, so the range says nothing about run-to-run noise.
    """

    delta: float
    lo: float
    hi: float
    traces: int
    point: bool
    single: bool = False
    """Some trace had one run on one side: the range misses that side's run-to-run noise."""


def step(pairs: list[tuple[list[float], list[float]]]) -> Step | None:
    """``Step`` from (A's runs, B's runs) per trace; traces missing either side are skipped."""
    ds, los, his = [], [], []
    point = True
    single = False
    for a, b in pairs:
        if not a or not b:
            continue
        ds.append(statistics.fmean(b) - statistics.fmean(a))
        los.append(min(b) - max(a))
        his.append(max(b) - min(a))
        point = point and len(a) == 1 and len(b) == 1
        single = single or len(a) == 1 or len(b) == 1
    if not ds:
        return None
    return Step(statistics.fmean(ds), min(los), max(his), len(ds), point and len(ds) == 1,
                single)


def step_verdict(st: Step | None, higher_is_better: bool, d: int = 2, pct: bool = False) -> str:
    """Words for a ``Step``: "no difference" when the range of run differences holds 0 (the
    change is inside the runs' spread); "gain" or "cost" with Δ and its range when it excludes
    0 and every cell had at least 2 runs; otherwise Δ with "spread unknown"."""
    if st is None:
        return "–"
    sign = "+" if st.delta >= 0 else "−"
    delta = f"Δ {sign}{fmt(abs(st.delta), d, pct)}"
    if st.point:
        return f"{delta} (1 run each: spread unknown)"
    rng = f"{fmt(st.lo, d, pct)} … {fmt(st.hi, d, pct)}"
    if st.lo <= 0 <= st.hi:
        return f"no difference ({delta}, runs differ by {rng})"
    if st.single:
        return f"{delta} (runs differ by {rng}; a cell with 1 run: its spread unknown)"
    better = (st.delta > 0) == higher_is_better
    return f"{'gain' if better else 'cost'}: {delta} (runs differ by {rng})"


LADDER_METRICS = (
    ("qoe", "QoE/chunk", True, 3, False),
    ("rebuf", "rebuffer ratio", False, 2, True),
    ("err_used", "estimate error (of the estimate the ABR uses)", False, 0, True),
    ("p95", "p95 queuing delay ms", False, 0, False),
)
"""(metric, label, higher is better, decimals, percent) of the ladder section."""


def ladder_section(cells: Cells, q: int) -> list[str]:
    """Markdown: the headline cells (Nuwa against dash.js's default) per trace with their
    spread, and each ladder step's gain or cost per family (3G/4G/5G)."""
    md: list[str] = []
    traces = cells.traces("play")
    have = set(cells.schemes("play"))
    if {"nuwa", "dashjs"} <= have:
        md += [f"### Nuwa against dash.js's default, {qname(q)}", "",
               "Each cell: mean (min–max over runs, number of runs). A difference whose range "
               "of run-to-run differences holds 0 is reported as no difference.", ""]
        rows = []
        for t in traces:
            for m, label, hib, d, pct in LADDER_METRICS:
                base = cells.values("play", t, "dashjs", q, m)
                ours = cells.values("play", t, "nuwa", q, m)
                if not base and not ours:
                    continue
                rows.append([t, label, fmt_spread(spread(ours), d, pct),
                             fmt_spread(spread(base), d, pct),
                             step_verdict(step([(base, ours)]), hib, d, pct)])
        md += table(["trace", "metric", "nuwa", "dashjs (default)", "nuwa − dashjs"], rows)
    steps = [(x, y, why) for x, y, why in LADDER_STEPS if x in have and y in have]
    if steps:
        fams = sorted({video_family(cells.family.get(t, "")) for t in traces})
        md += [f"### The ladder, step by step, {qname(q)}", "",
               "Each step changes one factor. Per family: Δ = mean over its traces of (mean of "
               "the step's later scheme − mean of the earlier one); the range is the widest "
               "difference between any run of one and any run of the other on the same trace. "
               "\"gain\"/\"cost\" only when that range excludes 0 and every cell had at "
               "least 2 runs (`--ladder-runs`, `--video-runs`); \"no difference\" when it holds "
               "0. Estimate error is that of the estimate the scheme's ABR "
               "uses (dash.js's own for dashjs and dashjs_grants, Nuwa's from "
               "dashjs_nuwa_estimate on).", ""]
        for x, y, why in steps:
            rows = []
            for f in fams:
                ft = [t for t in traces if video_family(cells.family.get(t, "")) == f]
                row = [f]
                for m, _label, hib, d, pct in LADDER_METRICS:
                    pairs = [(cells.values("play", t, x, q, m), cells.values("play", t, y, q, m))
                             for t in ft]
                    row.append(step_verdict(step(pairs), hib, d, pct))
                if any(c != "–" for c in row[1:]):  # a family without both schemes is left out
                    rows.append(row)
            md += [f"**{x} → {y}**: {why}.", ""]
            md += table(["family", *[x[1] for x in LADDER_METRICS]], rows)
    return md


def video_section(cells: Cells, q: int) -> list[str]:
    """Markdown of the video runs on queue ``q``: the per-trace table, the means across traces,
    the ladder (``ladder_section``) and issue 15's section (``video_report.issue15_section``,
    with the oracle's bulk p95 on the same queue where measured)."""
    md: list[str] = []
    md += [f"## Video, {qname(q)}", "",
           "QoE per played chunk (Pensieve linear; mean, min–max and number of runs), mean "
           "bitrate (kbit/s), rebuffer ratio, switches, startup (s), estimate error median "
           "(Nuwa's and dash.js's, read at the same instants of the same run), p95 queuing "
           "delay (ms), bytes re-downloaded (MB) and requests abandoned; means over runs.",
           ""]
    rows = []
    for t in cells.traces("play"):
        for s in cells.schemes("play"):
            gv = {m: cells.get("play", t, s, q, m) for m in
                  ("qoe", "bitrate", "rebuf", "switches", "startup", "err_nuwa",
                   "err_dashjs", "p95", "redl_mb", "abandoned")}
            if all(v is None for v in gv.values()):
                continue
            rows.append([t, s, fmt_spread(spread(cells.values("play", t, s, q, "qoe")), 3),
                         fmt(gv["bitrate"]), fmt(gv["rebuf"], 2, pct=True),
                         fmt(gv["switches"]), fmt(gv["startup"], 2),
                         fmt(gv["err_nuwa"], 0, pct=True), fmt(gv["err_dashjs"], 0, pct=True),
                         fmt(gv["p95"]), fmt(gv["redl_mb"], 2), fmt(gv["abandoned"])])
    md += table(["trace", "scheme", "QoE", "kbit/s", "rebuffer", "switches", "startup",
                 "err Nuwa", "err dash.js", "Qd p95", "re-dl MB", "abandoned"], rows)
    mean_rows = []
    for s in cells.schemes("play"):
        mean_rows.append([s] + [fmt(finite_mean(cells.get("play", t, s, q, m)
                                                for t in cells.traces("play")), d, pct=p)
                                for m, d, p in (("qoe", 3, False), ("rebuf", 2, True),
                                                ("err_nuwa", 0, True),
                                                ("err_dashjs", 0, True))])
    md += ["Means across traces:", ""]
    md += table(["scheme", "QoE", "rebuffer", "err Nuwa", "err dash.js"], mean_rows)
    md += ladder_section(cells, q)
    oracle = {t: p for t in cells.traces("bulk")
              if (p := cells.get("bulk", t, "oracle", q, "p95")) is not None}
    md += issue15_section(cells, q, oracle or None)
    return md
