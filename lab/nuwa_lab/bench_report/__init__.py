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

Modules, one concept each (the package re-exports their public names, so
``from nuwa_lab.bench_report import X`` works as before):

* ``schemes``: scheme names, aliases, the video ladder, table order and plot
  colours (``COLORS``): add a scheme here;
* ``runs``: the index and its runs (``Run``, ``load_bench``);
* ``metrics``: a run's metrics by name (``METRICS``) and ``Cells`` (valid runs
  by kind, trace, scheme, queue; mean over seeds);
* ``markdown``: numbers, tables, queue names (``DEEP_MIN_PACKETS``);
* ``series``: per-run time series for the plots (``series.json`` cache), Td
  and the signal the rule read over time;
* ``frontier``: ``frontier.json`` and each scheme's distance to it;
* ``targets``: every target with its figure and verdict;
* ``plots``: the PNGs;
* ``bulk``, ``video``, ``simulated``: the report's sections (``video`` also
  holds the spread of repeated runs and the ladder's steps);
* ``report``: ``build_report``, header and closing note; ``cli``: ``main``.
"""

from __future__ import annotations

from .bulk import bulk_section, ratchet_section, signal_section, td_section
from .cli import main
from .frontier import (
    FRONTIER_FILE,
    FRONTIER_FLOOR_MS,
    FRONTIER_TARGET_RATIO,
    frontier_p95_at,
    frontier_ratio,
    frontier_section,
    load_frontier,
)
from .markdown import DEEP_MIN_PACKETS, fmt, qname, table
from .metrics import METRICS, Cells, Num, finite_mean, metric_at, rebuffer_ratio, throughput_mbps
from .plots import plot_cdfs, plot_signal, plot_sweeps, plot_td, plot_timeseries, plot_tradeoff
from .report import build_report
from .runs import Run, load_bench
from .schemes import (
    BULK_SCHEME_ORDER,
    COLORS,
    LADDER,
    LADDER_STEPS,
    NUWA_ESTIMATE_SCHEMES,
    PLAY_ALIASES,
)
from .series import BIN_MS, CDF_POINTS, run_series, signal_series, td_series
from .simulated import fairness_section, sim_section, sweeps_section
from .targets import SIM_TRACES_FIVE, Target, compute_targets, frontier_target
from .video import (
    LADDER_METRICS,
    Spread,
    Step,
    fmt_spread,
    ladder_section,
    spread,
    step,
    step_verdict,
    video_family,
    video_section,
)

__all__ = [
    "BIN_MS", "BULK_SCHEME_ORDER", "CDF_POINTS", "COLORS", "Cells", "DEEP_MIN_PACKETS",
    "FRONTIER_FILE", "FRONTIER_FLOOR_MS", "FRONTIER_TARGET_RATIO", "LADDER", "LADDER_METRICS",
    "LADDER_STEPS", "METRICS", "NUWA_ESTIMATE_SCHEMES", "Num", "PLAY_ALIASES", "Run",
    "SIM_TRACES_FIVE", "Spread", "Step", "Target", "build_report", "bulk_section",
    "compute_targets", "fairness_section", "finite_mean", "fmt", "fmt_spread", "frontier_p95_at",
    "frontier_ratio", "frontier_section", "frontier_target", "ladder_section", "load_bench",
    "load_frontier", "main", "metric_at", "plot_cdfs", "plot_signal", "plot_sweeps", "plot_td",
    "plot_timeseries", "plot_tradeoff", "qname", "ratchet_section", "rebuffer_ratio", "run_series",
    "signal_section", "signal_series", "sim_section", "spread", "step", "step_verdict",
    "sweeps_section", "table", "td_section", "td_series", "throughput_mbps", "video_family",
    "video_section",
]
