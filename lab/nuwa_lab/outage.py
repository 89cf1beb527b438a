"""Recovery after a link outage, from the emulator's log alone (issue 7, item 4).

The outage is the longest gap between consecutive delivery opportunities in
the log (at least ``min_gap_ms``). From the first opportunity after it
(``outage_end_ms``), the log is cut into ``bin_ms`` bins; a bin's
utilization is the bytes that left the queue in it over the trace capacity
offered in it (1504 bytes per opportunity, mahimahi's PACKET_SIZE). The
figure of merit is ``time_to_80pct_s``: the end of the first bin whose
utilization is at least 0.8, counted from ``outage_end_ms`` (None if no bin
in the log reaches it). Drops and queuing delay after the outage tell
whether the restart overflowed the queue.

CLI: ``python -m nuwa_lab.outage --log run/emulator.log [--bin-ms 250]
[--min-gap-ms 5000] [--after-s 10]`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from pathlib import Path
from typing import Any

from .emulator.analysis import parse_log

OPPORTUNITY_BYTES = 1504
"""Bytes per delivery opportunity (mahimahi link_queue.cc PACKET_SIZE)."""


def outage_recovery(
    log_path: str | Path, bin_ms: int = 250, min_gap_ms: int = 5000, after_s: float = 10.0
) -> dict[str, Any]:
    """Per-bin utilization after the longest outage in an emulator log.

    Returns ``outage_start_ms``/``outage_end_ms`` (ms after the log's T0; start
    = last opportunity before the gap), ``outage_s``, ``bins`` (list of
    ``{"t_s": bin start after the outage end, "utilization", "capacity_bytes",
    "delivered_bytes"}`` for ``after_s`` seconds), ``time_to_80pct_s``,
    ``utilization_first_3s`` (bytes over capacity in the first 3 s),
    ``drops_after`` (packets dropped in the ``after_s`` window), and
    ``queuing_delay_max_ms_after`` (largest logged delay of a departure in it).

    Raises:
        ValueError: a malformed log, ``bin_ms``/``min_gap_ms``/``after_s`` not
            positive, or no gap of at least ``min_gap_ms`` between opportunities.
    """
    if bin_ms <= 0 or min_gap_ms <= 0 or not after_s > 0:
        raise ValueError("outage_recovery: bin_ms, min_gap_ms and after_s must be > 0")
    log = parse_log(log_path)
    opp = log.opportunities
    best = (0, -1)
    for i in range(1, len(opp)):
        gap = opp[i] - opp[i - 1]
        if gap > best[0]:
            best = (gap, i)
    if best[0] < min_gap_ms:
        raise ValueError(
            f"{log_path}: no outage: longest gap between opportunities is {best[0]} ms "
            f"(< {min_gap_ms} ms)"
        )
    start_ms, end_ms = opp[best[1] - 1], opp[best[1]]
    horizon_ms = end_ms + int(after_s * 1000)
    dep_t = [d[0] for d in log.departures]
    bins: list[dict[str, Any]] = []
    t80: float | None = None
    for b0 in range(end_ms, horizon_ms, bin_ms):
        b1 = b0 + bin_ms
        cap = (bisect.bisect_left(opp, b1) - bisect.bisect_left(opp, b0)) * OPPORTUNITY_BYTES
        i, j = bisect.bisect_left(dep_t, b0), bisect.bisect_left(dep_t, b1)
        delivered = sum(d[1] for d in log.departures[i:j])
        util = delivered / cap if cap else None
        bins.append({"t_s": (b0 - end_ms) / 1000, "utilization": util,
                     "capacity_bytes": cap, "delivered_bytes": delivered})
        if t80 is None and util is not None and util >= 0.8:
            t80 = (b1 - end_ms) / 1000
    first3 = [b for b in bins if b["t_s"] < 3.0]
    cap3 = sum(b["capacity_bytes"] for b in first3)
    i, j = bisect.bisect_left(dep_t, end_ms), bisect.bisect_left(dep_t, horizon_ms)
    delays = [d[2] for d in log.departures[i:j] if d[2] is not None]
    return {
        "outage_start_ms": start_ms,
        "outage_end_ms": end_ms,
        "outage_s": (end_ms - start_ms) / 1000,
        "bin_ms": bin_ms,
        "bins": bins,
        "time_to_80pct_s": t80,
        "utilization_first_3s": sum(b["delivered_bytes"] for b in first3) / cap3 if cap3 else None,
        "drops_after": sum(1 for t, _ in log.drops if end_ms <= t < horizon_ms),
        "drops_during": sum(1 for t, _ in log.drops if start_ms <= t < end_ms),
        "queuing_delay_max_ms_after": max(delays, default=None),
    }


def main(argv: list[str] | None = None) -> int:
    """CLI (module doc); exit 2 with a message on a bad log or no outage."""
    p = argparse.ArgumentParser(
        prog="python -m nuwa_lab.outage", description=__doc__.split("\n")[0]
    )
    p.add_argument("--log", required=True, help="emulator log (mm-link format)")
    p.add_argument("--bin-ms", type=int, default=250, help="bin, ms (default 250)")
    p.add_argument("--min-gap-ms", type=int, default=5000, help="shortest gap that is an outage")
    p.add_argument("--after-s", type=float, default=10.0, help="seconds after the outage to bin")
    a = p.parse_args(argv)
    try:
        r = outage_recovery(a.log, a.bin_ms, a.min_gap_ms, a.after_s)
    except (OSError, ValueError) as e:
        print(f"outage: {e}", file=sys.stderr)
        return 2
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
