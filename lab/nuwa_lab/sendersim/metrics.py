"""Figures of a sender-side simulation, from the bottleneck's truth and the receivers' counts.

Definitions (window [a, b) in ms; a flow's own window starts at its start time):

* ``goodput_bps``: new frame payload the receiver got (each frame once), bits ÷ seconds, over
  the flow's lifetime [start, end).
* ``share``: the flow's payload over the fairness window ÷ all flows' payload there.
* ``queuing_delay_ms`` {mean, p50, p95}: per packet of the flow that arrived at the queue in
  the measured window, departure opportunity − arrival at the queue (the emulator's truth,
  docs/DESIGN.md "How it is measured"); nearest-rank percentiles.
* ``starved_s``: seconds of the flow's lifetime spent in runs of more than ``STARVE_MIN_S``
  consecutive 1 s bins in each of which the flow's wire bytes through the bottleneck were
  below ``STARVE_FRACTION`` × its fair share, the bin's trace capacity ÷ the flows started by
  the bin's start (the flow's first bin, partial, is not scored).
* ``jain_index``: Jain, Chiu & Hawe 1984 (Eq. 1) over the flows' goodputs over the fairness
  window, the last ``FAIR_WINDOW_S`` s (each flow from max(window start, its start)); in a
  run where a flow leaves early (``./nuwa mix --stop-s``), the last ``FAIR_WINDOW_S`` s
  before the first leave, and a flow's goodput and starvation count its life only.
* ``utilization``: bytes that left the bottleneck ÷ the trace's capacity (1504 bytes per
  opportunity) over the measured window [first start + warm-up, end), as
  ``bulk_metrics.py``'s utilization (which leaves out a 2 s warm-up).
* Series for plots and convergence times: ``flows[].throughput_bps_1s`` (the flow's bytes
  through the bottleneck per 1 s bin, bit/s) and ``capacity_bps_1s`` (the trace's, bit/s).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nuwa_lab.emulator import PACKET_SIZE_BYTES, Trace

from .core import FlowTruth

STARVE_FRACTION = 0.2
"""A flow below this fraction of its fair share in a 1 s bin is starving in it."""
STARVE_MIN_S = 5
"""Only runs of starving bins longer than this many seconds count."""
FAIR_WINDOW_S = 20.0
"""Jain's index and the shares are computed over the last this many seconds."""


def percentile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0–100) of ``xs``; NaN when empty (as stats.ts)."""
    if not xs:
        return math.nan
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def jain_index(xs: Sequence[float]) -> float:
    """(Σx)² ÷ (n Σx²), 1 for equal shares, 1/n for one flow taking all; ValueError if empty
    or all zero (Jain, Chiu & Hawe 1984, Eq. 1)."""
    if not xs or not any(xs):
        raise ValueError("jain_index: need at least one non-zero value")
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def _sum_between(times: Sequence[float], values: Sequence[int], a: float, b: float) -> int:
    return sum(v for t, v in zip(times, values, strict=True) if a <= t < b)


def capacity_bins(trace: Trace, end_ms: int) -> list[int]:
    """Trace capacity per 1 s bin over [0, end_ms), bytes."""
    bins = [0] * math.ceil(end_ms / 1000)
    for t in trace.opportunities_between_ms(0, end_ms):
        bins[t // 1000] += PACKET_SIZE_BYTES
    return bins


def bytes_per_s(truth: FlowTruth, n_bins: int) -> list[int]:
    """Bytes of a flow that left the bottleneck in each 1 s bin [k s, k+1 s), k < n_bins."""
    out = [0] * n_bins
    for t, size in zip(truth.depart_ms, truth.size_bytes, strict=True):
        k = int(t // 1000)
        if k < n_bins:
            out[k] += size
    return out


def starved_seconds(start_ms: float, truth: FlowTruth, cap_bins: Sequence[int],
                    starts_ms: Sequence[float], end_ms: float | None = None,
                    ends_ms: Sequence[float] | None = None) -> int:
    """Seconds in runs of > STARVE_MIN_S starving bins (module doc) of the flow's life
    [``start_ms``, ``end_ms``) (default: to the last bin); a bin's fair share divides its
    capacity among the flows present in it (started, and not ended before its end: ``ends_ms``,
    default none ends)."""
    mine = bytes_per_s(truth, len(cap_bins))
    total = run = 0
    last = len(cap_bins) if end_ms is None else min(len(cap_bins), math.floor(end_ms / 1000))
    ends = [math.inf] * len(starts_ms) if ends_ms is None else ends_ms
    for k in range(math.ceil(start_ms / 1000), last):
        active = max(1, sum(1 for s, e in zip(starts_ms, ends, strict=True)
                            if s <= k * 1000 and e >= (k + 1) * 1000))
        if cap_bins[k] > 0 and mine[k] < STARVE_FRACTION * cap_bins[k] / active:
            run += 1
            continue
        total += run if run > STARVE_MIN_S else 0
        run = 0
    return total + (run if run > STARVE_MIN_S else 0)


def summarize(schemes: Sequence[str], starts_ms: Sequence[float],
              delivered: Sequence[tuple[Sequence[float], Sequence[int]]],
              truth: Sequence[FlowTruth], trace: Trace, end_ms: int,
              from_ms: float | None = None,
              ends_ms: Sequence[float | None] | None = None) -> dict[str, Any]:
    """The result dict of a run (module doc): ``flows[]``, ``jain_index``, ``utilization``,
    ``queuing_delay_ms`` over all packets. ``delivered[i]``: flow i's (arrival ms, payload
    bytes) per new frame; ``truth[i]``: the bottleneck's view of flow i. ``from_ms``: where
    utilization and queuing delay start (default: the first flow's start). ``ends_ms[i]``:
    when flow i left, if before ``end_ms`` (None: it ran to the end); its goodput and
    starvation then count its life only, and the fairness window (Jain, shares) is the last
    ``FAIR_WINDOW_S`` before the first leave, while every flow was there."""
    first = min(starts_ms) if from_ms is None else from_ms
    ends = [end_ms if e is None else min(float(end_ms), e)
            for e in (ends_ms or [None] * len(starts_ms))]
    fair_end = min(ends)
    fair_from = max(0.0, fair_end - FAIR_WINDOW_S * 1000)
    fair_bps = []
    for (ts, bs), s in zip(delivered, starts_ms, strict=True):
        a = max(fair_from, s)
        fair_bps.append(_sum_between(ts, bs, a, fair_end) * 8000 / max(1.0, fair_end - a))
    fair_total = sum(_sum_between(ts, bs, fair_from, fair_end) for ts, bs in delivered)
    cap = capacity_bins(trace, end_ms)
    flows = []
    all_qd: list[float] = []
    for i, scheme in enumerate(schemes):
        ts, bs = delivered[i]
        tr = truth[i]
        qd = [q for t, q in zip(tr.depart_ms, tr.queue_delay_ms, strict=True)
              if first <= t - q < end_ms]
        all_qd += qd
        life_ms = max(1.0, ends[i] - starts_ms[i])
        flows.append({
            "scheme": scheme,
            "start_s": starts_ms[i] / 1000,
            "end_s": ends[i] / 1000,
            "goodput_bps": _sum_between(ts, bs, starts_ms[i], ends[i]) * 8000 / life_ms,
            "share": (_sum_between(ts, bs, fair_from, fair_end) / fair_total if fair_total
                      else 0.0),
            "queuing_delay_ms": _qd(qd),
            "starved_s": starved_seconds(starts_ms[i], tr, cap, starts_ms, ends[i], ends),
            "sent_packets": tr.sent_packets,
            "dropped_packets": tr.dropped_packets,
            "loss_rate": tr.dropped_packets / max(1, tr.sent_packets),
            "throughput_bps_1s": [8 * b for b in bytes_per_s(tr, len(cap))],
        })
    offered = len(trace.opportunities_between_ms(math.ceil(first), end_ms)) * PACKET_SIZE_BYTES
    left = sum(_sum_between(tr.depart_ms, tr.size_bytes, first, end_ms) for tr in truth)
    return {
        "flows": flows,
        "jain_index": jain_index(fair_bps) if any(fair_bps) else 0.0,
        "utilization": left / offered if offered else 0.0,
        "queuing_delay_ms": _qd(all_qd),
        "capacity_bps_1s": [8 * b for b in cap],
        "definitions": {"starved": f"< {STARVE_FRACTION} x fair share (1 s bins) for "
                                   f"> {STARVE_MIN_S} s", "fair_window_s": FAIR_WINDOW_S},
    }


def _qd(xs: Sequence[float]) -> dict[str, float | None]:
    """Mean, p50, p95 of queuing delays, ms; None each when there is no packet (JSON null)."""
    if not xs:
        return {"mean": None, "p50": None, "p95": None}
    return {"mean": sum(xs) / len(xs), "p50": percentile(xs, 50), "p95": percentile(xs, 95)}
