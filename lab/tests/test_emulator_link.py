"""Pure link models under a simulated clock: hand-worked mahimahi examples and invariants."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nuwa_lab.emulator import (
    PACKET_SIZE_BYTES,
    DelayLine,
    Departure,
    QueueLimit,
    RateLink,
    TraceLink,
    parse_trace,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def trace(*ts: int):
    return parse_trace([f"{t}\n" for t in ts])


def deps(link: TraceLink[str], now: float) -> list[tuple[float, str]]:
    return [(d.departure_ms, d.item) for d in link.service(now)]


class Rec:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def arrival(self, t_ms, size_bytes):
        self.events.append(("+", t_ms, size_bytes))

    def drop(self, t_ms, size_bytes):
        self.events.append(("d", t_ms, size_bytes))

    def opportunity(self, t_ms):
        self.events.append(("#", t_ms))

    def departure(self, t_ms, size_bytes, arrival_ms):
        self.events.append(("-", t_ms, size_bytes, arrival_ms))


def test_surplus_of_an_opportunity_goes_to_the_next_packet():
    link: TraceLink[str] = TraceLink(trace(5, 10))
    for name, size in (("p1", 500), ("p2", 500), ("p3", 1000)):
        assert link.enqueue(0.0, size, name)
    # opportunity 5: p1 (500) + p2 (500) done, 504 bytes of p3 sent; p3's last 496 at 10
    assert deps(link, 9.9) == [(5, "p1"), (5, "p2")]
    assert link.backlog_bytes == 496
    assert deps(link, 10.0) == [(10, "p3")]
    assert link.counters.served_bytes == 1504 + 496
    assert link.counters.backlogged_opportunities == 2


def test_packet_bigger_than_an_opportunity_carries_over():
    link: TraceLink[str] = TraceLink(trace(1))  # one opportunity per ms
    link.enqueue(0.0, 4000, "big")
    link.enqueue(0.0, 600, "next")
    # 1504 at 1, 1504 at 2, last 992 at 3; the surplus 512 of ms 3 starts "next"
    assert deps(link, 2.5) == []
    assert deps(link, 3.0) == [(3, "big")]
    assert link.backlog_bytes == 88
    assert deps(link, 10.0) == [(4, "next")]


def test_exactly_one_opportunity_per_1504_bytes():
    link: TraceLink[int] = TraceLink(trace(1))
    for i in range(3):
        link.enqueue(0.0, PACKET_SIZE_BYTES, i)
    assert deps(link, 3.0) == [(1, 0), (2, 1), (3, 2)]


def test_empty_queue_wastes_opportunities():
    rec = Rec()
    link: TraceLink[str] = TraceLink(trace(1), recorder=rec)
    link.enqueue(2.5, 100, "late")  # opportunities 1 and 2 pass with nothing queued
    assert deps(link, 3.0) == [(3, "late")]
    assert link.counters.opportunities == 3
    assert link.counters.backlogged_opportunities == 1
    assert link.counters.served_bytes == 100
    # the 1404 unused bytes of ms 3 are not kept: a packet at 3.5 waits for ms 4
    link.enqueue(3.5, 100, "after")
    assert deps(link, 4.0) == [(4, "after")]
    assert [e[0] for e in rec.events] == ["#", "#", "+", "#", "-", "+", "#", "-"]


def test_arrival_at_an_opportunity_time_misses_it():
    # mahimahi processes every opportunity <= now before enqueueing (rationalize)
    link: TraceLink[str] = TraceLink(trace(5, 10))
    link.service(4.0)
    link.enqueue(5.0, 100, "p")
    assert deps(link, 9.0) == []
    assert deps(link, 10.0) == [(10, "p")]


def test_loop_wraparound_period_is_last_timestamp():
    tr = trace(0, 0, 4)  # period 4: 0,0,4 | 4,4,8 | 8,8,12 ...
    assert tr.period_ms == 4
    assert tr.opportunities_between_ms(0, 13) == [0, 0, 4, 4, 4, 8, 8, 8, 12, 12, 12]
    assert tr.opportunities_between_ms(5, 9) == [8, 8, 8]
    link: TraceLink[int] = TraceLink(tr)
    for i in range(7):
        link.enqueue(-1.0, PACKET_SIZE_BYTES, i)
    assert [t for t, _ in deps(link, 100.0)] == [0, 0, 4, 4, 4, 8, 8]


def test_next_opportunity_helpers():
    link: TraceLink[int] = TraceLink(trace(5, 10))
    assert link.next_service_ms() is None
    assert link.next_opportunity_ms() == 5
    assert link.first_opportunity_after_ms(5.0) == 10
    assert link.first_opportunity_after_ms(9.99) == 10
    assert link.first_opportunity_after_ms(10.0) == 15
    assert link.first_opportunity_after_ms(123.0) == 125
    link.enqueue(1.0, 10, 1)
    assert link.next_service_ms() == 5
    link.service(31.0)
    assert link.next_opportunity_ms() == 35
    assert link.first_opportunity_after_ms(31.0) == 35
    assert link.first_opportunity_after_ms(40.0) == 45


def test_droptail_by_packets_excludes_the_packet_in_transit():
    rec = Rec()
    link: TraceLink[str] = TraceLink(trace(1), QueueLimit(packets=2), rec)
    assert link.enqueue(0.0, 3000, "a")
    assert link.enqueue(0.0, 100, "b")
    assert not link.enqueue(0.0, 100, "c")
    link.service(1.0)  # "a" is now in transit, only "b" is queued
    assert link.queued_packets == 1
    assert link.enqueue(1.5, 100, "d")
    assert not link.enqueue(1.5, 100, "e")
    assert link.counters.dropped_packets == 2
    drops = [e for e in rec.events if e[0] == "d"]
    assert drops == [("d", 0.0, 100), ("d", 1.5, 100)]
    # mahimahi logs '+' for every arrival and 'd' right after it for a refused one
    i = rec.events.index(("d", 0.0, 100))
    assert rec.events[i - 1] == ("+", 0.0, 100)
    assert [d.item for d in link.service(10.0)] == ["a", "b", "d"]


def test_droptail_by_bytes():
    link: TraceLink[int] = TraceLink(trace(1), QueueLimit(packets=None, bytes_=3000))
    assert link.enqueue(0.0, 1500, 1)
    assert link.enqueue(0.0, 1500, 2)
    assert not link.enqueue(0.0, 1, 3)
    assert link.queued_bytes == 3000
    link.service(1.0)  # packet 1 left at ms 1: room again
    assert link.enqueue(1.0, 1500, 4)


def test_random_loss_is_seeded_and_logged_as_drop():
    def run(seed: int) -> list[int]:
        link: TraceLink[int] = TraceLink(
            trace(1), QueueLimit(None, None), loss_rate=0.3, rng=random.Random(seed)
        )
        for i in range(1000):
            link.enqueue(i * 0.1, 100, i)
        assert link.counters.random_losses == link.counters.dropped_packets
        return [d.item for d in link.service(1e6)]

    a, b = run(7), run(7)
    assert a == b
    assert 600 < len(a) < 800
    assert run(8) != a


def test_bad_arguments():
    with pytest.raises(ValueError):
        TraceLink(trace(1), loss_rate=1.0)
    with pytest.raises(ValueError):
        QueueLimit(packets=-1)
    link: TraceLink[int] = TraceLink(trace(1))
    with pytest.raises(ValueError):
        link.enqueue(0.0, -1, 0)
    link.service(5.0)
    with pytest.raises(ValueError, match="backwards"):
        link.enqueue(4.0, 10, 0)


def reference_departures(
    opps: list[int], arrivals: list[tuple[float, int]]
) -> list[tuple[int, int]]:
    """Byte-by-byte FIFO reference: (departure time, packet index)."""
    out = []
    remaining = [size for _, size in arrivals]
    head = 0
    for t in opps:
        budget = PACKET_SIZE_BYTES
        while head < len(arrivals) and arrivals[head][0] < t:
            if remaining[head] > budget:
                remaining[head] -= budget
                break
            budget -= remaining[head]
            remaining[head] = 0
            out.append((t, head))
            head += 1
        # packets that arrive later are not eligible at t
    return out


@settings(max_examples=60, deadline=None)
@given(
    sched=st.lists(st.integers(0, 30), min_size=1, max_size=30).map(sorted),
    pkts=st.lists(st.tuples(st.floats(0, 200, allow_nan=False), st.integers(1, 5000)), max_size=60),
)
def test_matches_byte_reference_and_never_exceeds_capacity(sched, pkts):
    if sched[-1] == 0:
        sched = [*sched, 1]
    tr = parse_trace([f"{t}\n" for t in sched])
    arrivals = sorted(pkts, key=lambda p: p[0])
    link: TraceLink[int] = TraceLink(tr, QueueLimit(None, None))
    out: list[Departure[int]] = []
    for i, (t, size) in enumerate(arrivals):
        out += link.service(t)
        assert link.enqueue(t, size, i)
    out += link.service(400.0)
    opps = tr.opportunities_between_ms(0, 401)
    assert [(d.departure_ms, d.item) for d in out] == reference_departures(opps, arrivals)
    # cumulative departed bytes never exceed cumulative opportunity bytes
    sent = 0
    for d in out:
        sent += d.size_bytes
        n_before = sum(1 for t in opps if t <= d.departure_ms)
        assert sent <= n_before * PACKET_SIZE_BYTES
        assert d.departure_ms > d.arrival_ms
    c = link.counters
    assert c.served_bytes <= c.backlogged_opportunities * PACKET_SIZE_BYTES
    assert c.opportunities == len(opps)


def test_rate_link_serializes_after_its_delay():
    link: RateLink[str] = RateLink(8e6, delay_ms=25.0)  # 1 byte per µs
    assert link.enqueue(0.0, 1000, "a")  # arrives 25.0, leaves 26.0
    assert link.enqueue(0.5, 1000, "b")  # arrives 25.5, waits, leaves 27.0
    assert link.next_service_ms() == pytest.approx(26.0)
    assert link.service(25.9) == []
    got = link.service(27.0)
    assert [(d.item, round(d.departure_ms, 6)) for d in got] == [("a", 26.0), ("b", 27.0)]
    assert link.enqueue(100.0, 500, "c")
    assert link.service(125.6)[0].departure_ms == pytest.approx(125.5)


def test_rate_link_droptail_counts_only_what_is_still_queued():
    link: RateLink[int] = RateLink(8e6, QueueLimit(packets=2))
    assert link.enqueue(0.0, 1000, 1)  # leaves at 1.0
    assert link.enqueue(0.0, 1000, 2)  # leaves at 2.0
    assert not link.enqueue(0.0, 1000, 3)
    assert link.enqueue(1.5, 1000, 4)  # 1 already gone by then
    assert link.dropped_packets == 1
    with pytest.raises(ValueError):
        RateLink(0.0)


def test_delay_line():
    d: DelayLine[str] = DelayLine(25.0)
    d.push(1.0, "a")
    d.push(2.0, "b")
    assert d.next_ms() == 26.0
    assert d.pop_due(25.9) == []
    assert d.pop_due(26.0) == [(26.0, "a")]
    assert len(d) == 1
    assert d.pop_due(100.0) == [(27.0, "b")]
    assert d.next_ms() is None
    with pytest.raises(ValueError):
        DelayLine(-1.0)
