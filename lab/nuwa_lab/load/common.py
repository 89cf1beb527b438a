"""The load test's constants, clock and fairness index (:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
BRIDGE_SCRIPT = REPO_ROOT / "e2e" / "src" / "load-controllers.ts"
TICK_INTERVAL_S = 0.005
"""Controller tick period, s (NuwaSession's default tick_interval_ms = 5)."""
BIN_MS = 250
"""Goodput bin, ms."""
JAIN_TARGET = 0.9
LATE_SEGMENT_LIMIT = 0.01
#: A load client whose frames reach its controllers later than this at the median (bridge lag:
#: receive → controller decision → grant, µs) was starved of CPU by the host: the controllers read
#: that lag as queuing delay, so the run measures the lab's CPU, not the controller, and is void.
#: Runs on an unloaded 2-core host: p50 0.5–2.5 ms; the 24 Mbit/s runs that lost a third of the
#: link: 6.0 and 9.3 ms (docs/RELIABILITY.md, ninth session).
MAX_BRIDGE_LAG_P50_US = 4000.0
"""A paced run passes when fewer than this share of segments is late."""


def now_us() -> int:
    """CLOCK_MONOTONIC µs (the server stamps frames on the same clock)."""
    return time.monotonic_ns() // 1000


def jain_index(xs: list[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) of non-negative values (Jain et al. 1984, Eq. 1).

    1 when all are equal, 1/n when one takes everything.

    Raises:
        ValueError: empty input, a negative or non-finite value, or all zero.
    """
    if not xs:
        raise ValueError("jain_index: no values")
    for x in xs:
        if not (x >= 0) or x == float("inf"):
            raise ValueError(f"jain_index: values must be finite and >= 0, got {x}")
    sq = sum(x * x for x in xs)
    if sq == 0:
        raise ValueError("jain_index: all values are zero")
    return sum(xs) ** 2 / (len(xs) * sq)


def instrument_check(bridge_lag_us: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the load clients kept up (see :data:`MAX_BRIDGE_LAG_P50_US`).

    Args:
        bridge_lag_us: one ``{"p50", "p99", "max", "batches"}`` per worker (µs), as the workers
            report it; a worker with no batches (``p50`` None) counts as not keeping up.
    Returns:
        ``{"valid": bool, "bridge_lag_p50_us": worst worker's p50 (None if none),
        "invalid_reasons": [str]}``.
    """
    p50s = [w.get("p50") for w in bridge_lag_us]
    reasons: list[str] = []
    if not p50s:
        reasons.append("no worker reported its bridge lag")
    if any(p is None for p in p50s):
        reasons.append("a worker made no controller decision")
    known = [float(p) for p in p50s if p is not None]
    worst = max(known) if known else None
    if worst is not None and worst > MAX_BRIDGE_LAG_P50_US:
        reasons.append(
            f"bridge lag p50 {worst / 1000:.1f} ms > {MAX_BRIDGE_LAG_P50_US / 1000:.1f} ms: "
            "the load clients were starved of CPU"
        )
    return {"valid": not reasons, "bridge_lag_p50_us": worst, "invalid_reasons": reasons}
