"""Mahimahi-format log: writer, sidecar, and metrics recomputed from the log alone."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from nuwa_lab.emulator import (
    MahimahiLogWriter,
    QueueLimit,
    TraceLink,
    analyze_log,
    constant_rate_trace,
    packet_delays,
    packet_records,
    parse_log,
    parse_trace,
    read_sidecar,
    server_send_us_to_log_ms,
    write_sidecar,
)

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)

VERIFY = Path(__file__).resolve().parent / "mmlog_verify.py"  # our independent log checker


def simulate(tmp_path: Path, tr, arrivals, limit=None, end_ms=None, loss=0.0):
    """Drive a logged TraceLink with a simulated clock; returns (log path, link)."""
    log = tmp_path / "down.log"
    w = MahimahiLogWriter(log, 1_000_000, header=["test"])
    link: TraceLink[int] = TraceLink(tr, limit, w, loss, random.Random(1))
    for i, (t, size) in enumerate(arrivals):
        link.service(t)
        link.enqueue(t, size, i)
    link.service(end_ms if end_ms is not None else arrivals[-1][0] + 1000)
    w.close()
    return log, link


def write_trace(tmp_path: Path, tr) -> Path:
    p = tmp_path / "t.mahi"
    p.write_text("".join(f"{t}\n" for t in tr.opportunities_ms))
    return p


def test_log_lines_follow_mahimahi_format(tmp_path):
    tr = parse_trace(["5\n", "10\n"])
    log, _ = simulate(tmp_path, tr, [(0.4, 500), (0.6, 500), (7.2, 1000)], QueueLimit(2), 20)
    lines = log.read_text().splitlines()
    assert "# base timestamp: 1000000" in lines
    body = [ln for ln in lines if not ln.startswith("#")]
    assert body == [
        "0 + 500",
        "0 + 500",
        "5 # 1504",
        "5 - 500 5",
        "5 - 500 5",
        "7 + 1000",
        "10 # 1504",
        "10 - 1000 3",
        "15 # 1504",
        "20 # 1504",
    ]


def test_drop_written_after_its_arrival_and_excluded_from_matching(tmp_path):
    tr = parse_trace(["10\n"])
    log, _ = simulate(tmp_path, tr, [(1, 100), (1, 100), (2, 100)], QueueLimit(1), 30)
    text = log.read_text()
    assert "1 + 100\n1 + 100\n1 d 100\n2 + 100\n2 d 100\n" in text
    parsed = parse_log(log)
    assert len(parsed.all_arrivals) == 3 and len(parsed.arrivals) == 1
    assert packet_delays(log) == [(1, 10, 9)]
    m = analyze_log(log)
    assert m.packets == {"arrived": 3, "departed": 1, "dropped": 2}
    assert m.loss_rate == pytest.approx(2 / 3)


def test_metrics_from_a_simulated_run(tmp_path):
    tr = constant_rate_trace(12e6)  # ~1 opportunity per ms
    rng = random.Random(3)
    # 1.2x overload for 2 s (queue builds), then silence for 1 s
    arrivals = []
    t = 0.0
    while t < 2000:
        arrivals.append((t, rng.choice([1200, 1350, 200])))
        t += rng.expovariate(1 / 0.5)
    log, link = simulate(tmp_path, tr, arrivals, QueueLimit(packets=300), end_ms=3000)
    m = analyze_log(log, tr)
    c = link.counters
    assert m.packets == {
        "arrived": c.arrived_packets,
        "departed": c.departed_packets,
        "dropped": c.dropped_packets,
    }
    assert m.delivered_bytes == c.departed_bytes
    assert m.capacity_bytes == c.opportunities * 1504
    # the replay of the log reproduces the model exactly
    assert m.backlogged_opportunities == c.backlogged_opportunities
    assert m.backlogged_served_bytes == c.served_bytes
    assert m.replay_mismatches == m.delay_mismatches == m.schedule_mismatches == 0
    assert 0.95 < m.utilization_busy <= 1.0
    assert m.utilization < 0.75  # the idle last second counts against it
    # queuing delay: 300 packets of ~1 KB at ~1.5 KB/ms is ~200 ms at most
    assert 50 < m.queuing_delay_ms["p95"] < 300
    recs = packet_records(log)
    assert len(recs) == c.departed_packets
    assert all(r.delay_ms == r.departure_ms - r.arrival_ms >= 1 for r in recs)
    # windowed: only the backlogged middle second
    w = analyze_log(log, tr, start_ms=500, end_ms=1500)
    assert w.opportunities == len(tr.opportunities_between_ms(500, 1500))
    assert w.utilization_busy == pytest.approx(w.utilization, abs=0.01)
    assert w.utilization_busy > 0.97
    assert w.duration_s == 1.0


def test_data_packet_delay_leaves_out_small_packets_queued_in_a_dark_spell(tmp_path):
    """ACK-sized packets that queue through a 2 s dark spell dominate the per-packet p95;
    ``queuing_delay_data_ms`` counts only packets of >= 200 bytes (the data)."""
    ops = tuple(range(1, 1001)) + tuple(range(3001, 4001))  # 1 s on, 2 s dark, 1 s on
    tr = parse_trace([str(t) for t in ops], "dark")
    arrivals = [(float(t), 1350) for t in range(0, 900, 3)]  # data while the link is up
    arrivals += [(float(t), 60) for t in range(1000, 3000, 20)]  # ACK-only packets in the dark
    arrivals += [(float(t), 1350) for t in range(3000, 3900, 3)]
    arrivals.sort()
    log, _ = simulate(tmp_path, tr, arrivals, end_ms=4500)
    m = analyze_log(log, tr)
    assert m.queuing_delay_ms["p95"] is not None and m.queuing_delay_ms["p95"] > 1000
    assert m.queuing_delay_data_ms["p95"] is not None and m.queuing_delay_data_ms["p95"] < 50


def test_summary_utilization_counts_idle_capacity_and_busy_only_is_named_so(tmp_path):
    """Issue 13 item 4: the summary's ``utilization`` is delivered ÷ all capacity (idle
    opportunities counted); the busy-only figure is ``utilization_busy``."""
    from nuwa_lab.emulator.relay import RunStats
    from nuwa_lab.emulator.summary import build_summary

    tr = constant_rate_trace(12e6)
    # 1.2 s of arrivals at 1.6× the rate: backlogged about 1.9 s, then idle
    arrivals = [(t * 0.5, 1200) for t in range(2400)]
    log, _ = simulate(tmp_path, tr, arrivals, QueueLimit(packets=3000), end_ms=3000)
    s = build_summary(log, tr, RunStats(duration_s=3.0))
    assert s["utilization"] == pytest.approx(s["delivered_bytes"] / s["capacity_bytes"])
    assert s["utilization"] < 0.7  # about 1.9 s busy of 3 s
    assert s["utilization_busy"] > 0.95
    assert "utilization_all" not in s


def test_independent_checker_accepts_the_log(tmp_path):
    tr = constant_rate_trace(6e6)
    rng = random.Random(5)
    arrivals = sorted((rng.uniform(0, 1500), rng.choice([1200, 60])) for _ in range(2400))
    log, _ = simulate(tmp_path, tr, arrivals, QueueLimit(packets=50), end_ms=2000)
    r = subprocess.run(
        [sys.executable, str(VERIFY), str(write_trace(tmp_path, tr)), str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    m = analyze_log(log)
    assert out["drops"] == m.packets["dropped"] > 0
    assert out["queuing_delay_ms"]["p50"] == m.queuing_delay_ms["p50"]


def test_tampered_log_fails_the_checks(tmp_path):
    tr = parse_trace(["1\n"])
    log, _ = simulate(tmp_path, tr, [(0.5, 1000), (0.5, 1000)], end_ms=5)
    text = log.read_text().replace("2 - 1000 2", "1 - 1000 1")
    bad = tmp_path / "bad.log"
    bad.write_text(text)
    m = analyze_log(bad, tr)
    assert m.replay_mismatches > 0
    # the independent checker rejects it too: a departure moved to another millisecond
    good = subprocess.run([sys.executable, str(VERIFY), str(write_trace(tmp_path, tr)), str(log)],
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0, good.stdout
    r = subprocess.run([sys.executable, str(VERIFY), str(write_trace(tmp_path, tr)), str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["problems"], r.stdout


def test_partial_last_line_is_ignored_and_garbage_rejected(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("# base timestamp: 5\n1 # 1504\n2 + 10")
    assert parse_log(p).all_arrivals == []
    p.write_text("# base timestamp: 5\n1 ? 1504\n")
    with pytest.raises(ValueError, match="malformed"):
        parse_log(p)


def test_sidecar_roundtrip_and_time_mapping(tmp_path):
    log = tmp_path / "a.log"
    p = write_sidecar(log, {"base_timestamp_ms": 123456, "downlink_delay_ms": 25.0})
    assert p.name == "a.log.meta.json"
    meta = read_sidecar(log)
    assert meta["base_timestamp_ms"] == 123456
    # a packet sent at monotonic 123500.000 ms reaches the queue 25 ms later
    assert server_send_us_to_log_ms(123_500_000, 123456, 25.0) == pytest.approx(69.0)
    with pytest.raises(ValueError):
        write_sidecar(log, {})


def test_grant_violations_are_counted_per_session(tmp_path: Path) -> None:
    """Two sessions in one server log (a page that reconnected after Chromium's blackhole
    detection in an outage): each has its own byte count and grants, so the second
    session's frames are not charged the first session's bytes (the merged count found
    14896 false violations in e2e/outage.e2e.test.ts's video run)."""
    from nuwa_lab.bulk_metrics import grant_violations

    def session(name: str, t0_us: int) -> None:
        d = tmp_path / name
        d.mkdir()
        frames = [{"seq": i, "bytes": 1220, "send_time_us": t0_us + 1000 * i} for i in range(100)]
        (d / "frames.jsonl").write_text("".join(json.dumps(f) + "\n" for f in frames))
        grants = [{"recv_time_us": t0_us + 1000 * i + 500, "cum_received_bytes": 1220 * i,
                   "window_bytes": 12_000, "accepted": True} for i in range(100)]
        (d / "grants.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grants))

    session("s1", 1_000_000)
    session("s2", 5_000_000)
    assert grant_violations(tmp_path) == {"violations": 0, "frames": 200, "max_excess_bytes": 0}
