"""Burstiness statistics of Mahimahi traces: gap p90/p99 and the low-rate share.

Definitions (traces/README.md "Traces"; the same as the development set's
``traces/index.json`` ``statistics`` string):

- ``gap_p90_ms`` / ``gap_p99_ms``: 90th / 99th percentile, with linear
  interpolation between order statistics (numpy's default "linear" method),
  of the gaps between consecutive *distinct* timestamps among those
  <= ``window_ms`` (60 000 ms: the first 60 s). Repeated timestamps (several
  opportunities in one millisecond) make no gap.
- ``low_rate_share``: share of the trace's 1 s bins whose rate is below
  ``low_rate_mbps`` (0.3 Mbit/s). Bin k holds the timestamps in
  (k s, (k+1) s]; timestamp 0 falls in bin 0. A trailing partial bin shorter
  than 0.5 s is left out; a longer one is scaled to a rate over its length.
  Rates use ``packet_bytes`` per opportunity (1500, index.json ``packet_bytes``).

CLI: ``python -m nuwa_lab.emulator.trace_stats [--index traces/index.json
[--write]] [TRACE ...]`` prints one row per trace; with ``--index`` it takes
the traces listed there (found beside the index or, for those kept outside
the repository, in ``--extra-dir`` directories) and ``--write`` stores the
three fields in each entry.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .trace import Trace, TraceError, load_trace

#: Window of the gap statistics, ms (the first 60 s of the trace).
GAP_WINDOW_MS = 60_000
#: Rate below which a 1 s bin counts as low-rate, Mbit/s.
LOW_RATE_MBPS = 0.3
#: Bytes per opportunity for the bin rates (traces/index.json ``packet_bytes``).
INDEX_PACKET_BYTES = 1500


@dataclass(frozen=True)
class TraceStats:
    """``gap_p90_ms``, ``gap_p99_ms``: ms (NaN when the window holds < 2 distinct timestamps);
    ``low_rate_share``: fraction in [0, 1]; ``bins``: number of 1 s bins counted."""

    gap_p90_ms: float
    gap_p99_ms: float
    low_rate_share: float
    bins: int


def percentile_linear(sorted_values: Sequence[float], p: float) -> float:
    """Percentile ``p`` (0..100) of ascending ``sorted_values`` with linear interpolation
    between the order statistics at rank ``(n - 1) * p / 100`` (numpy "linear").

    :raises ValueError: on an empty sequence or ``p`` outside 0..100.
    """
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile {p} outside 0..100")
    rank = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


def distinct_gaps_ms(opportunities_ms: Sequence[int], window_ms: int = GAP_WINDOW_MS) -> list[int]:
    """Gaps (ms) between consecutive distinct timestamps among those <= ``window_ms``, in order."""
    gaps: list[int] = []
    prev: int | None = None
    for t in opportunities_ms:
        if t > window_ms:
            break
        if prev is not None and t != prev:
            gaps.append(t - prev)
        prev = t
    return gaps


def bin_rates_mbps(trace: Trace, packet_bytes: int = INDEX_PACKET_BYTES) -> list[float]:
    """Rates (Mbit/s) of the 1 s bins (k s, (k+1) s] of one loop of ``trace`` (timestamp 0 in
    bin 0); a trailing partial bin under 0.5 s is dropped, a longer one scaled by its length."""
    period_ms = trace.period_ms
    nbins = max(1, math.ceil(period_ms / 1000))
    counts = [0] * nbins
    for t in trace.opportunities_ms:
        counts[min(max(0, (t - 1) // 1000), nbins - 1)] += 1
    mbit = packet_bytes * 8 / 1e6
    rates = [c * mbit for c in counts]
    last_s = (period_ms - (nbins - 1) * 1000) / 1000
    if nbins > 1 and last_s < 0.5:
        rates.pop()
    elif last_s < 1.0:
        rates[-1] /= last_s
    return rates


def trace_stats(
    trace: Trace,
    window_ms: int = GAP_WINDOW_MS,
    low_rate_mbps: float = LOW_RATE_MBPS,
    packet_bytes: int = INDEX_PACKET_BYTES,
) -> TraceStats:
    """Gap p90/p99 over the first ``window_ms`` and the share of 1 s bins under ``low_rate_mbps``
    (definitions in the module docstring)."""
    gaps = sorted(distinct_gaps_ms(trace.opportunities_ms, window_ms))
    p90 = percentile_linear(gaps, 90) if gaps else math.nan
    p99 = percentile_linear(gaps, 99) if gaps else math.nan
    rates = bin_rates_mbps(trace, packet_bytes)
    low = sum(1 for r in rates if r < low_rate_mbps)
    return TraceStats(float(p90), float(p99), low / len(rates), len(rates))


def index_fields(s: TraceStats) -> dict[str, float]:
    """The fields stored in traces/index.json: gaps rounded to 0.1 ms, the share to 4 decimals."""
    return {
        "gap_p90_ms": round(s.gap_p90_ms, 1),
        "gap_p99_ms": round(s.gap_p99_ms, 1),
        "low_rate_share": round(s.low_rate_share, 4),
    }


def _find(file: str, dirs: Sequence[Path]) -> Path | None:
    return next((d / file for d in dirs if (d / file).is_file()), None)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (module docstring). Exit 0; 2 on a usage error or an unreadable trace."""
    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.emulator.trace_stats",
                                 description="gap p90/p99 (first 60 s) and share of 1 s bins "
                                             "under 0.3 Mbit/s of Mahimahi traces")
    ap.add_argument("traces", nargs="*", type=Path, help="trace files")
    ap.add_argument("--index", type=Path, help="traces/index.json: take its traces")
    ap.add_argument("--extra-dir", type=Path, action="append", default=[],
                    help="another directory laid out like traces/ (files the index lists "
                         "but the repository does not hold)")
    ap.add_argument("--write", action="store_true", help="store the fields in --index")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args(argv)
    if a.write and not a.index:
        ap.error("--write needs --index")
    rows: dict[str, dict[str, float] | None] = {}
    index = None
    try:
        if a.index:
            index = json.loads(a.index.read_text())
            dirs = [a.index.parent, *a.extra_dir]
            for entry in index["traces"]:
                p = _find(entry["file"], dirs)
                rows[entry["file"]] = index_fields(trace_stats(load_trace(p))) if p else None
        for p in a.traces:
            rows[str(p)] = index_fields(trace_stats(load_trace(p)))
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'trace':64} {'gap p90 ms':>10} {'gap p99 ms':>10} {'low-rate':>8}")
        for name, r in rows.items():
            if r is None:
                print(f"{name:64} {'(not found)':>30}")
            else:
                print(f"{name:64} {r['gap_p90_ms']:>10.1f} {r['gap_p99_ms']:>10.1f} "
                      f"{r['low_rate_share']:>8.4f}")
    if a.write and index is not None:
        for entry in index["traces"]:
            r = rows.get(entry["file"])
            if r is not None:
                entry.update(r)
        a.index.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
