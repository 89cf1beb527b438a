"""Metrics of a run and the cells of a matrix: valid runs grouped by (kind, trace, scheme,
queue), each metric the mean over a cell's runs (docs/DESIGN.md §6's metrics, read from each run's
``bench.json``; nothing recomputed)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .runs import Run
from .schemes import BULK_SCHEME_ORDER, LADDER, NUWA_ESTIMATE_SCHEMES

Num = float | None
"""A metric's value; None when not measured."""


def throughput_mbps(m: dict[str, Any]) -> Num:
    """Delivered bytes over the metrics window, Mbit/s (bulk runs)."""
    w = m.get("window_s")
    d = m.get("delivered_bytes")
    if not w or d is None or w[1] <= w[0]:
        return None
    return float(d) * 8 / (w[1] - w[0]) / 1e6


def metric_at(m: dict[str, Any], *path: str) -> Num:
    """The number at ``path`` in a run's metrics (``m["a"]["b"]``), or None when absent or
    not a number (booleans are not numbers here)."""
    x: Any = m
    for p in path:
        if not isinstance(x, dict) or p not in x:
            return None
        x = x[p]
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def rebuffer_ratio(m: dict[str, Any]) -> Num:
    """Rebuffering time ÷ (rebuffering + media played), for video runs."""
    r = metric_at(m, "rebuffer_s")
    p = metric_at(m, "media_played_s")
    if r is None or p is None or r + p <= 0:
        return None
    return r / (r + p)


METRICS: dict[str, Callable[[dict[str, Any]], Num]] = {
    "util": lambda m: metric_at(m, "utilization"),
    "thr": throughput_mbps,
    "mean": lambda m: metric_at(m, "queuing_delay_ms", "mean"),
    "p50": lambda m: metric_at(m, "queuing_delay_ms", "p50"),
    "p95": lambda m: metric_at(m, "queuing_delay_ms", "p95"),
    "p95_data": lambda m: metric_at(m, "queuing_delay_data_ms", "p95"),
    "loss": lambda m: metric_at(m, "loss_rate"),
    "qd_med": lambda m: metric_at(m, "qd_error_ms", "median"),
    "qd_p95": lambda m: metric_at(m, "qd_error_ms", "p95"),
    "qoe": lambda m: metric_at(m, "qoe_per_chunk"),
    "bitrate": lambda m: metric_at(m, "bitrate_kbps_mean"),
    "rebuf": rebuffer_ratio,
    "switches": lambda m: metric_at(m, "switches"),
    "startup": lambda m: metric_at(m, "startup_s"),
    "err_nuwa": lambda m: metric_at(m, "estimate_error", "nuwa"),
    "err_dashjs": lambda m: metric_at(m, "estimate_error", "dashjs"),
    "redl_mb": lambda m: (None if metric_at(m, "redownloaded_bytes") is None
                          else float(m["redownloaded_bytes"]) / 1e6),
    "abandoned": lambda m: metric_at(m, "abandoned_requests"),
}


def finite_mean(xs: Iterable[Num]) -> Num:
    """Mean of the finite values of ``xs``; None when there is none."""
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
        """Mean of ``metric`` over the cell's valid runs (None when none has it)."""
        return finite_mean(self.values(kind, trace, scheme, queue, metric))

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
        """Traces with a valid run of ``kind``, by family then name."""
        return sorted({k[1] for k in self.by if k[0] == kind},
                      key=lambda n: (self.family.get(n, ""), n))

    def queues(self, kind: str) -> list[int]:
        """Queue sizes (packets) with a valid run of ``kind``, deepest first."""
        return sorted({k[3] for k in self.by if k[0] == kind}, reverse=True)

    def schemes(self, kind: str) -> list[str]:
        """Schemes with a valid run of ``kind``: the ladder's or BULK_SCHEME_ORDER, then others."""
        order = list(LADDER) if kind == "play" else list(BULK_SCHEME_ORDER)
        got = {k[2] for k in self.by if k[0] == kind}
        return [s for s in order if s in got] + sorted(got - set(order))
