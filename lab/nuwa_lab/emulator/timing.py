"""Timing self-check and host probes for the real-time relay.

* :class:`LatenessHistogram`: lateness = actual release time − scheduled time
  of each opportunity that serves packets, in 10 µs bins (bounded memory).
* :func:`set_timer_slack_ns`: ask Linux for tighter timer wake-ups
  (``prctl(PR_SET_TIMERSLACK)``; best effort).
* :func:`udp_rcvbuf_errors`: host-wide UDP receive-buffer drops
  (``/proc/net/snmp``), the usual cause of loopback loss.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

#: p99 lateness above this (ms) marks a run invalid.
MAX_VALID_P99_LATENESS_MS = 2.0

_PR_SET_TIMERSLACK = 29


class LatenessHistogram:
    """Histogram of lateness values (ms), ``bin_us`` wide bins up to ``max_ms``.

    Values above ``max_ms`` land in an overflow bin; percentiles there report
    the largest value seen. Negative values count as 0.
    """

    def __init__(self, bin_us: int = 10, max_ms: float = 200.0) -> None:
        self._bin_ms = bin_us / 1000.0
        self._nbins = int(max_ms / self._bin_ms) + 1
        self._bins = [0] * (self._nbins + 1)
        self.count = 0
        self.max_ms = 0.0
        self._sum_ms = 0.0

    def add(self, lateness_ms: float) -> None:
        """Record one lateness sample (ms)."""
        x = lateness_ms if lateness_ms > 0.0 else 0.0
        i = int(x / self._bin_ms)
        self._bins[i if i < self._nbins else self._nbins] += 1
        self.count += 1
        self._sum_ms += x
        if x > self.max_ms:
            self.max_ms = x

    def percentile_ms(self, q: float) -> float | None:
        """Upper edge (ms) of the bin holding the q-th percentile; None if empty."""
        if not self.count:
            return None
        rank = max(1, int(q / 100.0 * self.count + 0.999999))
        acc = 0
        for i, n in enumerate(self._bins):
            acc += n
            if acc >= rank:
                if i >= self._nbins:
                    return self.max_ms
                return min(self.max_ms, (i + 1) * self._bin_ms)
        return self.max_ms

    def summary(self) -> dict[str, float | int | None]:
        """``{"p50", "p99", "max", "mean", "count"}`` in ms (None when empty)."""
        p50 = self.percentile_ms(50)
        p99 = self.percentile_ms(99)
        return {
            "p50": None if p50 is None else round(p50, 3),
            "p99": None if p99 is None else round(p99, 3),
            "max": round(self.max_ms, 3) if self.count else None,
            "mean": round(self._sum_ms / self.count, 4) if self.count else None,
            "count": self.count,
        }


def set_timer_slack_ns(slack_ns: int) -> bool:
    """Set this thread's timer slack (Linux); returns False if unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_TIMERSLACK, slack_ns, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def udp_rcvbuf_errors() -> int | None:
    """Host-wide ``Udp: RcvbufErrors`` counter from ``/proc/net/snmp``; None if unavailable."""
    try:
        lines = Path("/proc/net/snmp").read_text().splitlines()
    except OSError:
        return None
    rows = [ln.split() for ln in lines if ln.startswith("Udp:")]
    if len(rows) < 2 or "RcvbufErrors" not in rows[0]:
        return None
    try:
        return int(rows[1][rows[0].index("RcvbufErrors")])
    except (IndexError, ValueError):
        return None


def raise_priority(mode: str = "auto", rt_priority: int = 10, nice: int = -10) -> str:
    """Make wake-ups timely by raising this process's CPU priority (Linux, needs privileges).

    ``mode``: ``"rt"`` (SCHED_FIFO at ``rt_priority``), ``"nice"`` (nice
    ``nice``), ``"auto"`` (rt, else nice, else nothing) or ``"none"``.
    Returns what was applied: ``"SCHED_FIFO:10"``, ``"nice:-10"`` or ``"none"``.
    Never raises for lack of permission. The relay sleeps between events and
    uses a fraction of a core, and the kernel caps real-time tasks at 95% CPU
    (``sched_rt_runtime_us``), so SCHED_FIFO cannot starve the host.
    """
    if mode not in ("auto", "rt", "nice", "none"):
        raise ValueError(f"unknown priority mode {mode!r}")
    if mode in ("auto", "rt"):
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(rt_priority))
            return f"SCHED_FIFO:{rt_priority}"
        except (OSError, AttributeError):
            pass
    if mode in ("auto", "nice"):
        try:
            cur = os.nice(0)
            if cur > nice:
                os.nice(nice - cur)
            return f"nice:{os.nice(0)}"
        except OSError:
            pass
    return "none"


def lower_priority() -> None:
    """Return to the normal scheduler (SCHED_OTHER) after :func:`raise_priority`; best effort."""
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass
