"""Kernel receive timestamps (``SO_TIMESTAMPNS``) mapped onto the relay's link clock.

With them a datagram's arrival time is when the kernel queued it, not when
the relay got round to reading it, so the relay may leave packets in the
socket buffer while it sleeps towards a timed event (fewer wake-ups, same
arrival times). The kernel stamps CLOCK_REALTIME; :class:`RxClock` converts
to CLOCK_MONOTONIC ms with an offset re-measured every second, and falls
back to the read time for any stamp that is missing or implausible (e.g. a
wall-clock step).
"""

from __future__ import annotations

import socket
import struct
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@ll")
#: ancillary buffer size for one timespec control message
ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size)


def enable_rx_timestamps(sock: socket.socket) -> bool:
    """Turn on ``SO_TIMESTAMPNS`` for ``sock``; False if the OS refuses."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return True
    except OSError:
        return False


class RxClock:
    """Converts kernel CLOCK_REALTIME stamps (ns) to link ms (monotonic ms − ``t0_ms``)."""

    def __init__(self, t0_ms: int) -> None:
        self._t0_ns = t0_ms * 1_000_000
        self._offset_ns = 0
        self._refreshed_ms = float("-inf")
        self.fallbacks = 0
        self.refresh()

    def refresh(self) -> None:
        """Re-measure realtime − monotonic (best of 3 bracketed samples)."""
        best = None
        for _ in range(3):
            m1 = time.monotonic_ns()
            r = time.time_ns()
            m2 = time.monotonic_ns()
            if best is None or m2 - m1 < best[0]:
                best = (m2 - m1, r - (m1 + m2) // 2)
        assert best is not None
        self._offset_ns = best[1]

    def maybe_refresh(self, now_ms: float) -> None:
        """Refresh the offset if the last one is more than 1 s old."""
        if now_ms - self._refreshed_ms > 1000.0:
            self.refresh()
            self._refreshed_ms = now_ms

    def arrival_ms(self, ancdata: list[tuple[int, int, bytes]], read_ms: float) -> float:
        """Link-ms arrival time from ``recvmsg`` ancillary data; ``read_ms`` if unusable.

        ``read_ms`` is the clock read just before reading the socket. A stamp
        more than 1 s before it or 100 ms after it (a wall-clock step) is
        treated as unusable (counted in :attr:`fallbacks`).
        """
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = _TIMESPEC.unpack_from(data)
                t = (sec * 1_000_000_000 + nsec - self._offset_ns - self._t0_ns) / 1e6
                # a stamp after `read_ms` is a datagram that came in while we were reading
                if read_ms - 1000.0 <= t <= read_ms + 100.0:
                    return t
                break
        self.fallbacks += 1
        return read_ms
