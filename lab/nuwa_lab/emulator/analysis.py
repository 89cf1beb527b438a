"""Metrics computed from a mahimahi-format link log alone (the emulator's ground truth).

Nothing here trusts the emulator's own counters: per-packet delays come from
FIFO-matching ``+`` (accepted) and ``-`` lines, and per-opportunity service is
recomputed by replaying the logged arrivals against the logged opportunities
with mahimahi's rule (:mod:`.link`), which also checks the logged departures.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .trace import PACKET_SIZE_BYTES, Trace, load_trace


class PacketRecord(NamedTuple):
    """One packet that crossed the queue: times are integer ms after T0."""

    arrival_ms: int
    departure_ms: int
    delay_ms: int
    size_bytes: int


@dataclass
class ParsedLog:
    """A log's events. ``arrivals`` holds accepted packets only; a dropped packet's
    ``+`` line is moved to ``drops`` (and counted in ``all_arrivals``).
    ``departures`` entries are ``(t, size, logged_delay or None)``.
    """

    base_timestamp_ms: int | None = None
    arrivals: list[tuple[int, int]] = field(default_factory=list)
    all_arrivals: list[tuple[int, int]] = field(default_factory=list)
    drops: list[tuple[int, int]] = field(default_factory=list)
    opportunities: list[int] = field(default_factory=list)
    departures: list[tuple[int, int, int | None]] = field(default_factory=list)
    unmatched_drops: int = 0


def parse_log(path: str | Path) -> ParsedLog:
    """Parse a mahimahi ``mm-link`` log. Raises ``ValueError`` on a malformed event line.

    A trailing line without a newline (a log still being written) is ignored.
    A ``d`` line cancels the latest accepted arrival of the same time and size
    (mahimahi writes ``+`` then ``d`` for a refused packet); a ``d`` line with no
    such arrival is counted in ``unmatched_drops`` (a logger that writes only ``d``).
    """
    out = ParsedLog()
    arrivals = out.arrivals
    with Path(path).open() as f:
        for lineno, line in enumerate(f, start=1):
            if not line.endswith("\n"):
                break
            if line.startswith("#"):
                if line.startswith("# base timestamp:"):
                    out.base_timestamp_ms = int(float(line.split(":", 1)[1]))
                continue
            p = line.split()
            if not p:
                continue
            try:
                t = int(float(p[0]))
                kind = p[1]
                if kind == "#":
                    out.opportunities.append(t)
                elif kind == "+":
                    arrivals.append((t, int(p[2])))
                    out.all_arrivals.append((t, int(p[2])))
                elif kind == "-":
                    out.departures.append((t, int(p[2]), int(float(p[3])) if len(p) > 3 else None))
                elif kind == "d":
                    ev = (t, int(p[2]))
                    out.drops.append(ev)
                    if arrivals and arrivals[-1] == ev:
                        arrivals.pop()
                    else:
                        out.unmatched_drops += 1
                else:
                    raise ValueError(f"unknown event {kind!r}")
            except (IndexError, ValueError) as e:
                raise ValueError(
                    f"{path}:{lineno}: malformed log line {line.strip()!r}: {e}"
                ) from None
    return out


def packet_records(path: str | Path) -> list[PacketRecord]:
    """Per departed packet, FIFO-matched: ``(arrival_ms, departure_ms, delay_ms, size_bytes)``.

    Dropped packets are excluded; packets still queued when the log ends are
    missing. Times are integer ms after the log's base timestamp.
    """
    return _match(parse_log(path))


def packet_delays(path: str | Path) -> list[tuple[int, int, int]]:
    """Per departed packet: ``(arrival_ms, departure_ms, delay_ms)``; see :func:`packet_records`."""
    return [(r.arrival_ms, r.departure_ms, r.delay_ms) for r in _match(parse_log(path))]


def _match(log: ParsedLog) -> list[PacketRecord]:
    out = []
    for (a_t, _a_size), (d_t, d_size, _logged) in zip(log.arrivals, log.departures, strict=False):
        out.append(PacketRecord(a_t, d_t, d_t - a_t, d_size))
    return out


def percentile(sorted_values: list[int] | list[float], q: float) -> float | None:
    """Nearest-rank percentile (index round(q/100*(n-1))) of an ascending list; None if empty."""
    if not sorted_values:
        return None
    n = len(sorted_values)
    return float(sorted_values[min(n - 1, max(0, round(q / 100.0 * (n - 1))))])


@dataclass
class LogMetrics:
    """Metrics over the window ``start_ms <= t < end_ms`` (ms after T0).

    packets: ``arrived`` (every ``+``, dropped ones included), ``departed``,
    ``dropped``; ``loss_rate`` = dropped / arrived.
    queuing_delay_ms: mean/p50/p95/p99/max of departure − arrival (FIFO-matched)
    over packets departing in the window; ``queuing_delay_data_ms`` the same over
    packets of at least :data:`DATA_PACKET_MIN_BYTES` (those that carry data: an
    ACK-only QUIC packet is under 100 bytes, and on a dark link a receiver's grants
    make the server queue one per grant it acknowledges).
    ``capacity_bytes`` = 1504 × opportunities in the window (trace capacity);
    ``delivered_bytes`` = sizes of packets departing in the window;
    ``utilization`` = delivered / capacity: every opportunity counts, idle
    ones too (DESIGN.md's utilization).
    ``utilization_busy`` = ``backlogged_served_bytes`` / ``backlogged_capacity_bytes``:
    an opportunity is *backlogged* when, at its time T, at least one accepted
    packet that arrived before T (arrival t < T) still has bytes to send; the
    served bytes are the bytes those opportunities carried by mahimahi's rule
    (so carry-over is counted where the bytes moved, and the ratio is <= 1).
    Note it excludes idle opportunities entirely: a sender that keeps the
    queue empty is not penalised for capacity it left unused, so it is never
    called plain "utilization" (issue 13 item 4: a busy-only figure was once
    reported as utilization; use ``utilization`` for that).
    Checks: ``replay_mismatches`` (logged departures whose time differs from
    the replay), ``delay_mismatches`` (logged delay ≠ FIFO delay by > 1 ms),
    ``schedule_mismatches`` (opportunity counts per ms vs the trace; None if
    no trace given), ``unmatched_departures`` (``-`` with no arrival).
    """

    start_ms: int
    end_ms: int
    base_timestamp_ms: int | None
    packets: dict[str, int]
    loss_rate: float
    queuing_delay_ms: dict[str, float | None]
    queuing_delay_data_ms: dict[str, float | None]
    capacity_bytes: int
    delivered_bytes: int
    utilization: float | None
    backlogged_opportunities: int
    backlogged_capacity_bytes: int
    backlogged_served_bytes: int
    utilization_busy: float | None
    opportunities: int
    replay_mismatches: int
    delay_mismatches: int
    unmatched_departures: int
    schedule_mismatches: int | None

    @property
    def duration_s(self) -> float:
        """Window length in seconds."""
        return (self.end_ms - self.start_ms) / 1000.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``duration_s``)."""
        d = asdict(self)
        d["duration_s"] = self.duration_s
        return d


DATA_PACKET_MIN_BYTES = 200
"""Packets at least this large count as data packets (``queuing_delay_data_ms``), bytes."""


def _delay_stats(delays: list[int]) -> dict[str, float | None]:
    """mean/p50/p95/p99/max of sorted delays, ms (None when empty)."""
    return {
        "mean": sum(delays) / len(delays) if delays else None,
        "p50": percentile(delays, 50),
        "p95": percentile(delays, 95),
        "p99": percentile(delays, 99),
        "max": float(delays[-1]) if delays else None,
    }


def analyze_log(
    log_path: str | Path,
    trace: Trace | str | Path | None = None,
    start_ms: int | None = None,
    end_ms: int | None = None,
) -> LogMetrics:
    """Compute :class:`LogMetrics` for a log over ``[start_ms, end_ms)`` (ms after T0).

    ``start_ms`` defaults to 0, ``end_ms`` to one past the last event. If
    ``trace`` (a :class:`Trace` or a path) is given, the logged opportunities
    are also checked against its looped schedule. Raises ``ValueError`` on a
    malformed log, :class:`~.trace.TraceError` on a bad trace.
    """
    log = parse_log(log_path)
    last = max(
        [log.all_arrivals[-1][0]] if log.all_arrivals else [],
        default=-1,
    )
    if log.departures:
        last = max(last, log.departures[-1][0])
    if log.opportunities:
        last = max(last, max(log.opportunities))
    lo = 0 if start_ms is None else start_ms
    hi = last + 1 if end_ms is None else end_ms

    def inside(t: int) -> bool:
        return lo <= t < hi

    # FIFO-matched delays, departures in the window
    delays: list[int] = []
    data_delays: list[int] = []
    delay_mismatches = 0
    delivered = 0
    departed = 0
    for (a_t, _s), (d_t, d_size, logged) in zip(log.arrivals, log.departures, strict=False):
        if logged is not None and abs(logged - (d_t - a_t)) > 1:
            delay_mismatches += 1
        if inside(d_t):
            delays.append(d_t - a_t)
            if d_size >= DATA_PACKET_MIN_BYTES:
                data_delays.append(d_t - a_t)
            delivered += d_size
            departed += 1
    unmatched = max(0, len(log.departures) - len(log.arrivals))
    for d_t, d_size, _ in log.departures[len(log.arrivals) :]:
        if inside(d_t):
            delivered += d_size
            departed += 1

    # replay mahimahi's rule on the logged opportunities and accepted arrivals
    opps = sorted(log.opportunities)
    arr = sorted(log.arrivals, key=lambda a: a[0])
    queue: deque[int] = deque()
    head_left = -1  # bytes left of the head packet; -1: no head in transit
    ai = 0
    replay_deps: list[int] = []
    n_opp = b_opp = served = 0
    for t in opps:
        while ai < len(arr) and arr[ai][0] < t:
            queue.append(arr[ai][1])
            ai += 1
        backlogged = head_left >= 0 or bool(queue)
        left = PACKET_SIZE_BYTES
        while left > 0:
            if head_left < 0:
                if not queue:
                    break
                head_left = queue.popleft()
            amount = min(left, head_left)
            head_left -= amount
            left -= amount
            if head_left == 0:
                replay_deps.append(t)
                head_left = -1
        if inside(t):
            n_opp += 1
            if backlogged:
                b_opp += 1
                served += PACKET_SIZE_BYTES - left
    logged_dep_times = [d[0] for d in log.departures]
    replay_mismatches = sum(
        1 for a, b in zip(logged_dep_times, replay_deps, strict=False) if a != b
    )
    replay_mismatches += abs(len(logged_dep_times) - len(replay_deps))

    schedule_mismatches = None
    if trace is not None and opps:
        tr = trace if isinstance(trace, Trace) else load_trace(trace)
        want = Counter(tr.opportunities_between_ms(0, opps[-1] + 1))
        got = Counter(opps)
        schedule_mismatches = sum(abs(got[x] - want[x]) for x in set(want) | set(got))

    delays.sort()
    data_delays.sort()
    arrived = sum(1 for t, _ in log.all_arrivals if inside(t))
    dropped = sum(1 for t, _ in log.drops if inside(t))
    capacity = n_opp * PACKET_SIZE_BYTES
    b_cap = b_opp * PACKET_SIZE_BYTES
    return LogMetrics(
        start_ms=lo,
        end_ms=hi,
        base_timestamp_ms=log.base_timestamp_ms,
        packets={"arrived": arrived, "departed": departed, "dropped": dropped},
        loss_rate=dropped / arrived if arrived else 0.0,
        queuing_delay_ms=_delay_stats(delays),
        queuing_delay_data_ms=_delay_stats(data_delays),
        capacity_bytes=capacity,
        delivered_bytes=delivered,
        utilization=delivered / capacity if capacity else None,
        backlogged_opportunities=b_opp,
        backlogged_capacity_bytes=b_cap,
        backlogged_served_bytes=served,
        utilization_busy=served / b_cap if b_cap else None,
        opportunities=n_opp,
        replay_mismatches=replay_mismatches,
        delay_mismatches=delay_mismatches,
        unmatched_departures=unmatched,
        schedule_mismatches=schedule_mismatches,
    )
