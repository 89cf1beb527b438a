"""Distance to the offline frontier (issue 14): ``frontier.json`` (the omniscient senders'
envelope per bulk trace, SIMULATED, written by ``./nuwa bench``), the frontier's p95 at a scheme's
achieved utilization, and the report's per-trace table. Bench directories without the file
report the frontier target "not measured" (``targets.frontier_target``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .markdown import fmt, qname, table
from .metrics import Cells, Num

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
    head = ["trace", "scheme", "util", "Qd p95", "frontier p95 at util", "p95 ÷ frontier",
            "frontier at 0.90 / 0.95"]
    return [*_frontier_intro(q), *table(head, rows)]


def _frontier_intro(q: int) -> list[str]:
    return [f"Distance to the offline frontier (issue 14), {qname(q)}: the frontier is the "
            "lowest p95 queuing delay at which an omniscient sender reaches a utilization: an "
            "ACK-clocked window = the capacity the trace will offer over the next base RTT + "
            "headroom from the time its packets reach the queue, or arrivals paced evenly over "
            "each base RTT carrying its capacity (headroom swept), SIMULATED on the same path "
            "model (`frontier.json`, packages/cc/src/sim/frontier.ts, docs/DESIGN.md §7). It "
            "bounds the true frontier from above. Ratio = p95 ÷ max(frontier, "
            f"{FRONTIER_FLOOR_MS:g} ms); \"above its range\": the scheme's utilization is higher "
            "than any member of the family reached.", ""]

