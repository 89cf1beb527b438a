"""Issue 14's own targets ("Robust on links it was not tuned on"), computed from the valid bulk
runs of one invocation against Cubic of the same invocation, per scheme of the Nuwa family.

The targets (deep queue, every 3G, 4G and low-band 5G dev trace run):

- utilization ≥ 0.95 × Cubic's on at least 90 % of the traces, and ≥ 0.85 × on all;
- p95 queuing delay ≤ max(50 ms, 0.1 × Cubic's) on at least 90 % of the traces;
- on traces that fall below 0.3 Mbit/s (``low_rate_share`` > 0 in traces/index.json): p95 ≤ 500 ms;
- shallow queue (< 100 packets): loss ≤ 3 % on every trace;
- on average within 1.3 × of the offline frontier (``targets.frontier_target``, issue 5's table).

Each is met, missed, or not measured (no Cubic cell, no shallow run); a trace counts only where
both the scheme and Cubic have a valid run. ``causal_section`` sets the same per-trace bounds
against the causal envelope of ``frontier.json`` (``./nuwa bench --causal-frontier``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .frontier import FRONTIER_FLOOR_MS, frontier_p95_at
from .markdown import DEEP_MIN_PACKETS, fmt, table
from .metrics import Cells
from .targets import Target

TRACE_INDEX = Path(__file__).resolve().parents[3] / "traces" / "index.json"
"""traces/index.json: per-trace statistics (``low_rate_share``: seconds under 0.3 Mbit/s)."""

NUWA_FAMILY = ("nuwa", "nuwa_fixed_td", "nuwa_backlog", "nuwa_raw", "nuwa_adaptive", "nuwa_bbr")
"""Schemes whose targets are computed, where the invocation ran them."""

UTIL_RATIO_MOST, UTIL_RATIO_ALL, SHARE_MOST = 0.95, 0.85, 0.9
P95_FLOOR_MS, P95_CUBIC_FRACTION, LOW_RATE_P95_MS, SHALLOW_LOSS = 50.0, 0.1, 500.0, 0.03


def low_rate_traces(index_path: Path = TRACE_INDEX) -> set[str]:
    """Names (file stem) of the traces with any second under 0.3 Mbit/s (``low_rate_share`` > 0).

    Raises:
        OSError, ValueError: the index cannot be read or parsed.
    """
    data: dict[str, Any] = json.loads(index_path.read_text())
    return {Path(t["file"]).stem for t in data["traces"] if (t.get("low_rate_share") or 0) > 0}


def issue14_targets(cells: Cells, scheme: str, low_rate: set[str]) -> list[Target]:
    """Issue 14's targets for ``scheme`` (module doc), each with its figure and per-trace misses."""
    deep = [q for q in cells.queues("bulk") if q >= DEEP_MIN_PACKETS]
    shallow = [q for q in cells.queues("bulk") if q < DEEP_MIN_PACKETS]
    out: list[Target] = []
    if not deep:
        return [Target(f"{scheme}: issue 14's deep-queue targets", "no deep-queue runs", None)]
    q = deep[0]
    ratios: dict[str, float] = {}
    p95_ok: dict[str, bool] = {}
    low: dict[str, float] = {}
    for t in cells.traces("bulk"):
        u, uc = cells.get("bulk", t, scheme, q, "util"), cells.get("bulk", t, "cubic", q, "util")
        p, pc = cells.get("bulk", t, scheme, q, "p95"), cells.get("bulk", t, "cubic", q, "p95")
        if u is None or uc is None or p is None or pc is None or uc <= 0:
            continue
        ratios[t] = u / uc
        p95_ok[t] = p <= max(P95_FLOOR_MS, P95_CUBIC_FRACTION * pc)
        if t in low_rate:
            low[t] = p
    n = len(ratios)
    if n == 0:
        return [Target(f"{scheme}: issue 14's deep-queue targets",
                       "no trace with both this scheme and cubic", None)]
    most = sum(r >= UTIL_RATIO_MOST for r in ratios.values())
    below_all = sorted(f"{t} {r:.2f}×" for t, r in ratios.items() if r < UTIL_RATIO_ALL)
    out.append(Target(f"{scheme}: utilization ≥ 0.95× cubic's on ≥ 90 % of traces",
                      f"{most}/{n}", most >= SHARE_MOST * n))
    out.append(Target(f"{scheme}: utilization ≥ 0.85× cubic's on every trace",
                      f"{n - len(below_all)}/{n}"
                      + (f"; below: {', '.join(below_all)}" if below_all else ""),
                      not below_all))
    ok = sum(p95_ok.values())
    miss = sorted(t for t, v in p95_ok.items() if not v)
    out.append(Target(f"{scheme}: p95 ≤ max(50 ms, 0.1× cubic's) on ≥ 90 % of traces",
                      f"{ok}/{n}" + (f"; missed: {', '.join(miss)}" if miss else ""),
                      ok >= SHARE_MOST * n))
    over = sorted(f"{t} {p:.0f} ms" for t, p in low.items() if p > LOW_RATE_P95_MS)
    low_figure = (f"{len(low) - len(over)}/{len(low)}"
                  + (f"; over: {', '.join(over)}" if over else "")) if low else "no such trace run"
    out.append(Target(f"{scheme}: traces below 0.3 Mbit/s, p95 ≤ 500 ms", low_figure,
                      (not over) if low else None))
    if shallow:
        qs = shallow[0]
        losses = {t: cells.get("bulk", t, scheme, qs, "loss") for t in cells.traces("bulk")}
        have = {t: v for t, v in losses.items() if v is not None}
        bad = sorted(f"{t} {100 * v:.1f}%" for t, v in have.items() if v > SHALLOW_LOSS)
        out.append(Target(f"{scheme}: shallow queue ({qs} packets), loss ≤ 3 % on every trace",
                          (f"{len(have) - len(bad)}/{len(have)}"
                           + (f"; above: {', '.join(bad)}" if bad else "")) if have else "no runs",
                          (not bad) if have else None))
    else:
        out.append(Target(f"{scheme}: shallow queue, loss ≤ 3 %", "no shallow-queue runs", None))
    return out


def issue14_section(cells: Cells, index_path: Path = TRACE_INDEX) -> list[str]:
    """The report's "Targets (issue 14)" section: one table per Nuwa-family scheme run with
    cubic in this invocation; empty when none was."""
    schemes = [s for s in NUWA_FAMILY if any(k[0] == "bulk" and k[2] == s for k in cells.by)]
    if not schemes or not any(k[0] == "bulk" and k[2] == "cubic" for k in cells.by):
        return []
    try:
        low_rate = low_rate_traces(index_path)
    except (OSError, ValueError, KeyError) as exc:
        return ["## Targets (issue 14)", "", f"traces/index.json unreadable ({exc}).", ""]
    md = ["## Targets (issue 14), computed from this run", "",
          "Deep queue unless stated, each scheme against cubic of this invocation; the frontier "
          "target is in issue 5's table above.", ""]
    rows = [t.row() for s in schemes for t in issue14_targets(cells, s, low_rate)]
    return md + table(["target", "measured", "verdict"], rows)


def causal_section(cells: Cells, frontier: dict[str, Any] | None, q: int) -> list[str]:
    """Markdown: per trace with a causal envelope in ``frontier`` (``./nuwa bench
    --causal-frontier``), the envelope's p95 at each Nuwa-family scheme's utilization and the
    scheme's p95 ÷ that, and whether any causal member reaches issue 14's per-trace bounds
    (utilization ≥ 0.95× cubic's at p95 ≤ max(50 ms, 0.1× cubic's); cubic of this run). Empty
    without causal envelopes or on another queue."""
    if frontier is None or int(frontier.get("queue_packets", -1)) != q:
        return []
    traces = frontier.get("traces") or {}
    rows = []
    for t in cells.traces("bulk"):
        env = ((traces.get(t) or {}).get("causal") or {}).get("envelope")
        if not env:
            continue
        uc, pc = cells.get("bulk", t, "cubic", q, "util"), cells.get("bulk", t, "cubic", q, "p95")
        need_u = None if uc is None else UTIL_RATIO_MOST * uc
        bound = None if pc is None else max(P95_FLOOR_MS, P95_CUBIC_FRACTION * pc)
        at_need = None if need_u is None else frontier_p95_at(env, need_u)
        if need_u is None or bound is None:
            reach = "– (no cubic run)"
        elif at_need is None:
            reach = f"no: no member reaches util {need_u:.3f}"
        else:
            verdict = "yes" if at_need <= bound else "no"
            reach = f"{verdict}: {at_need:.0f} ms at util {need_u:.3f}, bound {bound:.0f}"
        for s in cells.schemes("bulk"):
            if s == "cubic":
                continue
            u, p = cells.get("bulk", t, s, q, "util"), cells.get("bulk", t, s, q, "p95")
            if u is None or p is None:
                continue
            f = frontier_p95_at(env, u)
            rows.append([t, s, fmt(u, 3), fmt(p), "above its range" if f is None else fmt(f, 1),
                         "–" if f is None else f"{p / max(f, FRONTIER_FLOOR_MS):.2f}×", reach])
    if not rows:
        return []
    return ["", "Against senders that know only the past (issue 14; `--causal-frontier`): a "
            "causal window = a quantile of the capacity rates the link offered over the last "
            "200 or 1000 ms (50 ms spans, known exactly one one-way delay late) × (base RTT + "
            "headroom), a grid of 32 (packages/cc/src/sim/frontier.ts `causalWindowPoint`), "
            "SIMULATED on the same path model. A receiver knows less (it sees the capacity only "
            "while its queue is not empty). \"causal p95 at util\": the grid's envelope at the "
            "scheme's utilization; \"issue 14's bound reachable\": whether a member reaches "
            "utilization ≥ 0.95× cubic's at p95 ≤ max(50 ms, 0.1× cubic's) on this trace (a "
            "grid, not every causal schedule: evidence, not proof).", "",
            *table(["trace", "scheme", "util", "Qd p95", "causal p95 at util", "p95 ÷ causal",
                    "issue 14's bound reachable by a causal member"], rows)]
