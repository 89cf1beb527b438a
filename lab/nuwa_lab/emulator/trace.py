"""Mahimahi link traces: parsing and the looped delivery-opportunity schedule.

Format (mahimahi ``mm-link``): one non-negative integer per line, the
millisecond offset of one delivery opportunity of ``PACKET_SIZE_BYTES`` bytes.
A timestamp repeats once per opportunity in that millisecond. Lines must be
non-decreasing. The schedule repeats with a period equal to the last
timestamp (mahimahi ``link_queue.cc``: ``base_timestamp_ += schedule_.back()``
on wraparound), so the opportunities at offset 0 of the next loop coincide in
time with those at the last timestamp of this loop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Bytes per delivery opportunity (mahimahi ``PACKET_SIZE``, the TUN payload limit).
PACKET_SIZE_BYTES = 1504


class TraceError(ValueError):
    """A trace file is missing, empty or malformed; the message says where."""


@dataclass(frozen=True)
class Trace:
    """A parsed Mahimahi trace.

    ``opportunities_ms``: non-decreasing integer ms offsets, one per opportunity.
    ``period_ms``: loop period, the last timestamp (> 0).
    ``name``: where it came from (a path or ``"<inline>"``), for messages and logs.
    """

    opportunities_ms: tuple[int, ...]
    period_ms: int
    name: str = "<inline>"

    @property
    def opportunities_per_period(self) -> int:
        """Number of opportunities in one loop of the file."""
        return len(self.opportunities_ms)

    @property
    def mean_rate_bps(self) -> float:
        """Mean capacity over one loop, bits per second (1504-byte opportunities)."""
        return len(self.opportunities_ms) * PACKET_SIZE_BYTES * 8 * 1000.0 / self.period_ms

    def iter_opportunities_ms(self, start_index: int = 0) -> Iterator[int]:
        """Yield opportunity times (ms from trace start, looped forever), from index 0 of loop 0."""
        n = len(self.opportunities_ms)
        i = start_index
        while True:
            loop, j = divmod(i, n)
            yield loop * self.period_ms + self.opportunities_ms[j]
            i += 1

    def opportunities_between_ms(self, start_ms: int, end_ms: int) -> list[int]:
        """All looped opportunity times t with ``start_ms <= t < end_ms``, in order."""
        if end_ms <= start_ms:
            return []
        out: list[int] = []
        loop = max(0, start_ms // self.period_ms - 1)
        while loop * self.period_ms < end_ms:
            base = loop * self.period_ms
            for t in self.opportunities_ms:
                x = base + t
                if x >= end_ms:
                    break
                if x >= start_ms:
                    out.append(x)
            loop += 1
        return out


def parse_trace(lines: Iterable[str], name: str = "<inline>") -> Trace:
    """Parse Mahimahi trace lines into a :class:`Trace`.

    Blank lines are ignored. Raises :class:`TraceError` on a non-integer or
    negative value, a decreasing timestamp, an empty trace, or a trace whose
    last timestamp is 0 (zero period: it could never loop).
    """
    values: list[int] = []
    prev = 0
    for lineno, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s:
            continue
        try:
            v = int(s)
        except ValueError:
            raise TraceError(
                f"{name}:{lineno}: malformed line {s[:40]!r}: expected an integer ms timestamp"
            ) from None
        if v < 0:
            raise TraceError(f"{name}:{lineno}: negative timestamp {v}")
        if v < prev:
            raise TraceError(f"{name}:{lineno}: timestamp {v} is smaller than previous {prev}")
        prev = v
        values.append(v)
    if not values:
        raise TraceError(f"{name}: empty trace (no delivery opportunities)")
    if values[-1] <= 0:
        raise TraceError(f"{name}: last timestamp must be > 0 (it is the loop period)")
    return Trace(tuple(values), values[-1], name)


def load_trace(path: str | Path) -> Trace:
    """Read and parse a Mahimahi trace file. Raises :class:`TraceError` if missing or invalid."""
    p = Path(path)
    try:
        with p.open() as f:
            return parse_trace(f, str(p))
    except FileNotFoundError:
        raise TraceError(f"{p}: trace file not found") from None
    except IsADirectoryError:
        raise TraceError(f"{p}: is a directory, not a trace file") from None
    except UnicodeDecodeError:
        raise TraceError(f"{p}: not a text trace file") from None


def constant_rate_trace(rate_bps: float, period_ms: int = 1000) -> Trace:
    """A Mahimahi trace of constant capacity ``rate_bps`` (bits/s), ``period_ms`` long.

    Opportunity k (k = 1, 2, ...) is placed at the first integer ms m with
    ``m * rate_bps / 8000 >= k * 1504`` (the traces/README.md conversion rule),
    and one opportunity is appended at ``period_ms`` if needed so the period is
    exact (so a very low rate still gets one opportunity per period).
    Raises :class:`TraceError` if ``rate_bps`` or ``period_ms`` is not positive.
    """
    if rate_bps <= 0 or period_ms <= 0:
        raise TraceError("constant_rate_trace: rate_bps and period_ms must be > 0")
    bytes_per_ms = rate_bps / 8000.0
    total = int(period_ms * bytes_per_ms / PACKET_SIZE_BYTES + 1e-9)
    out = [
        max(1, math.ceil(k * PACKET_SIZE_BYTES / bytes_per_ms - 1e-9)) for k in range(1, total + 1)
    ]
    if not out or out[-1] < period_ms:
        out.append(period_ms)
    return Trace(tuple(out), period_ms, f"<constant {rate_bps:g} bps>")
