"""The report's PNG plots (matplotlib, Agg): throughput against p95 delay, delay CDFs, time
series, the adaptive Td, the signal the rule read, the simulated parameter sweeps. Colours come
from ``schemes.COLORS``."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from .markdown import qname
from .metrics import METRICS, Cells
from .runs import Run
from .schemes import COLORS
from .series import CDF_POINTS


def _plt() -> Any:
    """matplotlib.pyplot on the Agg backend (imported on first use: the report's tables need
    no matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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


def plot_signal(picks: list[tuple[str, str, dict[str, list[float]]]], path: Path) -> None:
    """One panel per (family, trace): per-second p95 of the raw Qd and of the delay the
    rule read, and the Td in force, log scale."""
    plt = _plt()
    fig, axes = plt.subplots(len(picks), 1, figsize=(11, 2.6 * len(picks)), squeeze=False)
    for ax, (family, trace, ser) in zip(axes[:, 0], picks, strict=True):
        t = ser["t_s"]
        ax.plot(t, ser["raw_p95_ms"], lw=0.9, color="C5", label="raw Qd (Eq. 1), p95 per s")
        ax.plot(t, ser["rule_p95_ms"], lw=0.9, color="C0", label="what the rule read, p95 per s")
        ax.step(t, ser["td_ms"], where="post", lw=0.8, color="k", ls="--", label="Td in force")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_ylabel("ms")
        ax.set_title(f"{family}: {trace}", fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("s since the first frame")
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
