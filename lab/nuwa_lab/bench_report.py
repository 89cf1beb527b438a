"""Report of a benchmark matrix (issue 5): Markdown tables, PNG plots, targets met or missed.

Reads what ``./nuwa bench`` (``e2e/src/cli-bench.ts``) wrote under a bench
directory: ``bench-index.json`` (command, options, effective controller
config, simulator results and sweeps) and ``runs/<id>/bench.json`` (one end-to-end
run: its spec and the metrics of ``bulk_metrics.py`` / ``play_metrics.py``),
plus each run's emulator log and server logs for the time series and CDFs, and
``frontier.json`` when present (issue 14: the offline frontier of the bulk traces, SIMULATED;
each scheme's p95 against it; bench directories without it report the target "not measured").

Metrics are docs/DESIGN.md §6's; nothing is recomputed here
except what the plots need (per-packet queuing delay from the emulator log,
capacity and delivery per 100 ms, the window in force from the server's
``frames.jsonl``). Runs whose emulator failed its timing self-check, or that
failed, are listed and left out of every aggregate and target. Several seeds
of a cell are averaged (mean) over their valid runs.

CLI: ``python -m nuwa_lab.bench_report --bench-dir DIR [--docs-md docs/BENCHMARKS.md
--docs-assets docs/bench]`` writes ``DIR/report.md`` and ``DIR/plots/*.png``
(and, with ``--docs-md``, the same report with its images copied to
``--docs-assets``). Raises ``FileNotFoundError`` if ``DIR/bench-index.json``
is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .emulator.analysis import parse_log
from .emulator.mmlog import read_sidecar, server_send_us_to_log_ms
from .video_report import issue15_section

BIN_MS = 100
"""Time-series bin, ms."""
CDF_POINTS = 200
"""Quantiles kept per run for the queuing-delay CDFs."""
SIM_TRACES_FIVE = (
    "mahimahi-tmobile-lte-short",
    "mahimahi-verizon-lte-short",
    "norway-hsdpa-bus-1",
    "mnwild-tmobile-5g-sa-lowband-walking-r20061",
    "lumos-vzw-lte-driving-50087",
)
"""The five traces of docs/DESIGN.md §3 (the shallow-queue target counts 3 of these 5)."""
DEEP_MIN_PACKETS = 500
"""A queue of at least this many packets counts as deep; below, shallow."""

Num = float | None

PLAY_ALIASES = {"cubic": "dashjs", "observe": "nuwa_cubic"}
"""Old names of video schemes (e2e/src/play.ts PLAY_ALIASES)."""
LADDER = ("dashjs", "dashjs_grants", "dashjs_nuwa_estimate", "nuwa", "nuwa_cubic")
"""The video ladder, each scheme one factor from its neighbour (e2e/src/play.ts PLAY_LADDER)."""
LADDER_STEPS = (
    ("dashjs", "dashjs_grants", "Nuwa's grants instead of the server's cubic (dash.js unchanged)"),
    ("dashjs_grants", "dashjs_nuwa_estimate", "Nuwa's estimate fed to dash.js's rules"),
    ("dashjs_nuwa_estimate", "nuwa", "Nuwa's ABR rule instead of dash.js's rules"),
    ("nuwa", "nuwa_cubic", "the server's cubic instead of Nuwa's grants (Nuwa ABR unchanged)"),
)
"""Neighbouring rungs of the ladder (from, to, the one factor that changes)."""
NUWA_ESTIMATE_SCHEMES = frozenset({"dashjs_nuwa_estimate", "nuwa", "nuwa_cubic"})
"""Video schemes whose ABR decides on Nuwa's estimate (the others on dash.js's own)."""


# --------------------------------------------------------------------------- loading


@dataclass
class Run:
    """One end-to-end run (``bench.json``) and its directory."""

    rec: dict[str, Any]
    dir: Path

    @property
    def valid(self) -> bool:
        return bool(self.rec.get("valid")) and self.rec.get("metrics") is not None

    @property
    def m(self) -> dict[str, Any]:
        return self.rec.get("metrics") or {}

    @property
    def key(self) -> tuple[str, str, str, int]:
        r = self.rec
        scheme = r["scheme"]
        if r["kind"] == "play":
            scheme = PLAY_ALIASES.get(scheme, scheme)
        return (r["kind"], r["trace"]["name"], scheme, int(r["queue_packets"]))


def load_bench(bench_dir: Path) -> tuple[dict[str, Any], list[Run]]:
    """Return the index and the runs it lists (a listed run without ``bench.json`` is skipped)."""
    index = json.loads((bench_dir / "bench-index.json").read_text())
    runs = []
    for rid in index.get("runs", []):
        f = bench_dir / "runs" / rid / "bench.json"
        if f.exists():
            runs.append(Run(json.loads(f.read_text()), f.parent))
    return index, runs


FRONTIER_FILE = "frontier.json"
"""The offline frontier of the bulk traces (issue 14), written by ``./nuwa bench``
(e2e/src/frontier.ts): ``{queue_packets, traces: {name: {points, envelope, ...}}}``."""
FRONTIER_FLOOR_MS = 1.0
"""Least frontier p95 a ratio divides by, ms: queuing delays are whole milliseconds (the
emulator's clock), so a frontier of 0 ms is read as 1 ms rather than an infinite ratio."""
FRONTIER_TARGET_RATIO = 1.3
"""Issue 14: nuwa on average within this factor of the frontier's p95 at its utilization."""


def load_frontier(bench_dir: Path) -> dict[str, Any] | None:
    """``bench_dir/frontier.json``, or None when absent (bench directories made before issue 14)."""
    f = bench_dir / FRONTIER_FILE
    if not f.exists():
        return None
    data: dict[str, Any] = json.loads(f.read_text())
    return data


def frontier_p95_at(envelope: list[dict[str, Any]], u: float) -> float | None:
    """The frontier's p95 queuing delay at utilization ``u``, ms (packages/cc/src/sim/frontier.ts
    ``frontierP95AtUtilization``, on its envelope): the least p95 among envelope points with
    utilization ≥ ``u``, linear in utilization between neighbouring points; the lowest point's
    p95 below it. None when ``u`` is above every point's utilization or there is no point.

    ``envelope``: ``[{utilization, p95_ms}]`` sorted by utilization ascending (as written).
    """
    env = sorted((p for p in envelope
                  if p.get("p95_ms") is not None and p.get("utilization") is not None),
                 key=lambda p: float(p["utilization"]))
    if not env or u > float(env[-1]["utilization"]):
        return None
    if u <= float(env[0]["utilization"]):
        return float(env[0]["p95_ms"])
    for a, b in zip(env, env[1:], strict=False):
        ua, ub = float(a["utilization"]), float(b["utilization"])
        if u <= ub:
            f = (u - ua) / (ub - ua) if ub > ua else 1.0
            return float(a["p95_ms"]) + f * (float(b["p95_ms"]) - float(a["p95_ms"]))
    return float(env[-1]["p95_ms"])


def frontier_ratio(cells: Cells, frontier: dict[str, Any] | None, trace: str, scheme: str,
                   q: int) -> tuple[Num, Num, Num, Num]:
    """(utilization, p95 ms, frontier p95 ms at that utilization, p95 ÷ max(frontier,
    FRONTIER_FLOOR_MS)) of a bulk cell; None where not measured (no frontier for this trace or
    queue, no run, or a utilization above the frontier's range)."""
    u = cells.get("bulk", trace, scheme, q, "util")
    p = cells.get("bulk", trace, scheme, q, "p95")
    if frontier is None or int(frontier.get("queue_packets", -1)) != q:
        return u, p, None, None
    tr = (frontier.get("traces") or {}).get(trace)
    if tr is None or u is None:
        return u, p, None, None
    f = frontier_p95_at(tr.get("envelope") or [], u)
    if f is None or p is None:
        return u, p, f, None
    return u, p, f, p / max(f, FRONTIER_FLOOR_MS)


def throughput_mbps(m: dict[str, Any]) -> Num:
    """Delivered bytes over the metrics window, Mbit/s (bulk runs)."""
    w = m.get("window_s")
    d = m.get("delivered_bytes")
    if not w or d is None or w[1] <= w[0]:
        return None
    return float(d) * 8 / (w[1] - w[0]) / 1e6


def _get(m: dict[str, Any], *path: str) -> Num:
    x: Any = m
    for p in path:
        if not isinstance(x, dict) or p not in x:
            return None
        x = x[p]
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def rebuffer_ratio(m: dict[str, Any]) -> Num:
    """Rebuffering time ÷ (rebuffering + media played), for video runs."""
    r = _get(m, "rebuffer_s")
    p = _get(m, "media_played_s")
    if r is None or p is None or r + p <= 0:
        return None
    return r / (r + p)


METRICS: dict[str, Callable[[dict[str, Any]], Num]] = {
    "util": lambda m: _get(m, "utilization"),
    "thr": throughput_mbps,
    "mean": lambda m: _get(m, "queuing_delay_ms", "mean"),
    "p50": lambda m: _get(m, "queuing_delay_ms", "p50"),
    "p95": lambda m: _get(m, "queuing_delay_ms", "p95"),
    "p95_data": lambda m: _get(m, "queuing_delay_data_ms", "p95"),
    "loss": lambda m: _get(m, "loss_rate"),
    "qd_med": lambda m: _get(m, "qd_error_ms", "median"),
    "qd_p95": lambda m: _get(m, "qd_error_ms", "p95"),
    "qoe": lambda m: _get(m, "qoe_per_chunk"),
    "bitrate": lambda m: _get(m, "bitrate_kbps_mean"),
    "rebuf": rebuffer_ratio,
    "switches": lambda m: _get(m, "switches"),
    "startup": lambda m: _get(m, "startup_s"),
    "err_nuwa": lambda m: _get(m, "estimate_error", "nuwa"),
    "err_dashjs": lambda m: _get(m, "estimate_error", "dashjs"),
    "redl_mb": lambda m: (None if _get(m, "redownloaded_bytes") is None
                          else float(m["redownloaded_bytes"]) / 1e6),
    "abandoned": lambda m: _get(m, "abandoned_requests"),
}


def _mean(xs: Iterable[Num]) -> Num:
    v = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.fmean(v) if v else None


class Cells:
    """Valid runs grouped by (kind, trace, scheme, queue); metric = mean over seeds."""

    def __init__(self, runs: list[Run]) -> None:
        self.by: dict[tuple[str, str, str, int], list[Run]] = defaultdict(list)
        self.family: dict[str, str] = {}
        for r in runs:
            self.family[r.rec["trace"]["name"]] = r.rec["trace"]["family"]
            if r.valid:
                self.by[r.key].append(r)

    def get(self, kind: str, trace: str, scheme: str, queue: int, metric: str) -> Num:
        return _mean(self.values(kind, trace, scheme, queue, metric))

    def values(self, kind: str, trace: str, scheme: str, queue: int, metric: str) -> list[float]:
        """The metric of every valid run of a cell (finite values only).

        ``err_used``: the estimate error of the estimate the scheme's ABR decides on
        (Nuwa's for NUWA_ESTIMATE_SCHEMES, dash.js's own otherwise).
        """
        rs = self.by.get((kind, trace, scheme, queue), [])
        if metric == "err_used":
            metric = "err_nuwa" if scheme in NUWA_ESTIMATE_SCHEMES else "err_dashjs"
        out = []
        for r in rs:
            x = METRICS[metric](r.m)
            if x is not None and math.isfinite(x):
                out.append(float(x))
        return out

    def traces(self, kind: str) -> list[str]:
        return sorted({k[1] for k in self.by if k[0] == kind},
                      key=lambda n: (self.family.get(n, ""), n))

    def queues(self, kind: str) -> list[int]:
        return sorted({k[3] for k in self.by if k[0] == kind}, reverse=True)

    def schemes(self, kind: str) -> list[str]:
        order = (list(LADDER) if kind == "play" else
                 ["nuwa", "nuwa_adaptive", "nuwa_raw", "nuwa_bbr", "oracle", "cubic", "reno",
                  "bbr", "dashjs",
                  "dashjs_nuwa_estimate", "observe"])
        got = {k[2] for k in self.by if k[0] == kind}
        return [s for s in order if s in got] + sorted(got - set(order))


# --------------------------------------------------------------------------- repeated runs


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


# --------------------------------------------------------------------------- series


def run_series(run: Run, delay_ms: float) -> dict[str, Any]:
    """Time series and delay quantiles of one run, cached in ``series.json``.

    Returns ``{"t_s", "capacity_mbps", "delivered_mbps", "qd_ms" (mean per bin, None
    when nothing left), "window_mbps" (window in force ÷ base RTT: the grant, the
    oracle's window, or QUIC's cwnd when grants are ignored), "window_kind",
    "qd_quantiles" (CDF_POINTS+1 quantiles of per-packet queuing delay in the
    metrics window)}``.
    """
    cache = run.dir / "series.json"
    if cache.exists():
        cached: dict[str, Any] = json.loads(cache.read_text())
        return cached
    log_path = run.dir / "emulator.log"
    log = parse_log(log_path)
    t0 = int(read_sidecar(log_path)["base_timestamp_ms"])
    w = run.m.get("window_s") or [0.0, 1e12]
    lo_ms, hi_ms = 1000.0 * w[0], 1000.0 * w[1]
    end_ms = max([d[0] for d in log.departures] + log.opportunities[-1:] + [0])
    nb = int(end_ms // BIN_MS) + 1
    cap = [0] * nb
    dlv = [0] * nb
    qsum = [0.0] * nb
    qn = [0] * nb
    for t in log.opportunities:
        cap[t // BIN_MS] += 1504
    delays: list[int] = []
    for (a_t, _s), (d_t, d_size, _x) in zip(log.arrivals, log.departures, strict=False):
        b = d_t // BIN_MS
        dlv[b] += d_size
        qsum[b] += d_t - a_t
        qn[b] += 1
        if lo_ms <= a_t < hi_ms:
            delays.append(d_t - a_t)
    delays.sort()
    quant = (
        [float(delays[min(len(delays) - 1, round(i / CDF_POINTS * (len(delays) - 1)))])
         for i in range(CDF_POINTS + 1)]
        if delays else []
    )
    win: list[float | None] = [None] * nb
    kind = "none"
    rtt_s = 2 * delay_ms / 1000.0
    for fpath in sorted((run.dir / "server").glob("**/frames.jsonl")):
        with fpath.open() as fh:
            for line in fh:
                row = json.loads(line)
                gw = row.get("grant_window_bytes")
                val = gw if gw is not None else row.get("ceiling_bytes")
                kind = "grant window" if gw is not None else "QUIC cwnd"
                t_log = server_send_us_to_log_ms(int(row["send_time_us"]), t0, delay_ms)
                b = int((t_log - delay_ms) // BIN_MS)
                if 0 <= b < nb and val is not None:
                    win[b] = float(val) * 8 / rtt_s / 1e6
    scale = 8 / (BIN_MS / 1000.0) / 1e6
    out = {
        "t_s": [i * BIN_MS / 1000.0 for i in range(nb)],
        "capacity_mbps": [c * scale for c in cap],
        "delivered_mbps": [d * scale for d in dlv],
        "qd_ms": [qsum[i] / qn[i] if qn[i] else None for i in range(nb)],
        "window_mbps": win,
        "window_kind": kind,
        "qd_quantiles": quant,
        "window_s": [w[0], w[1]],
    }
    cache.write_text(json.dumps(out))
    return out


# --------------------------------------------------------------------------- formatting


def fmt(x: Num, d: int = 0, pct: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{100 * x:.{d}f}%" if pct else f"{x:.{d}f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def qname(q: int) -> str:
    return f"{'deep' if q >= DEEP_MIN_PACKETS else 'shallow'} queue ({q} packets)"


# --------------------------------------------------------------------------- targets


@dataclass
class Target:
    """One issue-5 target: what it asks, the measured figure, and the verdict."""

    name: str
    figure: str
    met: bool | None  # None: not measured in this invocation

    def row(self) -> list[str]:
        verdict = "not measured" if self.met is None else ("met" if self.met else "**missed**")
        return [self.name, self.figure, verdict]


def _ratio_ok(a: Num, b: Num, f: Callable[[float, float], bool]) -> bool | None:
    if a is None or b is None:
        return None
    return f(a, b)


def compute_targets(cells: Cells, index: dict[str, Any], ratchet: list[Run],
                    frontier: dict[str, Any] | None = None) -> list[Target]:
    """Every target of issue 5 (and issue 14's distance to the offline frontier, from
    ``frontier``, the bench's ``frontier.json``), computed from the valid runs (see module doc)."""
    out: list[Target] = []
    deep = [q for q in cells.queues("bulk") if q >= DEEP_MIN_PACKETS]
    shallow = [q for q in cells.queues("bulk") if q < DEEP_MIN_PACKETS]
    tr = cells.traces("bulk")
    fam = cells.family
    if deep:
        q = deep[0]
        ok, n, detail = 0, 0, []
        for t in tr:
            r = [cells.get("bulk", t, s, q, m) for s in ("nuwa", "cubic") for m in ("p95", "util")]
            if None in r:
                continue
            n += 1
            p95n, utn, p95c, utc = (float(x) for x in r)  # type: ignore[arg-type]
            good = p95n <= 0.1 * p95c and utn >= 0.95 * utc
            ok += good
            detail.append(f"{t}: p95 {p95n:.0f}/{p95c:.0f} ms, util {utn:.2f}/{utc:.2f}"
                          f"{'' if good else ' ✗'}")
        out.append(Target(
            "Deep queue vs cubic, ≥ 80% of traces: p95 ≤ 0.1× cubic's and util ≥ 0.95× cubic's",
            f"{ok}/{n} traces" + (f" ({'; '.join(detail)})" if detail else ""),
            (ok >= 0.8 * n) if n else None))
        vals = {t: cells.get("bulk", t, "nuwa", q, "util") for t in tr}
        have = {t: v for t, v in vals.items() if v is not None}
        bad = [f"{t} {v:.2f}" for t, v in have.items() if v < 0.90]
        out.append(Target("Deep queue, every trace: utilization ≥ 0.90",
                          f"min {fmt(min(have.values(), default=None), 3)}"
                          + (f"; below: {', '.join(bad)}" if bad else ""),
                          (not bad) if have else None))
        low = [t for t in tr if fam.get(t) in ("3G", "5G-lowband", "LTE-Lumos")]
        p = {t: cells.get("bulk", t, "nuwa", q, "p95") for t in low}
        have_p = {t: v for t, v in p.items() if v is not None}
        out.append(Target(
            "Deep queue: p95 queuing delay ≤ 50 ms on 3G, low-band 5G and Lumos LTE",
            "; ".join(f"{t} {v:.0f} ms" for t, v in have_p.items()) or "no runs",
            all(v <= 50 for v in have_p.values()) if have_p else None))
        sat = [t for t in tr if fam.get(t) == "LTE-Saturator"]
        parts, oks = [], []
        for t in sat:
            a = cells.get("bulk", t, "nuwa", q, "p95")
            b = cells.get("bulk", t, "oracle", q, "p95")
            ok_t = _ratio_ok(a, b, lambda x, y: x <= 1.3 * y)
            if ok_t is not None and a is not None and b is not None:
                oks.append(ok_t)
                parts.append(f"{t} {a:.0f} vs oracle {b:.0f} ms ({a / max(b, 1e-9):.2f}×)")
        out.append(Target("Deep queue: p95 ≤ 1.3× oracle's on the Saturator LTE traces",
                          "; ".join(parts) or "no oracle runs", all(oks) if oks else None))
        out.append(frontier_target(cells, frontier, q))
    else:
        out.append(Target("Deep-queue targets", "no deep-queue bulk runs", None))
    if ratchet:
        valid = [r for r in ratchet if r.valid]
        td = float(index.get("config", {}).get("target_delay_ms", float("nan")))
        p95s = [METRICS["p95"](r.m) for r in valid]
        v = _mean(p95s)
        dur = ", ".join(sorted({f"{r.rec['duration_s']:.0f} s" for r in ratchet}))
        out.append(Target(f"No ratchet: constant 10 Mbit/s, {dur} (issue: 120 s), p95 of the "
                          f"last 60 s ≤ Td + 10 = {td + 10:.0f} ms",
                          f"{fmt(v, 1)} ms over {len(valid)} valid run(s)",
                          (v <= td + 10) if v is not None else None))
    else:
        out.append(Target("No ratchet (constant 10 Mbit/s)", "not run", None))
    if shallow:
        q = shallow[0]
        losses = {t: cells.get("bulk", t, "nuwa", q, "loss") for t in tr}
        have_l = {t: v for t, v in losses.items() if v is not None}
        bad = [f"{t} {100 * v:.1f}%" for t, v in have_l.items() if v > 0.03]
        out.append(Target("Shallow queue: loss ≤ 3% (every trace)",
                          f"max {fmt(max(have_l.values(), default=None), 2, pct=True)}"
                          + (f"; above: {', '.join(bad)}" if bad else ""),
                          (not bad) if have_l else None))
        five = [t for t in SIM_TRACES_FIVE if t in tr]
        wins, parts = 0, []
        for t in five:
            a = cells.get("bulk", t, "nuwa", q, "thr")
            b = cells.get("bulk", t, "cubic", q, "thr")
            if a is None or b is None:
                continue
            wins += a >= b
            parts.append(f"{t} {a:.2f} vs {b:.2f} Mbit/s")
        out.append(Target("Shallow queue: throughput ≥ cubic's on ≥ 3 of the 5 docs/DESIGN.md §3 "
                          "traces",
                          f"{wins}/{len(parts)}: " + "; ".join(parts)
                          + (f" ({5 - len(parts)} not measured)" if len(parts) < 5 else ""),
                          # Decided once the unmeasured traces could not change the outcome.
                          True if wins >= 3 else False if wins + (5 - len(parts)) < 3 else None))
    else:
        out.append(Target("Shallow-queue targets", "no shallow-queue bulk runs", None))
    meds: list[tuple[float, float]] = []
    for qq in cells.queues("bulk"):
        for t in tr:
            e_med = cells.get("bulk", t, "nuwa", qq, "qd_med")
            e_p95 = cells.get("bulk", t, "nuwa", qq, "qd_p95")
            if e_med is not None and e_p95 is not None:
                meds.append((e_med, e_p95))
    if meds:
        worst_med = max(x[0] for x in meds)
        worst_p95 = max(x[1] for x in meds)
        out.append(Target("Qd estimate vs emulator truth: median abs. error ≤ 5 ms, p95 ≤ 20 ms "
                          "(every nuwa bulk run)",
                          f"worst median {worst_med:.1f} ms, worst p95 {worst_p95:.1f} ms over "
                          f"{len(meds)} cells",
                          bool(worst_med <= 5 and worst_p95 <= 20)))
    else:
        out.append(Target("Qd estimate error", "no nuwa bulk runs", None))
    vq = cells.queues("play")
    if vq:
        q = vq[0]
        vt = cells.traces("play")
        en = [cells.get("play", t, "nuwa", q, "err_nuwa") for t in vt]
        ed = [cells.get("play", t, "dashjs", q, "err_dashjs") for t in vt]
        en_v = [x for x in en if x is not None]
        ed_v = [x for x in ed if x is not None]
        men = statistics.median(en_v) if en_v else None
        med = statistics.median(ed_v) if ed_v else None
        out.append(Target("Video: Nuwa's estimate median error ≤ 15% (median over traces of "
                          "each run's median)", fmt(men, 1, pct=True),
                          (men <= 0.15) if men is not None else None))
        out.append(Target("Video: Nuwa's estimate error ≤ half of dash.js's own",
                          f"{fmt(men, 1, pct=True)} vs dash.js {fmt(med, 1, pct=True)}",
                          _ratio_ok(men, med, lambda a, b: a <= 0.5 * b)))
        qn = _mean(cells.get("play", t, "nuwa", q, "qoe") for t in vt)
        qd = _mean(cells.get("play", t, "dashjs", q, "qoe") for t in vt)
        # A difference inside the runs' spread is no difference (issue 13): then not met.
        qst = step([(cells.values("play", t, "dashjs", q, "qoe"),
                     cells.values("play", t, "nuwa", q, "qoe")) for t in vt])
        inside = qst is not None and qst.lo <= 0 <= qst.hi
        qok = _ratio_ok(qn, qd, lambda a, b: a >= b + 0.1 * abs(b))
        out.append(Target("Video: mean QoE across traces ≥ 10% above dash.js default ABR "
                          "(and outside the runs' spread)",
                          f"nuwa {fmt(qn, 3)} vs dashjs {fmt(qd, 3)}"
                          + (f"; no difference: runs differ by {fmt(qst.lo, 3)} … "
                             f"{fmt(qst.hi, 3)}" if qst is not None and inside else ""),
                          False if inside and qok is not None else qok))
        rn = _mean(cells.get("play", t, "nuwa", q, "rebuf") for t in vt)
        rd = _mean(cells.get("play", t, "dashjs", q, "rebuf") for t in vt)
        out.append(Target("Video: rebuffer ratio no higher than dash.js default ABR's",
                          f"nuwa {fmt(rn, 2, pct=True)} vs dashjs {fmt(rd, 2, pct=True)}",
                          _ratio_ok(rn, rd, lambda a, b: a <= b)))
    else:
        out.append(Target("Video targets", "no video runs", None))
    return out


def frontier_target(cells: Cells, frontier: dict[str, Any] | None, q: int) -> Target:
    """Issue 14: nuwa's p95 on the deep queue ``q`` within FRONTIER_TARGET_RATIO× of the offline
    frontier's p95 at nuwa's own utilization, on average (mean of the per-trace ratios; traces
    where nuwa's utilization is above the frontier's range are listed and left out)."""
    name = (f"On average within {FRONTIER_TARGET_RATIO:g}× of the offline frontier's p95 at the "
            "achieved utilization (nuwa, deep queue)")
    if frontier is None:
        return Target(name, f"no {FRONTIER_FILE} in this bench directory", None)
    if int(frontier.get("queue_packets", -1)) != q:
        return Target(name, f"frontier computed for a {frontier.get('queue_packets')}-packet "
                      f"queue, not {q}", None)
    ratios, parts, above = [], [], []
    for t in cells.traces("bulk"):
        u, p, f, r = frontier_ratio(cells, frontier, t, "nuwa", q)
        if r is not None and f is not None and p is not None and u is not None:
            ratios.append(r)
            parts.append(f"{t} {p:.0f} vs {f:.0f} ms at util {u:.3f} ({r:.2f}×)")
        elif u is not None and t in (frontier.get("traces") or {}):
            above.append(t)
    if not ratios:
        return Target(name, "no nuwa deep-queue run on a trace of the frontier file", None)
    mean = statistics.fmean(ratios)
    return Target(name, f"mean {mean:.2f}× over {len(ratios)} traces ({'; '.join(parts)})"
                  + (f"; utilization above the frontier's range: {', '.join(above)}"
                     if above else ""), mean <= FRONTIER_TARGET_RATIO)


# --------------------------------------------------------------------------- plots


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


COLORS = {"nuwa": "C0", "nuwa_adaptive": "C2", "nuwa_raw": "C5", "oracle": "k", "cubic": "C3",
          "reno": "C1", "bbr": "C6", "nuwa_bbr": "C9", "dashjs_bbr": "C6",
          "dashjs": "C3",
          "dashjs_grants": "C1", "dashjs_nuwa_estimate": "C2", "observe": "C4",
          "nuwa_cubic": "C4", "aimd": "C3"}


def _log_ms_axis(ax: Any) -> None:
    """Log x axis in ms with plain tick labels at 1-3-10 steps."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator([1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000]))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(labelsize=7)


def plot_tradeoff(cells: Cells, q: int, path: Path) -> None:
    """Throughput against p95 queuing delay per trace, delay axis reversed (Pantheon)."""
    plt = _plt()
    tr = cells.traces("bulk")
    n = len(tr)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(6, 4 * cols), 3.3 * rows), squeeze=False)
    for ax, t in zip(axes.flat, tr, strict=False):
        for s in cells.schemes("bulk"):
            for r in cells.by.get(("bulk", t, s, q), []):
                x, y = METRICS["p95"](r.m), METRICS["thr"](r.m)
                if x is not None and y is not None:
                    ax.scatter([max(x, 0.5)], [y], color=COLORS.get(s, "C5"), label=s, s=40)
        _log_ms_axis(ax)
        ax.invert_xaxis()
        ax.set_title(t, fontsize=8)
        ax.set_xlabel("p95 queuing delay (ms, log, reversed)", fontsize=7)
        ax.set_ylabel("throughput (Mbit/s)", fontsize=7)
        h, lab = ax.get_legend_handles_labels()
        uniq = dict(zip(lab, h, strict=False))
        ax.legend(uniq.values(), uniq.keys(), fontsize=6, loc="best")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(f"Bulk download, {qname(q)}: better is up and right", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_cdfs(cells: Cells, q: int, series: dict[str, dict[str, Any]], path: Path) -> None:
    """CDFs of per-packet queuing delay per trace, one line per scheme (first valid seed)."""
    plt = _plt()
    tr = cells.traces("bulk")
    n = len(tr)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(6, 4 * cols), 3.2 * rows), squeeze=False)
    for ax, t in zip(axes.flat, tr, strict=False):
        for s in cells.schemes("bulk"):
            rs = cells.by.get(("bulk", t, s, q), [])
            if not rs:
                continue
            qs = series[rs[0].rec["id"]]["qd_quantiles"]
            if qs:
                ys = [i / CDF_POINTS for i in range(len(qs))]
                ax.plot([max(x, 0.5) for x in qs], ys, color=COLORS.get(s, "C5"), label=s)
        _log_ms_axis(ax)
        ax.set_title(t, fontsize=8)
        ax.set_xlabel("queuing delay (ms, log)", fontsize=7)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(f"CDF of per-packet queuing delay, {qname(q)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_timeseries(runs: list[Run], series: dict[str, dict[str, Any]], title: str,
                    path: Path) -> None:
    """Capacity, window in force ÷ base RTT, delivery rate and queuing delay, one run per scheme."""
    plt = _plt()
    fig, axes = plt.subplots(2 * len(runs), 1, figsize=(11, 3.0 * len(runs)), squeeze=False)
    for i, r in enumerate(runs):
        s = series[r.rec["id"]]
        a, b = axes[2 * i][0], axes[2 * i + 1][0]
        t = s["t_s"]
        a.plot(t, s["capacity_mbps"], color="0.6", lw=0.8, label="capacity (emulator)")
        a.plot(t, s["delivered_mbps"], color="C0", lw=0.8, label="delivery rate")
        wt = [x for x, y in zip(t, s["window_mbps"], strict=False) if y is not None]
        wy = [y for y in s["window_mbps"] if y is not None]
        a.plot(wt, wy, color="C2", lw=0.8, label=f"{s['window_kind']} ÷ base RTT")
        a.set_ylabel("Mbit/s")
        top = max(s["capacity_mbps"] + [1.0])
        a.set_ylim(0, top * 1.3)
        a.set_title(f"{r.rec['scheme']}: {title}", fontsize=9)
        a.legend(fontsize=7, loc="upper right")
        qt = [x for x, y in zip(t, s["qd_ms"], strict=False) if y is not None]
        qy = [y for y in s["qd_ms"] if y is not None]
        b.plot(qt, qy, color="C3", lw=0.8, label="queuing delay (emulator, mean per 100 ms)")
        b.set_ylabel("ms")
        b.legend(fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("link time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def td_series(run: Run) -> tuple[list[float], list[float]] | None:
    """The Td in force over time of a run, from its page log (``target_delay_ms``:
    [receiver µs, ms] at each change): (seconds since the first frame, ms), or None."""
    page_path = run.dir / "page.json"
    if not page_path.exists():
        return None
    page = json.loads(page_path.read_text())
    pts = page.get("target_delay_ms") or []
    if not pts or not page.get("recv_us"):
        return None
    t0 = float(page["recv_us"][0])
    return [(float(t) - t0) / 1e6 for t, _ in pts], [float(v) for _, v in pts]


def plot_td(picks: list[tuple[str, str, tuple[list[float], list[float]]]], path: Path) -> None:
    """Td in force over time, one line per (family, trace), as a step plot."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 3.5))
    for family, trace, (t, v) in picks:
        ax.step(t, v, where="post", lw=0.9, label=f"{family}: {trace}")
    ax.set_xlabel("s since the first frame")
    ax.set_ylabel("Td in force (ms)")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_sweeps(sweeps: list[dict[str, Any]], path: Path) -> None:
    """Mean utilization and median p95 per family against each swept parameter (simulated)."""
    plt = _plt()
    params = list(dict.fromkeys(p["param"] for p in sweeps))
    fig, axes = plt.subplots(2, len(params), figsize=(4 * len(params), 6), squeeze=False)
    for j, param in enumerate(params):
        pts = [p for p in sweeps if p["param"] == param]
        fams = sorted({r["family"] for p in pts for r in p["results"]})
        for f in fams:
            xs, us, ds = [], [], []
            for p in pts:
                rs = [r for r in p["results"] if r["family"] == f]
                if rs:
                    xs.append(p["value"])
                    us.append(statistics.fmean(r["utilization"] for r in rs))
                    ds.append(statistics.median(r["queuing_delay_ms"]["p95"] for r in rs))
            axes[0][j].plot(xs, us, marker="o", label=f)
            axes[1][j].plot(xs, ds, marker="o", label=f)
        axes[0][j].set_title(param, fontsize=9)
        axes[0][j].set_ylabel("mean utilization")
        axes[1][j].set_ylabel("median p95 queuing delay (ms)")
        axes[1][j].set_yscale("log")
        from matplotlib.ticker import ScalarFormatter

        axes[1][j].yaxis.set_major_formatter(ScalarFormatter())
        axes[1][j].yaxis.set_minor_formatter(ScalarFormatter())
        axes[1][j].set_xlabel(param)
        axes[0][j].legend(fontsize=6)
    fig.suptitle("Parameter sweeps (SIMULATED, deep queue, one parameter at a time)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


# --------------------------------------------------------------------------- report


def frontier_section(cells: Cells, frontier: dict[str, Any] | None, q: int) -> list[str]:
    """Markdown: per trace and scheme on queue ``q``, the offline frontier's p95 at the
    scheme's achieved utilization and the scheme's p95 ÷ that (issue 14); empty when the
    frontier file is absent or was computed for another queue."""
    if frontier is None or int(frontier.get("queue_packets", -1)) != q:
        return []
    rows = []
    for t in cells.traces("bulk"):
        for s in cells.schemes("bulk"):
            u, p, f, r = frontier_ratio(cells, frontier, t, s, q)
            if u is None and p is None:
                continue
            at = (frontier.get("traces") or {}).get(t, {}).get("p95_at_utilization_ms") or {}
            rows.append([t, s, fmt(u, 3), fmt(p),
                         fmt(f, 1) if f is not None else
                         ("above its range" if t in (frontier.get("traces") or {}) else "–"),
                         "–" if r is None else f"{r:.2f}×",
                         " / ".join(fmt(at.get(k), 1) for k in ("0.9", "0.95"))])
    if not rows:
        return []
    return [f"Distance to the offline frontier (issue 14), {qname(q)}: the frontier is the "
            "lowest p95 queuing delay at which an omniscient sender reaches a utilization: an "
            "ACK-clocked window = the capacity the trace will offer over the next base RTT + "
            "headroom from the time its packets reach the queue, or arrivals paced evenly over "
            "each base RTT carrying its capacity (headroom swept), SIMULATED on the same path "
            "model (`frontier.json`, packages/cc/src/sim/frontier.ts, docs/DESIGN.md §7). It "
            "bounds the true frontier from above. Ratio = p95 ÷ max(frontier, "
            f"{FRONTIER_FLOOR_MS:g} ms); \"above its range\": the scheme's utilization is higher "
            "than any member of the family reached.", "",
            *table(["trace", "scheme", "util", "Qd p95", "frontier p95 at util", "p95 ÷ frontier",
                    "frontier at 0.90 / 0.95"], rows)]


def _end_commit(index: dict[str, Any]) -> str:
    """The commit at the end of the run, when it differs from the start (older reports: unknown)."""
    start = index.get("git", {}).get("commit")
    end = index.get("git_at_end", {}).get("commit")
    if end is None:
        return ""
    if end == start:
        return "; the same at the end"
    return f"; {end} at the end (each run uses the code at its own start)"


def _rel(p: Path) -> str:
    """``p`` relative to the working directory when it lies below it."""
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def _pick_timeseries_trace(cells: Cells) -> str | None:
    tr = cells.traces("bulk")
    for pref in ("mahimahi-tmobile-lte-short",):
        if pref in tr:
            return pref
    return tr[0] if tr else None


def build_report(bench_dir: Path, img_prefix: str = "plots/",
                 notes: Path | None = None) -> tuple[str, list[Path]]:
    """Make the plots under ``bench_dir/plots`` and return (Markdown, plot paths).

    ``notes``: a hand-written Markdown file (why a target was missed, what was
    tried) appended to the closing note under the computed target table.
    """
    index, runs = load_bench(bench_dir)
    delay_ms = float(index.get("options", {}).get("delay_ms", 25))
    plots_dir = bench_dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    cells = Cells([r for r in runs if r.rec["kind"] != "ratchet"])
    ratchet = [r for r in runs if r.rec["kind"] == "ratchet"]
    plots: list[Path] = []
    md: list[str] = []
    cfg = index.get("config", {})
    md += [
        "# Benchmarks",
        "",
        f"Produced by `{index.get('command', '?')}` from {index.get('started_utc', '?')} to "
        f"{index.get('ended_utc', '?')} (UTC) on a {index.get('host', {}).get('cpus', '?')}-core "
        "machine. Regenerate the report alone with "
        f"`.venv/bin/python -m nuwa_lab.bench_report --bench-dir {_rel(bench_dir)}`. Code: "
        f"commit {index.get('git', {}).get('commit', '?')}"
        + (f" with uncommitted changes in {', '.join(index['git']['dirty_files'])}"
           if index.get("git", {}).get("dirty_files") else "")
        + " at the start"
        + _end_commit(index) + ".",
        "",
        "End-to-end runs: aioquic server → trace-driven emulator (25 ms one-way each way, "
        "drop-tail queue) → headless Chromium; metrics from the emulator's log (truth) as "
        "docs/DESIGN.md defines them. Simulated results (in-process `@nuwa/cc` simulator, "
        "simulated clock) are in their own sections and labelled SIMULATED.",
        "",
        "Controller settings of this run (`NuwaConfig`): "
        + ", ".join(f"{k}={v}" for k, v in cfg.items()
                    if k in ("target_delay_ms", "sensitivity_ms", "aggressiveness_mss",
                             "multiplicative_gain", "additive_increase_mss", "step",
                             "qd_source", "rate_cap", "rate_filter_ms")),
        "",
        "Schemes: `nuwa` (grants obeyed), `cubic`/`reno` (aioquic's own controller, grants "
        "ignored), `oracle` (window = capacity the emulator offered over the last "
        f"{index.get('options', {}).get('oracle_window_ms') or 2 * delay_ms:g} ms (base RTT "
        f"{2 * delay_ms:g} ms), reported to the server one uplink delay late, scaled to cover "
        "the report interval, the server's reading lag and 20 ms of standing queue; "
        "outstanding bytes on the emulator's delivered-bytes clock, not the page's grants; "
        "no loss-based ceiling; docs/DESIGN.md §7); "
        "video, the ladder (each one factor from its neighbour): `dashjs` (dash.js 5.2.1 as "
        "shipped, every setting untouched, only its loader over the session, server cubic), "
        "`dashjs_grants` (the same over Nuwa's grants), `dashjs_nuwa_estimate` (dash.js's rules "
        "fed Nuwa's estimate, grants), `nuwa` (Nuwa ABR, grants), `nuwa_cubic` (Nuwa ABR on "
        "Nuwa's estimate, server cubic, no grants; old name `observe`; `cubic` is the old name "
        "of `dashjs`).",
        "",
    ]
    series: dict[str, dict[str, Any]] = {}
    for r in runs:
        if r.valid and r.rec["kind"] == "bulk":
            try:
                series[r.rec["id"]] = run_series(r, delay_ms)
            except (OSError, ValueError) as exc:
                md.append(f"(series of {r.rec['id']} unavailable: {exc})")
    # targets first: the point of the exercise
    frontier = load_frontier(bench_dir)
    targets = compute_targets(cells, index, ratchet, frontier)
    md += ["## Targets (issue 5), computed from this run", ""]
    md += table(["target", "measured", "verdict"], [t.row() for t in targets])
    invalid = [r for r in runs if not r.valid]
    md += ["## Invalid or failed runs (left out of every table and target)", ""]
    if invalid:
        md += table(["run", "why"], [[r.rec["id"], "; ".join(r.rec.get("invalid_reasons") or
                                                            ["?"])] for r in invalid])
    else:
        md += ["None.", ""]
    # bulk tables
    for q in cells.queues("bulk"):
        schemes = cells.schemes("bulk")
        md += [f"## Bulk download, {qname(q)}", "",
               "Each cell: utilization / p95 queuing delay (ms) / loss; mean over valid seeds.",
               ""]
        rows = []
        for t in cells.traces("bulk"):
            row = [t, cells.family.get(t, "")]
            for s in schemes:
                u = cells.get("bulk", t, s, q, "util")
                p = cells.get("bulk", t, s, q, "p95")
                lo = cells.get("bulk", t, s, q, "loss")
                row.append(f"{fmt(u, 3)} / {fmt(p)} / {fmt(lo, 2, pct=True)}")
            rows.append(row)
        md += table(["trace", "family", *schemes], rows)
        if any(cells.get("bulk", t, s, q, "p95_data") is not None
               for t in cells.traces("bulk") for s in schemes):
            md += ["p95 queuing delay of the packets that carry data (≥ 200 bytes; every packet "
                   "counts above, including the server's ACK-only packets, which queue on a dark "
                   "link; docs/DESIGN.md §3), ms:", ""]
            md += table(["trace", *schemes],
                        [[t, *[fmt(cells.get("bulk", t, s, q, "p95_data")) for s in schemes]]
                         for t in cells.traces("bulk")])
        md += ["Queuing delay mean / p50 / p95 (ms), throughput (Mbit/s) and Qd estimate error "
               "median / p95 (ms, the page's controller against the emulator):", ""]
        rows = []
        for t in cells.traces("bulk"):
            for s in schemes:
                g = [cells.get("bulk", t, s, q, m)
                     for m in ("mean", "p50", "p95", "thr", "qd_med", "qd_p95", "util")]
                if all(x is None for x in g):
                    continue
                rows.append([t, s, fmt(g[0]), fmt(g[1]), fmt(g[2]), fmt(g[3], 2), fmt(g[6], 3),
                             fmt(g[4], 1), fmt(g[5], 1)])
        md += table(["trace", "scheme", "Qd mean", "Qd p50", "Qd p95", "Mbit/s", "util",
                     "Qd err med", "Qd err p95"], rows)
        md += frontier_section(cells, frontier, q)
        p1 = plots_dir / f"tradeoff-q{q}.png"
        plot_tradeoff(cells, q, p1)
        p2 = plots_dir / f"cdf-q{q}.png"
        plot_cdfs(cells, q, series, p2)
        plots += [p1, p2]
        md += [f"![throughput vs p95 delay, {qname(q)}]({img_prefix}{p1.name})", "",
               f"![queuing delay CDFs, {qname(q)}]({img_prefix}{p2.name})", ""]
        ts_trace = _pick_timeseries_trace(cells)
        if ts_trace is not None:
            picks = [cells.by[("bulk", ts_trace, s, q)][0] for s in schemes
                     if cells.by.get(("bulk", ts_trace, s, q))]
            picks = [r for r in picks if r.rec["id"] in series]
            if picks:
                p3 = plots_dir / f"timeseries-{ts_trace}-q{q}.png"
                plot_timeseries(picks, series, f"{ts_trace}, {qname(q)}", p3)
                plots.append(p3)
                md += [f"Time series on {ts_trace} (one run per scheme):", "",
                       f"![time series]({img_prefix}{p3.name})", ""]
    # the adaptive Td over time, one trace per family (issue 14)
    td_picks: list[tuple[str, str, tuple[list[float], list[float]]]] = []
    seen_families: set[str] = set()
    for t in cells.traces("bulk"):
        fam = cells.family.get(t, "")
        if fam in seen_families:
            continue
        for q in cells.queues("bulk"):
            got = [r for r in cells.by.get(("bulk", t, "nuwa_adaptive", q), []) if r.valid]
            ts = td_series(got[0]) if got else None
            if ts is not None:
                td_picks.append((fam, t, ts))
                seen_families.add(fam)
                break
    if td_picks:
        p_td = plots_dir / "td-adaptive.png"
        plot_td(td_picks, p_td)
        plots.append(p_td)
        md += ["## Adaptive Td over time (`nuwa_adaptive`, one trace per family)", "",
               f"![Td in force]({img_prefix}{p_td.name})", ""]
    # ratchet
    if ratchet:
        md += ["## No ratchet: constant 10 Mbit/s, nuwa, deep queue", "",
               "Metrics over the last 60 s of the download (window from "
               f"{ratchet[0].rec['warmup_s']:.0f} s after the first frame; run "
               f"{ratchet[0].rec['duration_s']:.0f} s).", ""]
        md += table(["run", "valid", "util", "Qd p50", "Qd p95", "Qd max"],
                    [[r.rec["id"], str(r.valid), fmt(METRICS["util"](r.m), 3),
                      fmt(METRICS["p50"](r.m), 1), fmt(METRICS["p95"](r.m), 1),
                      fmt(_get(r.m, "queuing_delay_ms", "max"), 0)] for r in ratchet])
    # video
    for q in cells.queues("play"):
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
            mean_rows.append([s] + [fmt(_mean(cells.get("play", t, s, q, m)
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
    # simulator
    sim = index.get("sim") or []
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
    sweeps = index.get("sweeps") or []
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
    fairness = index.get("fairness") or []
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
    if index.get("missing_traces"):
        md += ["Traces listed in traces/index.json but not found (not run): "
               + ", ".join(index["missing_traces"]), ""]
    met = sum(t.met is True for t in targets)
    missed = sum(t.met is False for t in targets)
    md += ["## Closing note", "",
           f"{met} targets met, {missed} missed, {len(targets) - met - missed} not measured in "
           "this invocation (computed from the runs above; the verdicts are not edited by hand):",
           ""]
    md += table(["target", "measured", "verdict"], [t.row() for t in targets])
    if notes is not None and notes.exists():
        md += [f"Notes (hand-written, from `{_rel(notes)}`):", "", notes.read_text().strip(), ""]
    return "\n".join(md) + "\n", plots


def main(argv: list[str] | None = None) -> None:
    """CLI entry (see module doc)."""
    p = argparse.ArgumentParser(description="benchmark report (issue 5)")
    p.add_argument("--bench-dir", required=True, type=Path)
    p.add_argument("--docs-md", type=Path, help="also write the report here")
    p.add_argument("--docs-assets", type=Path, help="copy the plots here (with --docs-md)")
    p.add_argument("--notes", type=Path,
                   help="hand-written Markdown appended to the closing note (why a target was "
                   "missed, what was tried)")
    a = p.parse_args(argv)
    if not (a.bench_dir / "bench-index.json").exists():
        raise SystemExit(f"{a.bench_dir}/bench-index.json not found: run ./nuwa bench first")
    text, plots = build_report(a.bench_dir, notes=a.notes)
    (a.bench_dir / "report.md").write_text(text)
    print(f"wrote {a.bench_dir / 'report.md'} and {len(plots)} plots")
    if a.docs_md:
        assets = a.docs_assets or a.docs_md.parent / "bench"
        assets.mkdir(parents=True, exist_ok=True)
        for f in plots:
            shutil.copy(f, assets / f.name)
        rel = assets.resolve().relative_to(a.docs_md.resolve().parent)
        docs_text, _ = build_report(a.bench_dir, img_prefix=f"{rel}/", notes=a.notes)
        a.docs_md.write_text(docs_text)
        print(f"wrote {a.docs_md} (plots in {assets})")


if __name__ == "__main__":
    main()
