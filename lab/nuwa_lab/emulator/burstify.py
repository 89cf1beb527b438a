"""Burst variants of Mahimahi traces: the same delivery opportunities regrouped into bursts.

Issue 14 asks to stress the controller with traces as bursty as the worst real ones, which
public packet-level sets rarely contain (traces/README.md, "Burst variants"). A variant keeps
a trace's bytes and loop period and only moves each opportunity later, to the end of its
burst period:

1. Burst boundaries ``0 = b_0 < b_1 < ... < b_n = P`` (``P``: the trace's period, its last
   timestamp) are drawn with a ``random.Random(seed)``: each gap ``b_i - b_{i-1}`` is a uniform
   integer in ``[gap_min_ms, gap_max_ms]``. While more than ``gap_max_ms`` remains, the draw
   is capped at ``remaining - gap_min_ms`` so that the last gap is in range too (needs
   ``gap_max_ms >= 2 * gap_min_ms`` and ``P >= gap_min_ms``).
2. Every opportunity with timestamp ``t`` in ``(b_{i-1}, b_i]`` (``[0, b_1]`` for the first)
   is delivered at ``b_i``. The count per burst period is conserved, no opportunity moves
   earlier (capacity is never granted before the recording had it), none moves later than
   ``gap_max_ms``, and the last timestamp stays ``P`` (the file's last opportunity is at
   ``P``), so the loop period and the mean rate are unchanged.

Consecutive distinct timestamps of a variant are therefore ``gap_min_ms``..``gap_max_ms``
apart, except across burst periods that held no opportunity (outages of the recording),
where the gap is the sum of the empty periods' gaps.

CLI: ``python -m nuwa_lab.emulator.burstify TRACE OUT [--gap-ms 20..100] [--seed 1]``
writes ``OUT`` and prints the gap statistics of both (:mod:`.trace_stats`).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from .trace import Trace, TraceError, load_trace
from .trace_stats import trace_stats

#: Default burst gap range, ms (issue 14: "gaps of 20-100 ms").
DEFAULT_GAP_MIN_MS = 20
DEFAULT_GAP_MAX_MS = 100


def burst_ends_ms(period_ms: int, gap_min_ms: int, gap_max_ms: int, seed: int) -> list[int]:
    """Burst instants ``b_1 < ... < b_n = period_ms`` (step 1 of the module docstring), ms.

    :raises ValueError: if ``gap_min_ms < 1``, ``gap_max_ms < 2 * gap_min_ms`` or
        ``period_ms < gap_min_ms``.
    """
    if gap_min_ms < 1 or gap_max_ms < 2 * gap_min_ms:
        raise ValueError(f"burst gaps {gap_min_ms}..{gap_max_ms} ms: need 1 <= min and "
                         "max >= 2 x min (so that the last gap can be kept in range)")
    if period_ms < gap_min_ms:
        raise ValueError(f"trace period {period_ms} ms is shorter than the minimum gap "
                         f"{gap_min_ms} ms")
    rng = random.Random(seed)
    ends: list[int] = []
    t = 0
    while period_ms - t > gap_max_ms:
        t += rng.randint(gap_min_ms, min(gap_max_ms, period_ms - t - gap_min_ms))
        ends.append(t)
    ends.append(period_ms)
    return ends


def burstify(trace: Trace, gap_min_ms: int = DEFAULT_GAP_MIN_MS,
             gap_max_ms: int = DEFAULT_GAP_MAX_MS, seed: int = 1) -> list[int]:
    """Timestamps (ms, non-decreasing, one per opportunity, as many as ``trace`` has) of the
    burst variant of ``trace`` (module docstring). Deterministic for a seed.

    :raises ValueError: as :func:`burst_ends_ms`.
    """
    ends = burst_ends_ms(trace.period_ms, gap_min_ms, gap_max_ms, seed)
    out: list[int] = []
    i = 0
    for t in trace.opportunities_ms:  # non-decreasing; the last is period_ms == ends[-1]
        while t > ends[i]:
            i += 1
        out.append(ends[i])
    return out


def _gap_range(s: str) -> tuple[int, int]:
    lo, sep, hi = s.partition("..")
    try:
        if not sep:
            raise ValueError
        return int(lo), int(hi)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN..MAX in ms, e.g. 20..100 (got {s!r})") from None


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (module docstring). Exit 0; 2 on a usage error or an unreadable trace."""
    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.emulator.burstify",
                                 description="regroup a Mahimahi trace's delivery opportunities "
                                             "into seeded bursts (bytes and period conserved)")
    ap.add_argument("trace", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--gap-ms", type=_gap_range,
                    default=(DEFAULT_GAP_MIN_MS, DEFAULT_GAP_MAX_MS),
                    help="burst gap range MIN..MAX, ms (default 20..100)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    try:
        src = load_trace(a.trace)
        ts = burstify(src, a.gap_ms[0], a.gap_ms[1], a.seed)
    except (TraceError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(f"{t}\n" for t in ts))
    out = load_trace(a.out)
    for name, tr in (("source", src), ("burst", out)):
        s = trace_stats(tr)
        print(f"{name}: {len(tr.opportunities_ms)} opportunities, period {tr.period_ms} ms, "
              f"gap p90/p99 {s.gap_p90_ms:.1f}/{s.gap_p99_ms:.1f} ms, "
              f"low-rate share {s.low_rate_share:.4f}")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
