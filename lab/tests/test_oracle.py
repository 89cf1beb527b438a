"""The causal capacity oracle (issue 5): counter, codec, emulator reports, server window."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from wt_harness import _wait_stall, read_jsonl, run, running_server, session_logs, wt_client

from nuwa_lab.emulator import constant_rate_trace, load_trace
from nuwa_lab.emulator.oracle import (
    ORACLE_FLOW_BYTES,
    ORACLE_MESSAGE_BYTES,
    CapacityCounter,
    FlowBytes,
    OracleMessageError,
    OracleReport,
    decode_report,
    encode_report,
)
from nuwa_lab.emulator.trace import PACKET_SIZE_BYTES, parse_trace
from nuwa_server.config import PACKET_OVERHEAD_BYTES, SessionConfig
from nuwa_server.context import ServerContext
from nuwa_server.grants import GrantConfig, GrantState
from nuwa_server.oracle_sender import (
    ORACLE_CC_NAME,
    ORACLE_HEADROOM_MS,
    UNCAPPED_WINDOW_BYTES,
    UncappedCongestionControl,
    oracle_outstanding_wire_bytes,
    oracle_window_wire_bytes,
    report_late_ms,
    wire_to_frame_bytes,
)
from nuwa_server.protocol import FRAME_HEADER_BYTES, Grant

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)

TRACES = Path(__file__).resolve().parents[2] / "traces"


def brute_capacity(trace, start_ms: int, end_ms: int) -> int:
    """Opportunities in (start, end] by walking the looped schedule."""
    n = 0
    for t in trace.iter_opportunities_ms():
        if t > end_ms:
            break
        if t > start_ms:
            n += 1
    return n * PACKET_SIZE_BYTES


def test_capacity_counter_matches_the_looped_schedule():
    trace = parse_trace(["0", "3", "3", "7", "10", "10"])  # period 10, offset 0 coincides with 10
    c = CapacityCounter(trace)
    for start in range(-5, 40, 3):
        for width in (1, 5, 10, 17):
            assert c.capacity_bytes(start, start + width) == brute_capacity(
                trace, start, start + width), (start, width)
    real = load_trace(TRACES / "4G/mahimahi-tmobile-lte-short.mahi")
    rc = CapacityCounter(real)
    for end in (50, 12_345, real.period_ms, real.period_ms + 50, 2 * real.period_ms + 7):
        assert rc.capacity_bytes(end - 50, end) == brute_capacity(real, end - 50, end)
    with pytest.raises(ValueError, match="end_ms"):
        c.capacity_bytes(5, 4)


def test_capacity_of_a_constant_link_is_rate_times_window():
    c = CapacityCounter(constant_rate_trace(12e6))
    got = c.capacity_bytes(1000, 1050)  # 12 Mbit/s × 50 ms = 75 000 bytes
    assert abs(got - 75_000) <= PACKET_SIZE_BYTES


def test_codec_round_trip_and_errors():
    r = OracleReport(t_ms=123.5, window_ms=50, capacity_bytes=75_200, seq=7, interval_ms=10.0)
    data = encode_report(r)
    assert len(data) == ORACLE_MESSAGE_BYTES
    assert decode_report(data) == r
    assert r.capacity_bps == pytest.approx(75_200 * 8 / 0.05)
    with pytest.raises(OracleMessageError, match="bytes"):
        decode_report(data[:-1])
    with pytest.raises(OracleMessageError, match="magic"):
        decode_report(b"XXXX" + data[4:])
    with pytest.raises(OracleMessageError, match="version"):
        decode_report(data[:4] + b"\x09" + data[5:])
    with pytest.raises(ValueError, match="window_ms"):
        encode_report(OracleReport(0.0, 0, 1, 0))


def test_codec_carries_each_flows_delivered_bytes_clock():
    flows = (FlowBytes(40_001, 123_456_789, 3000), FlowBytes(65_535, 0, 0))
    r = OracleReport(10.0, 50, 1504, 1, 10.0, flows, due_monotonic_ms=123_456.789)
    data = encode_report(r)
    assert len(data) == ORACLE_MESSAGE_BYTES + 2 * ORACLE_FLOW_BYTES
    assert decode_report(data) == r
    with pytest.raises(OracleMessageError, match="2 flows"):
        decode_report(data[:-1])
    with pytest.raises(ValueError, match="port"):
        encode_report(OracleReport(10.0, 50, 0, 1, 10.0, (FlowBytes(70_000, 0, 0),)))


def test_window_covers_base_rtt_plus_the_report_interval():
    """window = C_rtt × (R + I) / R: 120 000 B offered in 50 ms, reports every 10 ms."""
    assert oracle_window_wire_bytes(120_000, 50, 10) == 144_000
    assert oracle_window_wire_bytes(120_000, 50, 0) == 120_000
    assert oracle_window_wire_bytes(1, 50, 10) == 2  # rounded up
    assert oracle_window_wire_bytes(0, 50, 10) == 0
    assert oracle_window_wire_bytes(120_000, 50, 10, 20) == 192_000  # + 20 ms of queue
    with pytest.raises(ValueError, match="headroom"):
        oracle_window_wire_bytes(1, 50, 10, -1)
    with pytest.raises(ValueError, match="window_ms"):
        oracle_window_wire_bytes(1, 0, 10)


def test_a_late_read_widens_the_window_by_its_lateness():
    """The delivered clock is U + L old when the server reads a report L ms late."""
    assert report_late_ms(1000.0, 1030.5) == 30.5
    assert report_late_ms(1000.0, 990.0) == 0.0  # early (clock granularity): nothing
    assert report_late_ms(0.0, 5000.0) == 0.0  # due time unknown
    # 120 000 B over 50 ms, I = 10, H = 20, read 30 ms late: × (50+10+20+30)/50
    assert oracle_window_wire_bytes(120_000, 50, 10, 20 + report_late_ms(1000, 1030)) == 264_000


def test_outstanding_is_sent_minus_delivered_minus_dropped():
    assert oracle_outstanding_wire_bytes(100_000, 60_000, 1350) == 38_650
    assert oracle_outstanding_wire_bytes(1000, 2000, 0) == 0  # never negative
    frame = FRAME_HEADER_BYTES + 1200
    assert wire_to_frame_bytes(frame + PACKET_OVERHEAD_BYTES, frame,
                               PACKET_OVERHEAD_BYTES) == frame


def test_grant_state_outstanding_on_the_delivered_clock_not_the_grants():
    """Oracle mode: grants move nothing; outstanding = the report's + frames written since."""
    g = GrantState(GrantConfig(window_from_grants=False), start_time_us=0)
    g.bytes_written = 100_000
    assert g.set_window(50_000) == 50_000
    d = g.on_grant(Grant(1, 1, 90_000, 999_999, 0, 0), now_us=10)
    assert d.accepted and d.window_bytes == 50_000 and d.cum_received_bytes == 0
    assert g.set_oracle_outstanding(30_000) == 30_000
    b = g.budget(10, 0)
    assert (b.window_bytes, b.outstanding_bytes) == (50_000, 30_000)
    g.on_frame_written(1224, b)
    assert g.budget(20, 0).outstanding_bytes == 31_224
    assert g.set_oracle_outstanding(10**9) == g.bytes_written  # clamped
    assert g.set_oracle_outstanding(-5) == 0
    # no grant-timeout fallback: the delivered clock does not depend on grants
    assert g.budget(10**9, 123).fallback_level == 0
    assert g.set_window(5) == g.config.min_window_bytes  # clamped
    with pytest.raises(ValueError, match="grants"):
        GrantState(GrantConfig(), 0).set_window(10_000)
    with pytest.raises(ValueError, match="grants"):
        GrantState(GrantConfig(), 0).set_oracle_outstanding(0)


def test_oracle_runs_under_no_loss_based_ceiling():
    assert SessionConfig(cc="oracle").quic_congestion_control == ORACLE_CC_NAME
    cc = UncappedCongestionControl(max_datagram_size=1350)
    assert cc.congestion_window == UNCAPPED_WINDOW_BYTES
    cc.on_persistent_congestion()
    assert cc.congestion_window == UNCAPPED_WINDOW_BYTES


def test_server_context_scales_capacity_to_frame_bytes(tmp_path):
    ctx = ServerContext.create(SessionConfig(cc="oracle", log_dir=str(tmp_path)))
    frame = FRAME_HEADER_BYTES + 1200
    w = ctx.on_oracle_report(OracleReport(1000.0, 50, 127_000, 0, 10.0))
    span_ms = 50 + 10 + ORACLE_HEADROOM_MS
    assert w == int(127_000 * span_ms / 50) * frame // (frame + PACKET_OVERHEAD_BYTES)
    # read 30 ms after its due time: the window covers those 30 ms too
    due_ms = time.monotonic() * 1000.0 - 30.0
    w_late = ctx.on_oracle_report(OracleReport(1010.0, 50, 127_000, 1, 10.0, (), due_ms))
    late = int(127_000 * (span_ms + 30) / 50) * frame // (frame + PACKET_OVERHEAD_BYTES)
    assert late <= w_late < late * 1.1
    ctx.close_oracle_log()
    row = read_jsonl(tmp_path / "oracle.jsonl")[0]
    assert row["capacity_bytes"] == 127_000 and row["window_bytes"] == w
    assert row["late_ms"] == 0.0 and read_jsonl(tmp_path / "oracle.jsonl")[1]["late_ms"] >= 30
    with pytest.raises(ValueError, match="oracle report"):
        ServerContext.create(SessionConfig(cc="nuwa")).on_oracle_report(
            OracleReport(0.0, 50, 1, 0))


def test_emulator_sends_capacity_one_uplink_delay_late(tmp_path):
    """The real emulator CLI reports (t − 50 ms, t] capacity, received ≈ t + 25 ms."""
    trace_path = tmp_path / "c.mahi"
    trace = constant_rate_trace(12e6)
    trace_path.write_text("".join(f"{t}\n" for t in trace.opportunities_ms))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    cmd = [sys.executable, "-m", "nuwa_lab.emulator", "--server", "127.0.0.1:9",
           "--trace", str(trace_path), "--log", str(tmp_path / "down.log"),
           "--summary-json", str(tmp_path / "s.json"), "--delay-ms", "25",
           "--uplink-delay-ms", "25", "--oracle-to", f"127.0.0.1:{sink.getsockname()[1]}",
           "--duration", "1.0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        t0_ms = ready["base_timestamp_ms"]
        got: list[tuple[float, OracleReport]] = []
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([sink], [], [], 0.1)[0]:
                data = sink.recv(64)
                got.append((time.monotonic() * 1000.0 - t0_ms, decode_report(data)))
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
        sink.close()
    assert len(got) >= 80, len(got)  # every 10 ms for ~1 s, minus the last uplink delay
    counter = CapacityCounter(trace)
    seqs = [r.seq for _, r in got]
    assert seqs == sorted(seqs) and seqs[0] == 0
    lags = []
    for recv_ms, r in got:
        assert r.window_ms == 50
        assert r.capacity_bytes == counter.capacity_bytes(r.t_ms - 50, r.t_ms)
        lags.append(recv_ms - r.t_ms)
    lags.sort()
    # learned one uplink delay (25 ms) late, within scheduling slack
    assert 24.0 <= lags[len(lags) // 2] <= 28.0, lags[len(lags) // 2]
    assert lags[0] >= 24.0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["oracle_reports"] >= len(got)


def test_emulator_reports_each_flows_delivered_bytes(tmp_path):
    """The delivered-bytes clock: a flow's bytes that left the queue, named by the port the
    server sees; bytes still in the 25 ms delay line are not counted yet."""
    trace_path = tmp_path / "c.mahi"
    trace = constant_rate_trace(12e6)
    trace_path.write_text("".join(f"{t}\n" for t in trace.opportunities_ms))
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cmd = [sys.executable, "-m", "nuwa_lab.emulator", "--server",
           f"127.0.0.1:{server.getsockname()[1]}", "--trace", str(trace_path),
           "--log", str(tmp_path / "down.log"), "--delay-ms", "25", "--uplink-delay-ms", "25",
           "--oracle-to", f"127.0.0.1:{sink.getsockname()[1]}", "--duration", "1.5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    reports: list[OracleReport] = []
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        client.sendto(b"hello", ("127.0.0.1", ready["listen_port"]))
        assert select.select([server], [], [], 2.0)[0]
        _, relay_addr = server.recvfrom(100)
        for _ in range(3):
            server.sendto(b"x" * 1000, relay_addr)
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and proc.poll() is None:
            if select.select([sink], [], [], 0.1)[0]:
                reports.append(decode_report(sink.recv(2048)))
        proc.wait(timeout=10)
        assert select.select([client], [], [], 1.0)[0]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
        for s in (server, sink, client):
            s.close()
    with_flow = [r for r in reports if r.flows]
    assert with_flow, "no report named the flow"
    assert {f.port for r in with_flow for f in r.flows} == {relay_addr[1]}
    delivered = [r.flows[0].delivered_bytes for r in with_flow]
    assert delivered == sorted(delivered)
    assert delivered[0] < 3000 and delivered[-1] == 3000, delivered
    assert all(r.flows[0].dropped_bytes == 0 for r in with_flow)
    assert all(r.interval_ms == 10.0 for r in reports)
    # due at t + 25 ms on the host's CLOCK_MONOTONIC
    t0 = ready["base_timestamp_ms"]
    assert all(r.due_monotonic_ms == pytest.approx(t0 + r.t_ms + 25.0) for r in reports)


def test_emulator_rejects_bad_oracle_target(tmp_path, capsys):
    from nuwa_lab.emulator.cli import main

    trace_path = tmp_path / "c.mahi"
    trace_path.write_text("1\n2\n")
    base = ["--server", "127.0.0.1:9", "--trace", str(trace_path), "--log",
            str(tmp_path / "d.log")]
    for bad in ("nonsense", "127.0.0.1:0"):
        with pytest.raises(SystemExit) as e:
            main([*base, "--oracle-to", bad])
        assert e.value.code == 2
        assert "--oracle-to" in capsys.readouterr().err


def test_oracle_server_window_comes_from_reports_not_grants(tmp_path):
    """oracle mode over QUIC: window and outstanding bytes come from the emulator's reports
    (delivered-bytes clock, matched by the peer's port); grants move neither."""
    frame = FRAME_HEADER_BYTES + 1200

    async def main() -> None:
        async with running_server(tmp_path, cc="oracle", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            assert server.oracle_port
            await client.open_session()
            client.request({"v": 1, "op": "bulk", "size_bytes": 4_000_000})
            got = await _wait_stall(client)
            assert 12000 - frame < got <= 12000, got  # initial window
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            ctx = server.context
            port = ctx.protocols[0].peer_port()
            assert port is not None and ctx.oracle_sent_wire_bytes[port] > got

            def report(seq: int, cap: int, delivered: int) -> None:
                flows = (FlowBytes(port, delivered, 0), FlowBytes(1, 0, 0))
                tx.sendto(encode_report(OracleReport(100.0 + seq, 50, cap, seq, 10.0, flows)),
                          ("127.0.0.1", server.oracle_port))

            # everything sent so far was delivered: a whole window may go
            cap = 80_000
            report(0, cap, ctx.oracle_sent_wire_bytes[port])
            tx.sendto(b"junk", ("127.0.0.1", server.oracle_port))
            await asyncio.sleep(0.05)
            window = ctx.oracle_window_bytes
            span_ms = 50 + 10 + ORACLE_HEADROOM_MS
            assert window == int(cap * span_ms / 50) * frame // (frame + PACKET_OVERHEAD_BYTES)
            got2 = await _wait_stall(client)
            assert got + window - frame < got2 <= got + window, (got, got2, window)
            # a grant for a much larger window, all received: changes nothing
            client.send_grant(Grant(1, 1, got2, 10_000_000, 0, 0))
            assert await _wait_stall(client) == got2
            # the emulator delivered all but 20 000 wire bytes: window − 20 000 × f more
            sent = ctx.oracle_sent_wire_bytes[port]
            report(1, cap, sent - 20_000)
            got3 = await _wait_stall(client)
            in_net = 20_000 * frame // (frame + PACKET_OVERHEAD_BYTES)
            assert got2 + window - in_net - frame < got3 <= got2 + window - in_net, (
                got2, got3, window, in_net)
            tx.close()
            session = ctx.sessions[0]
            assert session.grants.grant_violations == 0
        rows = read_jsonl(session_logs(session) / "frames.jsonl")
        assert max(r["grant_window_bytes"] for r in rows) == window

    run(main())
