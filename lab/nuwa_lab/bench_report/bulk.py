"""The report's end-to-end bulk sections: per queue the table of every scheme, the delay and
estimate-error table, the frontier table and the plots (trade-off, CDFs, time series); the
adaptive Td and the signal the rule read over time (one trace per family); the no-ratchet runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .frontier import frontier_section
from .issue14 import causal_section
from .markdown import fmt, qname, table
from .metrics import METRICS, Cells, metric_at
from .plots import plot_cdfs, plot_signal, plot_td, plot_timeseries, plot_tradeoff
from .runs import Run
from .series import signal_series, td_series


def _pick_timeseries_trace(cells: Cells) -> str | None:
    """The trace of the time-series plot: T-Mobile LTE when run, else the first bulk trace."""
    tr = cells.traces("bulk")
    for pref in ("mahimahi-tmobile-lte-short",):
        if pref in tr:
            return pref
    return tr[0] if tr else None


def bulk_section(cells: Cells, q: int, series: dict[str, dict[str, Any]],
                 frontier: dict[str, Any] | None, plots_dir: Path,
                 img_prefix: str) -> tuple[list[str], list[Path]]:
    """Markdown and plots (written to ``plots_dir``) of the bulk runs on queue ``q``.

    ``series``: ``series.run_series`` of each valid bulk run by run id (runs without one are
    left out of the time series); ``frontier``: ``frontier.json`` or None.
    """
    md: list[str] = []
    plots: list[Path] = []
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
    md += causal_section(cells, frontier, q)
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
    return md, plots


def td_section(cells: Cells, plots_dir: Path, img_prefix: str) -> tuple[list[str], list[Path]]:
    """The adaptive Td over time (``nuwa_adaptive``), one trace per family (issue 14); empty
    when no such run has a page log."""
    md: list[str] = []
    plots: list[Path] = []
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
    return md, plots


def signal_section(cells: Cells, plots_dir: Path,
                   img_prefix: str) -> tuple[list[str], list[Path]]:
    """What adapts over time under the default signal (``nuwa``, deepest queue), one trace per
    family (issue 14); empty when no run logged ``rule_qd_ms``."""
    md: list[str] = []
    plots: list[Path] = []
    sig_picks: list[tuple[str, str, dict[str, list[float]]]] = []
    sig_families: set[str] = set()
    for t in cells.traces("bulk"):
        fam = cells.family.get(t, "")
        if fam in sig_families:
            continue
        deep = max(cells.queues("bulk"))
        got = [r for r in cells.by.get(("bulk", t, "nuwa", deep), []) if r.valid]
        ser = signal_series(got[0]) if got else None
        if ser is not None:
            sig_picks.append((fam, t, ser))
            sig_families.add(fam)
    if sig_picks:
        p_sig = plots_dir / "signal-backlog.png"
        plot_signal(sig_picks, p_sig)
        plots.append(p_sig)
        md += ["## What adapts over time (`nuwa`, deep queue, one trace per family)", "",
               "Per second: the p95 of the raw queuing delay (Eq. 1) and of the delay the rule "
               "read (the run's ``qd_source``: by default min(Qd, our service delay), DESIGN.md "
               "§3 \"Service delay\"), and the Td in "
               "force. "
               "Where the link's own gaps raise Qd, the rule's signal stays low.", "",
               f"![signal]({img_prefix}{p_sig.name})", ""]
    return md, plots


def ratchet_section(ratchet: list[Run]) -> list[str]:
    """The no-ratchet runs (constant 10 Mbit/s, nuwa, deep queue), valid or not; empty when
    none ran."""
    md: list[str] = []
    if ratchet:
        md += ["## No ratchet: constant 10 Mbit/s, nuwa, deep queue", "",
               "Metrics over the last 60 s of the download (window from "
               f"{ratchet[0].rec['warmup_s']:.0f} s after the first frame; run "
               f"{ratchet[0].rec['duration_s']:.0f} s).", ""]
        md += table(["run", "valid", "util", "Qd p50", "Qd p95", "Qd max"],
                    [[r.rec["id"], str(r.valid), fmt(METRICS["util"](r.m), 3),
                      fmt(METRICS["p50"](r.m), 1), fmt(METRICS["p95"](r.m), 1),
                      fmt(metric_at(r.m, "queuing_delay_ms", "max"), 0)] for r in ratchet])
    return md
