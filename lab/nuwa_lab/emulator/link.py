"""The trace-driven bottleneck: a pure, clock-free model of mahimahi's ``LinkQueue``.

Semantics follow mahimahi ``src/frontend/link_queue.cc`` (``rationalize``):

* Each trace line is one delivery opportunity of ``PACKET_SIZE_BYTES`` (1504)
  bytes at that ms offset; the schedule loops with period = last timestamp.
* Before a packet is enqueued at time ``now``, every opportunity at or before
  ``now`` is processed first, so a packet never uses an opportunity at or
  before its arrival time (queuing delay >= 1 ms in integer log time).
* At an opportunity, head-of-line bytes are served: a packet bigger than what
  is left of the opportunity uses it up and carries its remaining bytes into
  later opportunities (mahimahi caps packets at 1504 bytes; this model lets a
  bigger packet span several opportunities); a packet that completes leaves at
  the opportunity time and the surplus goes to the next queued packet; with
  nothing queued the rest of the opportunity is wasted.
* Drop-tail: a packet is refused if, with it, the queue (the packet in
  transit excluded, as in mahimahi's ``DroptailPacketQueue``) would exceed the
  packet or byte limit. Optional random loss (like ``mm-loss``) is applied at
  arrival, before the drop-tail check.

Times are floats in milliseconds on the caller's clock ("link time");
opportunity times are integers (trace offset + loop * period). The class does
no I/O and reads no clock: tests drive it with a simulated clock.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .trace import PACKET_SIZE_BYTES, Trace

T = TypeVar("T")


@dataclass(frozen=True)
class QueueLimit:
    """Drop-tail bound: at most ``packets`` queued packets and/or ``bytes_`` queued bytes.

    ``None`` means unbounded in that dimension. Raises ``ValueError`` on a
    negative limit.
    """

    packets: int | None = 1000
    bytes_: int | None = None

    def __post_init__(self) -> None:
        if self.packets is not None and self.packets < 0:
            raise ValueError(f"queue packet limit must be >= 0, got {self.packets}")
        if self.bytes_ is not None and self.bytes_ < 0:
            raise ValueError(f"queue byte limit must be >= 0, got {self.bytes_}")

    def admits(self, queued_packets: int, queued_bytes: int, size_bytes: int) -> bool:
        """True if a packet of ``size_bytes`` may join a queue holding the given amounts."""
        if self.packets is not None and queued_packets + 1 > self.packets:
            return False
        return not (self.bytes_ is not None and queued_bytes + size_bytes > self.bytes_)

    def describe(self) -> str:
        """Mahimahi-style description, e.g. ``droptail [packets=1000]``."""
        parts = []
        if self.packets is not None:
            parts.append(f"packets={self.packets}")
        if self.bytes_ is not None:
            parts.append(f"bytes={self.bytes_}")
        return f"droptail [{', '.join(parts)}]" if parts else "infinite"


@dataclass(frozen=True, slots=True)
class Departure(Generic[T]):
    """A packet leaving a link.

    ``departure_ms``: scheduled departure (for a trace link, the integer time of
    the opportunity that carried its last byte). ``arrival_ms``: when it was
    enqueued. ``size_bytes``: its size. ``item``: the caller's payload.
    """

    departure_ms: float
    arrival_ms: float
    size_bytes: int
    item: T


class LinkRecorder(Protocol):
    """Receives every link event, in time order (e.g. a Mahimahi log writer)."""

    def arrival(self, t_ms: float, size_bytes: int) -> None: ...

    def drop(self, t_ms: float, size_bytes: int) -> None: ...

    def opportunity(self, t_ms: int) -> None: ...

    def departure(self, t_ms: int, size_bytes: int, arrival_ms: float) -> None: ...


@dataclass
class LinkCounters:
    """Running totals of a link. Bytes are packet sizes; opportunities are 1504 bytes each.

    ``backlogged_opportunities``: opportunities at which some byte was waiting
    (queued or in transit); ``served_bytes``: bytes those opportunities carried.
    """

    arrived_packets: int = 0
    arrived_bytes: int = 0
    dropped_packets: int = 0
    dropped_bytes: int = 0
    random_losses: int = 0
    departed_packets: int = 0
    departed_bytes: int = 0
    opportunities: int = 0
    backlogged_opportunities: int = 0
    served_bytes: int = 0


@dataclass(slots=True)
class _Queued(Generic[T]):
    arrival_ms: float
    size_bytes: int
    item: T


class TraceLink(Generic[T]):
    """Mahimahi trace-driven link queue under a caller-supplied clock.

    ``trace``: the opportunity schedule, its time 0 at link time 0.
    ``limit``: drop-tail bound (default 1000 packets, ``QueueLimit(None, None)``
    for unbounded). ``recorder``: optional event sink. ``loss_rate`` in [0, 1)
    with ``rng`` (a seeded ``random.Random``) for random loss.

    Time passed to :meth:`enqueue` and :meth:`service` must never decrease
    (``ValueError`` otherwise).
    """

    def __init__(
        self,
        trace: Trace,
        limit: QueueLimit | None = None,
        recorder: LinkRecorder | None = None,
        loss_rate: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        if not 0.0 <= loss_rate < 1.0:
            raise ValueError(f"loss rate must be in [0, 1), got {loss_rate}")
        self._sched = trace.opportunities_ms
        self._period_ms = trace.period_ms
        self._idx = 0
        self._loop_base_ms = 0
        self._limit = limit if limit is not None else QueueLimit()
        self._recorder = recorder
        self._loss_rate = loss_rate
        self._rng = rng if rng is not None else random.Random(0)
        self._queue: deque[_Queued[T]] = deque()
        self._queued_bytes = 0
        self._transit: _Queued[T] | None = None
        self._transit_left_bytes = 0
        self._now_ms = float("-inf")
        self._pending: list[Departure[T]] = []
        self.counters = LinkCounters()

    @property
    def now_ms(self) -> float:
        """Latest time the link has been advanced to (``-inf`` before the first call)."""
        return self._now_ms

    @property
    def queued_packets(self) -> int:
        """Packets waiting in the queue (the one in transit excluded)."""
        return len(self._queue)

    @property
    def queued_bytes(self) -> int:
        """Bytes of the packets waiting in the queue (the one in transit excluded)."""
        return self._queued_bytes

    @property
    def backlog_bytes(self) -> int:
        """Bytes still to be served: queued plus what is left of the packet in transit."""
        return self._queued_bytes + self._transit_left_bytes

    def next_opportunity_ms(self) -> int:
        """Time of the next unprocessed opportunity (integer link ms)."""
        return self._loop_base_ms + self._sched[self._idx]

    def first_opportunity_after_ms(self, t_ms: float) -> int:
        """Time of the first opportunity strictly after ``t_ms`` (``t_ms`` >= :attr:`now_ms`).

        A packet enqueued at ``t_ms`` into an empty link leaves at this time at
        the earliest.
        """
        base = self._loop_base_ms
        if t_ms >= base:
            base += math.floor((t_ms - base) / self._period_ms) * self._period_ms
        j = bisect.bisect_right(self._sched, t_ms - base)
        if j == len(self._sched):
            base += self._period_ms
            j = bisect.bisect_right(self._sched, t_ms - base)
        return base + self._sched[j]

    def next_service_ms(self) -> int | None:
        """Next opportunity that would carry bytes, or ``None`` when nothing is waiting."""
        if self._transit is None and not self._queue:
            return None
        return self._loop_base_ms + self._sched[self._idx]

    def enqueue(self, now_ms: float, size_bytes: int, item: T) -> bool:
        """Offer a packet arriving at ``now_ms``; returns False if it was dropped.

        Opportunities at or before ``now_ms`` are processed first (their
        departures are returned by the next :meth:`service`). Raises
        ``ValueError`` if ``size_bytes`` < 0 or time went backwards.
        """
        if size_bytes < 0:
            raise ValueError(f"packet size must be >= 0, got {size_bytes}")
        self._advance(now_ms)
        c = self.counters
        c.arrived_packets += 1
        c.arrived_bytes += size_bytes
        rec = self._recorder
        if rec is not None:
            rec.arrival(now_ms, size_bytes)
        lost = self._loss_rate > 0.0 and self._rng.random() < self._loss_rate
        if lost or not self._limit.admits(len(self._queue), self._queued_bytes, size_bytes):
            c.dropped_packets += 1
            c.dropped_bytes += size_bytes
            c.random_losses += int(lost)
            if rec is not None:
                rec.drop(now_ms, size_bytes)
            return False
        self._queue.append(_Queued(now_ms, size_bytes, item))
        self._queued_bytes += size_bytes
        return True

    def service(self, now_ms: float) -> list[Departure[T]]:
        """Process every opportunity at or before ``now_ms``; return the departures since
        the previous call, in order (each with its scheduled ``departure_ms`` <= ``now_ms``).
        """
        self._advance(now_ms)
        out = self._pending
        self._pending = []
        return out

    def _advance(self, now_ms: float) -> None:
        if now_ms < self._now_ms:
            raise ValueError(f"time went backwards: {now_ms} < {self._now_ms}")
        self._now_ms = now_ms
        sched = self._sched
        n = len(sched)
        t = self._loop_base_ms + sched[self._idx]
        if t > now_ms:
            return
        rec = self._recorder
        c = self.counters
        queue = self._queue
        pending = self._pending
        while t <= now_ms:
            self._idx += 1
            if self._idx == n:
                self._idx = 0
                self._loop_base_ms += self._period_ms
            c.opportunities += 1
            if rec is not None:
                rec.opportunity(t)
            if self._transit is not None or queue:
                c.backlogged_opportunities += 1
                left = PACKET_SIZE_BYTES
                while left > 0:
                    pkt = self._transit
                    if pkt is None:
                        if not queue:
                            break
                        pkt = queue.popleft()
                        self._queued_bytes -= pkt.size_bytes
                        self._transit = pkt
                        self._transit_left_bytes = pkt.size_bytes
                    amount = min(left, self._transit_left_bytes)
                    self._transit_left_bytes -= amount
                    left -= amount
                    if self._transit_left_bytes == 0:
                        self._transit = None
                        c.departed_packets += 1
                        c.departed_bytes += pkt.size_bytes
                        pending.append(Departure(t, pkt.arrival_ms, pkt.size_bytes, pkt.item))
                        if rec is not None:
                            rec.departure(t, pkt.size_bytes, pkt.arrival_ms)
                c.served_bytes += PACKET_SIZE_BYTES - left
            t = self._loop_base_ms + sched[self._idx]
