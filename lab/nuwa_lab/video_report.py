"""Issue 15's video section of the bench report: per trace, QoE as a fraction of the offline
optimum (abr_optimum.py, written by play_metrics as ``qoe_optimum``), rebuffer ratio,
switches, start-up, mean bitrate and bytes wasted (re-downloaded + abandoned), and the
issue's targets with their figures. Reads the same cells as bench_report (passed in, so this
module has no import cycle with it).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Protocol


class CellsLike(Protocol):
    """bench_report.Cells: valid runs grouped by (kind, trace, scheme, queue)."""

    family: dict[str, str]
    by: dict[tuple[str, str, str, int], list[Any]]

    def traces(self, kind: str) -> list[str]: ...
    def schemes(self, kind: str) -> list[str]: ...


def _metric(m: dict[str, Any], name: str) -> float | None:
    """One issue-15 metric of a run's metrics (None when absent)."""

    def g(k: str) -> float | None:
        x = m.get(k)
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None

    if name == "rebuf":
        r, p = g("rebuffer_s"), g("media_played_s")
        return None if r is None or p is None or r + p <= 0 else r / (r + p)
    if name == "wasted_mb":
        a, b = g("redownloaded_bytes"), g("abandoned_bytes")
        return None if a is None and b is None else ((a or 0) + (b or 0)) / 1e6
    if name == "p95":
        q = m.get("queuing_delay_ms") or {}
        x = q.get("p95")
        return float(x) if isinstance(x, int | float) else None
    if name == "lower":  # segments fetched again at a lower rung than the copy they replaced
        return g("redownloaded_lower_chunks")
    key = {"qoe": "qoe_per_chunk", "opt": "qoe_optimum", "frac": "qoe_fraction",
           "bitrate": "bitrate_kbps_mean", "switches": "switches", "startup": "startup_s"}[name]
    return g(key)


def cell(cells: CellsLike, trace: str, scheme: str, q: int, name: str) -> float | None:
    """Mean of a metric over a cell's valid runs (None without a finite value)."""
    xs = [v for r in cells.by.get(("play", trace, scheme, q), [])
          if (v := _metric(r.m, name)) is not None and math.isfinite(v)]
    return statistics.fmean(xs) if xs else None


def _f(x: float | None, d: int = 2, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.{d}f}%" if pct else f"{x:.{d}f}"


def _family(f: str) -> str:
    return "4G" if f.startswith("LTE") else ("5G" if f.startswith("5G") else f)


def issue15_section(cells: CellsLike, q: int, bulk_oracle_p95: dict[str, float] | None = None
                    ) -> list[str]:
    """Markdown lines: the per-trace table and the issue-15 targets (queue ``q``).

    ``bulk_oracle_p95``: the oracle's bulk p95 queuing delay per trace (ms), when this
    invocation ran bulk; without it the queuing-delay target is checked against 50 ms only.
    """
    traces = cells.traces("play")
    schemes = cells.schemes("play")
    md = ["### Against the offline optimum (issue 15)", "",
          "Offline optimum: the best QoE any ABR could reach on the capacity the run saw, with "
          "the real segment sizes and the run's own start-up (lab/nuwa_lab/"
          "abr_optimum.py: DP at 100 ms resolution, sequential downloads, no buffer cap). "
          "`QoE/opt` = mean over runs of the run's QoE ÷ its own optimum; `wasted MB` = "
          "re-downloaded + abandoned bytes; `lower` = segments fetched again at a lower rung "
          "than the copy they replaced, per run (dash.js's fast-switch replacement abandoned "
          "and continued below; play_metrics `redownloaded_lower_chunks`). QoE, kbit/s and "
          "switches count what was shown: a "
          "position's bitrate is that of the frames presented over it (play_metrics "
          "`rendered_rates`; a run whose page logged no frame sizes: its last download, "
          "`quality_basis` in the run's summary).", ""]
    head = ["trace", "scheme", "QoE", "optimum", "QoE/opt", "rebuffer", "switches", "startup s",
            "kbit/s", "wasted MB", "lower", "Qd p95 ms"]
    rows = []
    for t in traces:
        for s in schemes:
            v = {n: cell(cells, t, s, q, n) for n in
                 ("qoe", "opt", "frac", "rebuf", "switches", "startup", "bitrate", "wasted_mb",
                  "lower", "p95")}
            if v["qoe"] is None:
                continue
            rows.append([t, s, _f(v["qoe"]), _f(v["opt"]), _f(v["frac"], 0, True),
                         _f(v["rebuf"], 2, True), _f(v["switches"], 1), _f(v["startup"]),
                         _f(v["bitrate"], 0), _f(v["wasted_mb"]), _f(v["lower"], 1),
                         _f(v["p95"], 0)])
    md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows] + [""]
    md += ["Issue 15 targets (Nuwa = `nuwa`, dash.js default = `dashjs`):", ""]
    md += ["| target | figure | verdict |", "|---|---|---|"]
    md += ["| " + " | ".join(r) + " |" for r in issue15_targets(cells, q, bulk_oracle_p95)]
    return md + [""]


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "**missed**")


def issue15_targets(cells: CellsLike, q: int, bulk_oracle_p95: dict[str, float] | None = None
                    ) -> list[list[str]]:
    """Rows (target, figure, verdict) of issue 15's targets."""
    traces = [t for t in cells.traces("play")
              if cell(cells, t, "nuwa", q, "qoe") is not None
              and cell(cells, t, "dashjs", q, "qoe") is not None]
    out: list[list[str]] = []

    def mean(s: str, n: str, ts: list[str]) -> float | None:
        xs = [x for t in ts if (x := cell(cells, t, s, q, n)) is not None]
        return statistics.fmean(xs) if xs else None

    nq, dq = mean("nuwa", "qoe", traces), mean("dashjs", "qoe", traces)
    pairs = {t: (cell(cells, t, "nuwa", q, "qoe") or 0.0,
                 cell(cells, t, "dashjs", q, "qoe") or 0.0) for t in traces}

    def trace_ok(n: float, d: float) -> bool:
        # no ratio against a QoE ≤ 0 (stalls dominate): then Nuwa must not be lower
        return n >= 0.95 * d if d > 0 else n >= d

    def trace_fig(t: str, n: float, d: float) -> str:
        return f"{t} {n / d:.2f}×" if d > 0 else f"{t} {n:.2f} vs {d:.2f}"

    ok1 = None if nq is None or dq is None or dq <= 0 else nq >= 1.15 * dq
    out.append(["Mean QoE ≥ 1.15× dash.js default's",
                f"{_f(nq)} vs {_f(dq)} ({_f(nq / dq if nq is not None and dq else None)}×) "
                f"over {len(traces)} traces", _verdict(ok1)])
    ok2 = None if not pairs else all(trace_ok(n, d) for n, d in pairs.values())
    out.append(["No trace below 0.95× dash.js default's QoE",
                ", ".join(trace_fig(t, n, d) for t, (n, d) in pairs.items()) or "–",
                _verdict(ok2)])
    opt = mean("nuwa", "opt", traces)
    frac = mean("nuwa", "frac", traces)
    ok3 = None if nq is None or not opt else nq >= 0.85 * opt
    out.append(["Mean QoE ≥ 0.85× the offline optimum",
                f"mean QoE {_f(nq)} vs mean optimum {_f(opt)} "
                f"({_f(nq / opt if nq is not None and opt else None)}×; mean of per-run "
                f"fractions {_f(frac)})", _verdict(ok3)])
    fams: dict[str, list[str]] = defaultdict(list)
    for t in traces:
        fams[_family(cells.family.get(t, ""))].append(t)
    bad = []
    fig = []
    for f, ts in sorted(fams.items()):
        for n in ("rebuf", "switches"):
            a, b = mean("nuwa", n, ts), mean("dashjs", n, ts)
            if a is None or b is None:
                continue
            fig.append(f"{f} {n} {_f(a, 3)} vs {_f(b, 3)}")
            if a > b + 1e-9:
                bad.append(f"{f} {n}")
    out.append(["Rebuffer ratio and switches ≤ dash.js's on every family",
                "; ".join(fig) or "–", _verdict(None if not fig else not bad)])
    est_ts = [t for t in cells.traces("play")
              if cell(cells, t, "dashjs_nuwa_estimate", q, "qoe") is not None
              and cell(cells, t, "dashjs_grants", q, "qoe") is not None]
    a, b = mean("dashjs_nuwa_estimate", "qoe", est_ts), mean("dashjs_grants", "qoe", est_ts)
    c = mean("dashjs", "qoe", est_ts)
    out.append(["dash.js's rules fed Nuwa's estimate ≥ the same rules on their own estimate",
                f"dashjs_nuwa_estimate {_f(a)} vs dashjs_grants {_f(b)} (same transport; "
                f"vs dashjs over cubic {_f(c)}) over {len(est_ts)} traces",
                _verdict(None if a is None or b is None else a >= b)])
    p95s = {t: p for t in traces if (p := cell(cells, t, "nuwa", q, "p95")) is not None}
    lim = {t: max(50.0, 1.2 * (bulk_oracle_p95 or {}).get(t, 0.0)) for t in p95s}
    over = [t for t in p95s if p95s[t] > lim[t]]
    out.append(["Queuing delay while streaming p95 ≤ max(50 ms, 1.2× oracle's bulk)",
                ", ".join(f"{t} {p95s[t]:.0f}/{lim[t]:.0f} ms" for t in p95s)
                + ("" if bulk_oracle_p95 else " (no bulk oracle run here: limit 50 ms)"),
                _verdict(None if not p95s else not over)])
    return out
