"""Fixed propagation delay (mahimahi ``mm-delay``): a FIFO released ``delay_ms`` after entry.

Pure: times are ms on the caller's clock and must not decrease.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class DelayLine(Generic[T]):
    """Holds items for exactly ``delay_ms`` (>= 0, ``ValueError`` otherwise)."""

    def __init__(self, delay_ms: float) -> None:
        if not delay_ms >= 0:
            raise ValueError(f"delay must be >= 0 ms, got {delay_ms}")
        self.delay_ms = delay_ms
        self._items: deque[tuple[float, T]] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def push(self, now_ms: float, item: T) -> None:
        """Add ``item`` entering at ``now_ms``; it is due at ``now_ms + delay_ms``."""
        self._items.append((now_ms + self.delay_ms, item))

    def next_ms(self) -> float | None:
        """Release time of the oldest item, or ``None`` when empty."""
        return self._items[0][0] if self._items else None

    def pop_due(self, now_ms: float) -> list[tuple[float, T]]:
        """Remove and return ``(release_ms, item)`` for every item due at or before ``now_ms``."""
        out: list[tuple[float, T]] = []
        q = self._items
        while q and q[0][0] <= now_ms:
            out.append(q.popleft())
        return out
