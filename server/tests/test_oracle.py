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
from test_server import _wait_stall, read_jsonl, run, running_server, session_logs, wt_client

from nuwa_server.emulator import constant_rate_trace, load_trace
from nuwa_server.emulator.oracle import (
    ORACLE_MESSAGE_BYTES,
    CapacityCounter,
    OracleMessageError,
    OracleReport,
    decode_report,
    encode_report,
)
from nuwa_server.emulator.trace import PACKET_SIZE_BYTES, parse_trace
from nuwa_server.grants import GrantConfig, GrantState
from nuwa_server.protocol import FRAME_HEADER_BYTES, Grant
from nuwa_server.session import PACKET_OVERHEAD_BYTES, ServerContext, SessionConfig, now_us

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
    r = OracleReport(t_ms=123.5, window_ms=50, capacity_bytes=75_200, seq=7)
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


def test_grant_state_oracle_window_ignores_grant_windows():
    g = GrantState(GrantConfig(window_from_grants=False), start_time_us=0)
    g.bytes_written = 100_000
    assert g.set_window(50_000) == 50_000
    d = g.on_grant(Grant(1, 1, 40_000, 999_999, 0, 0), now_us=10)
    assert d.accepted and d.window_bytes == 50_000 and d.cum_received_bytes == 40_000
    assert g.budget(10, 0).window_bytes == 50_000
    assert g.set_window(5) == g.config.min_window_bytes  # clamped
    with pytest.raises(ValueError, match="grants"):
        GrantState(GrantConfig(), 0).set_window(10_000)


def test_server_context_scales_capacity_to_frame_bytes(tmp_path):
    ctx = ServerContext.create(SessionConfig(cc="oracle", log_dir=str(tmp_path)))
    frame = FRAME_HEADER_BYTES + 1200
    w = ctx.on_oracle_report(127_000, 50, 1000.0)
    assert w == int(127_000 * frame / (frame + PACKET_OVERHEAD_BYTES))
    ctx.close_oracle_log()
    row = read_jsonl(tmp_path / "oracle.jsonl")[0]
    assert row["capacity_bytes"] == 127_000 and row["window_bytes"] == w
    with pytest.raises(ValueError, match="oracle report"):
        ServerContext.create(SessionConfig(cc="nuwa")).on_oracle_report(1, 50, 0.0)


def test_emulator_sends_capacity_one_uplink_delay_late(tmp_path):
    """The real emulator CLI reports (t − 50 ms, t] capacity, received ≈ t + 25 ms."""
    trace_path = tmp_path / "c.mahi"
    trace = constant_rate_trace(12e6)
    trace_path.write_text("".join(f"{t}\n" for t in trace.opportunities_ms))
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    cmd = [sys.executable, "-m", "nuwa_server.emulator", "--server", "127.0.0.1:9",
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


def test_emulator_rejects_bad_oracle_target(tmp_path, capsys):
    from nuwa_server.emulator.cli import main

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
    """oracle mode over QUIC: the grant's window is ignored, the report's is enforced."""
    frame = FRAME_HEADER_BYTES + 1200

    async def main() -> None:
        async with running_server(tmp_path, cc="oracle", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            assert server.oracle_port
            await client.open_session()
            client.request({"v": 1, "op": "bulk", "size_bytes": 200_000_000})
            got = await _wait_stall(client)
            assert 12000 - frame < got <= 12000, got  # initial window
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            # A large oracle window first, with honest cum: the ceiling (which grows
            # only while used, ceiling.py) grows above the small window to come.
            tx.sendto(encode_report(OracleReport(50.0, 50, 1_000_000, 0)),
                      ("127.0.0.1", server.oracle_port))
            seq = 1
            for _ in range(150):
                client.send_grant(Grant(seq, seq, client.frame_bytes_received, 0, 0, 0))
                seq += 1
                await asyncio.sleep(0.002)
            cap = 80_000
            tx.sendto(encode_report(OracleReport(100.0, 50, cap, 0)),
                      ("127.0.0.1", server.oracle_port))
            tx.sendto(b"junk", ("127.0.0.1", server.oracle_port))
            tx.close()
            await asyncio.sleep(0.05)
            window = server.context.oracle_window_bytes
            assert window == int(cap * frame / (frame + PACKET_OVERHEAD_BYTES))
            got = await _wait_stall(client)
            small_from_us = now_us()
            proto = next(iter(server.quic_server._protocols.values()))
            ceiling = proto._quic._loss.congestion_window
            # a grant for a much larger window changes nothing but cum_received: at most
            # the report's window goes out (and all of it, unless the ceiling is lower)
            client.send_grant(Grant(seq, seq, got, 10_000_000, 0, 0))
            got2 = await _wait_stall(client)
            assert got + min(window, ceiling) - frame < got2 <= got + window, (
                got, got2, window, ceiling)
            session = server.context.recent_sessions()[0]
            assert session.grants.grant_violations == 0
        rows = read_jsonl(session_logs(session) / "frames.jsonl")
        assert {r["grant_window_bytes"] for r in rows if r["send_time_us"] > small_from_us} == {
            window}

    run(main())
