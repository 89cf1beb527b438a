"""A fixed-rate FIFO link (the uplink's default), same interface as :class:`TraceLink`.

Each packet is serialized at ``rate_bps``: it departs at
``max(arrival, previous departure) + size_bytes * 8 / rate_bps`` (ms on the
caller's clock). Drop-tail on the packets not yet departed. Pure: no clock,
no I/O.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

from .link import Departure, QueueLimit

T = TypeVar("T")


class RateLink(Generic[T]):
    """Constant-rate serializing link.

    ``rate_bps``: bits per second (> 0, ``ValueError`` otherwise).
    ``limit``: drop-tail bound on packets not yet departed (default 1000 packets).
    """

    def __init__(self, rate_bps: float, limit: QueueLimit | None = None) -> None:
        if not rate_bps > 0:
            raise ValueError(f"rate must be > 0 bit/s, got {rate_bps}")
        self._ms_per_byte = 8000.0 / rate_bps
        self._limit = limit if limit is not None else QueueLimit()
        self._queue: deque[Departure[T]] = deque()
        self._queued_bytes = 0
        self._busy_until_ms = float("-inf")
        self._now_ms = float("-inf")
        self.dropped_packets = 0
        self.departed_packets = 0

    @property
    def now_ms(self) -> float:
        """Latest time seen by :meth:`enqueue` or :meth:`service`."""
        return self._now_ms

    def next_service_ms(self) -> float | None:
        """Departure time of the head packet, or ``None`` when empty."""
        return self._queue[0].departure_ms if self._queue else None

    def enqueue(self, now_ms: float, size_bytes: int, item: T) -> bool:
        """Offer a packet at ``now_ms``; returns False if drop-tail refused it."""
        if size_bytes < 0:
            raise ValueError(f"packet size must be >= 0, got {size_bytes}")
        if now_ms < self._now_ms:
            raise ValueError(f"time went backwards: {now_ms} < {self._now_ms}")
        self._now_ms = now_ms
        if not self._limit.admits(len(self._queue), self._queued_bytes, size_bytes):
            self.dropped_packets += 1
            return False
        start = max(now_ms, self._busy_until_ms)
        self._busy_until_ms = start + size_bytes * self._ms_per_byte
        self._queue.append(Departure(self._busy_until_ms, now_ms, size_bytes, item))
        self._queued_bytes += size_bytes
        return True

    def service(self, now_ms: float) -> list[Departure[T]]:
        """Return, in order, the packets whose departure time is <= ``now_ms``."""
        if now_ms < self._now_ms:
            raise ValueError(f"time went backwards: {now_ms} < {self._now_ms}")
        self._now_ms = now_ms
        out: list[Departure[T]] = []
        q = self._queue
        while q and q[0].departure_ms <= now_ms:
            d = q.popleft()
            self._queued_bytes -= d.size_bytes
            out.append(d)
        self.departed_packets += len(out)
        return out
