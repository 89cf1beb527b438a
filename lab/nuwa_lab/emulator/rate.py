"""A fixed-delay, fixed-rate FIFO link (the uplink's default), interface like ``TraceLink``.

A packet offered at ``now`` reaches the queue at ``arrival = now + delay_ms``
and departs at ``max(arrival, previous departure) + size_bytes * 8 / rate_bps``
(ms on the caller's clock). Drop-tail counts the packets that, at the new
packet's arrival, are queued or being serialized. Folding the propagation
delay in lets a caller compute the departure once, at offer time. Pure: no
clock, no I/O.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

from .link import Departure, QueueLimit

T = TypeVar("T")


class RateLink(Generic[T]):
    """Constant-rate serializing link behind a fixed delay.

    ``rate_bps``: bits per second (> 0). ``limit``: drop-tail bound (default
    1000 packets). ``delay_ms``: propagation delay before the queue (>= 0).
    ``ValueError`` on a bad argument.
    """

    def __init__(
        self, rate_bps: float, limit: QueueLimit | None = None, delay_ms: float = 0.0
    ) -> None:
        if not rate_bps > 0:
            raise ValueError(f"rate must be > 0 bit/s, got {rate_bps}")
        if not delay_ms >= 0:
            raise ValueError(f"delay must be >= 0 ms, got {delay_ms}")
        self._delay_ms = delay_ms
        self._last_arrival_ms = float("-inf")
        self._ms_per_byte = 8000.0 / rate_bps
        self._limit = limit if limit is not None else QueueLimit()
        self._queue: deque[Departure[T]] = deque()
        self._queued_bytes = 0
        self._busy_until_ms = float("-inf")
        self._now_ms = float("-inf")
        self.dropped_packets = 0
        self.departed_packets = 0

    def next_service_ms(self) -> float | None:
        """Departure time of the head packet, or ``None`` when empty."""
        return self._queue[0].departure_ms if self._queue else None

    def enqueue(self, now_ms: float, size_bytes: int, item: T) -> bool:
        """Offer a packet at ``now_ms`` (it reaches the queue ``delay_ms`` later); returns
        False if drop-tail refused it. Offer times must not decrease (``ValueError``).
        """
        if size_bytes < 0:
            raise ValueError(f"packet size must be >= 0, got {size_bytes}")
        arrival = now_ms + self._delay_ms
        if arrival < self._last_arrival_ms:
            raise ValueError(f"time went backwards: {now_ms}")
        self._last_arrival_ms = arrival
        q = self._queue
        if not self._limit.admits(len(q), self._queued_bytes, size_bytes):
            # count only what is still queued when this packet arrives
            waiting = [d for d in q if d.departure_ms > arrival]
            if not self._limit.admits(len(waiting), sum(d.size_bytes for d in waiting), size_bytes):
                self.dropped_packets += 1
                return False
        start = max(arrival, self._busy_until_ms)
        self._busy_until_ms = start + size_bytes * self._ms_per_byte
        q.append(Departure(self._busy_until_ms, arrival, size_bytes, item))
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
