"""The load test's constants, clock and fairness index (:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
BRIDGE_SCRIPT = REPO_ROOT / "e2e" / "src" / "load-controllers.ts"
TICK_INTERVAL_S = 0.005
"""Controller tick period, s (NuwaSession's default tick_interval_ms = 5)."""
BIN_MS = 250
"""Goodput bin, ms."""
JAIN_TARGET = 0.9
LATE_SEGMENT_LIMIT = 0.01
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
