"""Markdown pieces of the report: numbers, tables, queue names."""

from __future__ import annotations

import math

from .metrics import Num

DEEP_MIN_PACKETS = 500
"""A queue of at least this many packets counts as deep; below, shallow."""


def fmt(x: Num, d: int = 0, pct: bool = False) -> str:
    """``x`` with ``d`` decimals (as a percentage when ``pct``); "–" when None or not finite."""
    if x is None or not math.isfinite(x):
        return "–"
    return f"{100 * x:.{d}f}%" if pct else f"{x:.{d}f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """Markdown lines of a table (header, rule, rows, then a blank line)."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def qname(q: int) -> str:
    """``deep queue (N packets)`` or ``shallow queue (N packets)`` (DEEP_MIN_PACKETS)."""
    return f"{'deep' if q >= DEEP_MIN_PACKETS else 'shallow'} queue ({q} packets)"
