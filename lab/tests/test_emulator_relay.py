"""The real relay on loopback (CLI subprocess) and the CLI's argument errors."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nuwa_lab.emulator import analyze_log, constant_rate_trace, load_trace, packet_records
from nuwa_lab.emulator.cli import main

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)

VERIFY = Path(__file__).resolve().parent / "mmlog_verify.py"  # our independent log checker
TRACES = Path(__file__).resolve().parents[2] / "traces"
HDR = struct.Struct("!IQ")  # seq, send time µs (monotonic)


def now_us() -> int:
    return time.monotonic_ns() // 1000


def udp() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return s


class Emulator:
    """The CLI in a subprocess; reads its ready line."""

    def __init__(self, tmp: Path, server_port: int, trace: Path, *extra: str) -> None:
        self.log = tmp / "down.log"
        self.summary = tmp / "summary.json"
        cmd = [
            sys.executable, "-m", "nuwa_lab.emulator",
            "--server", f"127.0.0.1:{server_port}", "--trace", str(trace),
            "--log", str(self.log), "--summary-json", str(self.summary), *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        assert ready, "emulator printed no ready line"
        self.ready = json.loads(self.proc.stdout.readline())
        assert self.ready["event"] == "ready"
        self.addr = ("127.0.0.1", self.ready["listen_port"])

    def stop(self) -> dict:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        done = json.loads(out.strip().splitlines()[-1])
        assert done["event"] == "done"
        return json.loads(self.summary.read_text())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def write_trace(path: Path, rate_bps: float) -> Path:
    path.write_text("".join(f"{t}\n" for t in constant_rate_trace(rate_bps).opportunities_ms))
    return path


def hello(server: socket.socket, clients: list[socket.socket], emu_addr) -> dict:
    """Each client says hello through the emulator; returns {client: (peer, uplink owd ms)}."""
    sent = {}
    for c in clients:
        sent[c.getsockname()] = now_us()
        c.sendto(HDR.pack(0, sent[c.getsockname()]), emu_addr)
    peers = {}
    server.settimeout(2.0)
    for _ in clients:
        data, peer = server.recvfrom(2048)
        _, t_us = HDR.unpack_from(data)
        peers[peer] = (now_us() - t_us) / 1000.0
    return peers


def receive(clients: list[socket.socket], n_total: int, timeout_s: float, idle_s: float = 0.5):
    """Collect (client index, seq, send_us, recv_us, size) until n_total, timeout, or
    ``idle_s`` without a packet once some arrived."""
    got = []
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    while len(got) < n_total and time.monotonic() < deadline:
        if got and time.monotonic() - last > idle_s:
            break
        r, _, _ = select.select(clients, [], [], 0.05)
        if r:
            last = time.monotonic()
        for s in r:
            data = s.recv(65536)
            t = now_us()
            seq, sent = HDR.unpack_from(data)
            got.append((clients.index(s), seq, sent, t, len(data)))
    return got


VALID_TRIES = 3
"""Measurements of :func:`test_two_clients_share_a_constant_rate_bottleneck` while the emulator
could not keep time (p99 lateness > 2 ms): such a run is void and taken again, as the end-to-end
runs do (e2e/src/valid-run.ts). One CI run in about fifteen met it (p99 3.29 ms, SCHED_FIFO)."""


def _two_clients_burst(tmp: Path, rate_bps: float) -> tuple[list, dict, Emulator, Path]:
    """Two clients behind one emulator at ``rate_bps``; the server sends each 200 × 1200 B at
    once. Returns what the clients received, the emulator's summary, the (stopped) emulator
    and the trace."""
    tmp.mkdir(parents=True, exist_ok=True)
    trace = write_trace(tmp / "c8.mahi", rate_bps)
    server = udp()
    clients = [udp(), udp()]
    emu = Emulator(tmp, server.getsockname()[1], trace)
    try:
        peers = hello(server, clients, emu.addr)
        assert len(peers) == 2  # one upstream socket per client
        for owd in peers.values():
            assert 25.0 <= owd < 40.0  # uplink delay applied
        pad = b"\0" * (1200 - HDR.size)
        for i in range(200):  # a burst: the queue stays backlogged ~480 ms
            for peer in peers:
                server.sendto(HDR.pack(i, now_us()) + pad, peer)
        got = receive(clients, 400, 5.0)
    finally:
        summary = emu.stop() if emu.proc.poll() is None else {}
        emu.kill()
    return got, summary, emu, trace


def test_two_clients_share_a_constant_rate_bottleneck(tmp_path):
    rate_bps = 8e6
    n_each, size = 200, 1200
    for attempt in range(1, VALID_TRIES + 1):
        got, summary, emu, trace = _two_clients_burst(tmp_path / f"try{attempt}", rate_bps)
        void = summary.get("priority", "").startswith("SCHED_FIFO") and not summary.get("valid")
        if not void or attempt == VALID_TRIES:
            break
        print(f"emulator could not keep time ({summary['invalid_reasons']}): void, measuring again")
    assert len(got) == 2 * n_each
    assert {g[0] for g in got} == {0, 1}
    owd_ms = sorted((g[3] - g[2]) / 1000.0 for g in got)
    assert 25.0 <= owd_ms[0] < 30.0  # propagation delay, then the queue
    # delivery rate over the backlogged burst matches the trace
    t_rx = sorted(g[3] for g in got)
    span_s = (t_rx[-1] - t_rx[0]) / 1e6
    rate = (len(got) - 1) * size * 8 / span_s
    assert rate == pytest.approx(rate_bps * 1200 / 1200, rel=0.05)
    # log truth
    m = analyze_log(emu.log, load_trace(trace))
    assert m.packets["departed"] == 2 * n_each and m.packets["dropped"] == 0
    assert m.replay_mismatches == m.delay_mismatches == m.schedule_mismatches == 0
    assert m.utilization_busy > 0.98
    assert summary["packets"]["departed"] == 2 * n_each
    assert summary["clients"] == 2
    assert summary["lateness_ms"]["count"] > 0
    if summary["priority"].startswith("SCHED_FIFO"):
        assert summary["valid"], summary["invalid_reasons"]
    for k in ("utilization", "capacity_bytes", "delivered_bytes", "cpu_s", "duration_s"):
        assert k in summary
    assert summary["queuing_delay_ms"]["p95"] > 100
    meta = json.loads(Path(str(emu.log) + ".meta.json").read_text())
    assert meta["base_timestamp_ms"] == emu.ready["base_timestamp_ms"]


def test_routes_put_two_servers_behind_one_bottleneck(tmp_path):
    """--route: a client of route 1 reaches server B, a client of route 0 server A; both
    servers' bursts share one queue at the trace's rate, and the summary's ``flows``
    counts each flow's delivered bytes (what mixed-flow shares are computed from)."""
    rate_bps = 8e6
    trace = write_trace(tmp_path / "c8.mahi", rate_bps)
    server_a, server_b = udp(), udp()
    client_a, client_b = udp(), udp()
    flow_log = tmp_path / "flows.json"
    emu = Emulator(tmp_path, server_a.getsockname()[1], trace,
                   "--route", f"127.0.0.1:0=127.0.0.1:{server_b.getsockname()[1]}",
                   "--flow-log", str(flow_log))
    try:
        ports = emu.ready["listen_ports"]
        assert len(ports) == 2 and ports[0] == emu.ready["listen_port"] != ports[1]
        assert emu.ready["servers"][1] == f"127.0.0.1:{server_b.getsockname()[1]}"
        peer_a = next(iter(hello(server_a, [client_a], emu.addr)))
        peer_b = next(iter(hello(server_b, [client_b], ("127.0.0.1", ports[1]))))
        n_a, n_b, size = 300, 100, 1200
        pad = b"\0" * (size - HDR.size)
        for i in range(max(n_a, n_b)):  # both bursts at once: one backlogged queue
            if i < n_a:
                server_a.sendto(HDR.pack(i, now_us()) + pad, peer_a)
            if i < n_b:
                server_b.sendto(HDR.pack(i, now_us()) + pad, peer_b)
        got = receive([client_a, client_b], n_a + n_b, 5.0)
    finally:
        summary = emu.stop() if emu.proc.poll() is None else {}
        emu.kill()
    assert sum(1 for g in got if g[0] == 0) == n_a and sum(1 for g in got if g[0] == 1) == n_b
    t_rx = sorted(g[3] for g in got)
    rate = (len(got) - 1) * size * 8 / ((t_rx[-1] - t_rx[0]) / 1e6)
    assert rate == pytest.approx(rate_bps, rel=0.05)  # one bottleneck, not one per route
    flows = {f["route"]: f for f in summary["flows"]}
    assert flows[0]["delivered_bytes"] == n_a * size and flows[1]["delivered_bytes"] == n_b * size
    assert flows[1]["listen_port"] == ports[1] and flows[0]["dropped_bytes"] == 0
    meta = json.loads(Path(str(emu.log) + ".meta.json").read_text())
    assert [r["listen"] for r in meta["routes"]] == [f"127.0.0.1:{p}" for p in ports]
    # --flow-log: every departure per flow, as the summary counts them
    logged = {f["route"]: f for f in json.loads(flow_log.read_text())["flows"]}
    for route, n in ((0, n_a), (1, n_b)):
        f = logged[route]
        assert len(f["depart_ms"]) == n and sum(f["size_bytes"]) == n * size
        assert f["depart_ms"] == sorted(f["depart_ms"]) and min(f["queue_delay_ms"]) >= 0
    # the shared queue delays both flows: one FIFO served at the trace's rate means the bytes
    # that left while a packet waited are the backlog ahead of it, of both flows. This holds
    # however fast the host sent the bursts (a slow CI host spread them over ~330 ms and
    # the deepest wait read 153 ms, not the ~480 ms of an instant burst).
    deps = sorted((d, q, b, r) for r, f in logged.items()
                  for d, q, b in zip(f["depart_ms"], f["queue_delay_ms"], f["size_bytes"],
                                     strict=True))
    judged = 0
    for d, q, _, r in deps:
        if q < 50:
            continue
        ahead = [(b, r2) for d2, _, b, r2 in deps if d - q < d2 < d]
        assert sum(b for b, _ in ahead) * 8 / (q / 1e3) == pytest.approx(rate_bps, rel=0.1)
        if r == 1:  # route 1 waited behind route 0's packets too: one queue, not one each
            assert any(r2 == 0 for _, r2 in ahead)
        judged += 1
    assert judged >= 50, "no backlog formed: the test judged nothing"


def test_cli_bad_route(tmp_path, capsys, base_args):
    code, err = run_cli([*base_args, "--route", "127.0.0.1:0"], capsys)
    assert code == 2 and "LISTEN=SERVER" in err
    code, err = run_cli([*base_args, "--route", "127.0.0.1:0=127.0.0.1:0"], capsys)
    assert code == 2 and "real port" in err
    code, err = run_cli([*base_args, "--tcp", "--route", "127.0.0.1:0=127.0.0.1:9"], capsys)
    assert code == 2 and "--route is not supported" in err


@pytest.mark.skipif(not TRACES.is_dir(), reason="repo traces/ not present")
def test_real_trace_departures_are_client_arrivals(tmp_path):
    trace = TRACES / "4G" / "mahimahi-verizon-lte-short.mahi"
    server = udp()
    client = udp()
    emu = Emulator(tmp_path, server.getsockname()[1], trace, "--delay-ms", "10",
                   "--queue-packets", "100")  # fmt: skip
    try:
        peer = next(iter(hello(server, [client], emu.addr)))
        n, size = 300, 1300
        pad = b"\0" * (size - HDR.size)
        for i in range(n):  # takes well under the 10 ms delay, so reading starts in time
            server.sendto(HDR.pack(i, now_us()) + pad, peer)
        got = receive([client], n, 4.0)
        time.sleep(0.1)
    finally:
        summary = emu.stop() if emu.proc.poll() is None else {}
        emu.kill()
    t0 = emu.ready["base_timestamp_ms"]
    m = analyze_log(emu.log, load_trace(trace))
    assert m.schedule_mismatches == 0 and m.replay_mismatches == 0
    assert m.packets["dropped"] > 0  # 100-packet queue, 300-packet burst
    assert m.packets["departed"] == len(got) == summary["packets"]["departed"]
    recs = packet_records(emu.log)
    # the k-th departure in the log is the k-th packet the client received
    diffs = sorted(
        abs((g[3] / 1000.0 - t0) - r.departure_ms) for g, r in zip(got, recs, strict=True)
    )
    assert diffs[len(diffs) // 2] < 1.5
    assert diffs[int(len(diffs) * 0.9)] < 3.0
    # arrivals in the log are send time + 10 ms delay
    arr = sorted(
        ((g[2] / 1000.0 + 10.0 - t0) - r.arrival_ms) for g, r in zip(got, recs, strict=True)
    )
    assert -0.5 < arr[len(arr) // 2] < 1.5
    r = subprocess.run(
        [sys.executable, str(VERIFY), str(trace), str(emu.log)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout


def test_duration_ends_the_run(tmp_path):
    trace = write_trace(tmp_path / "c.mahi", 2e6)
    server = udp()
    t = time.monotonic()
    emu = Emulator(tmp_path, server.getsockname()[1], trace, "--duration", "0.4")
    assert emu.proc.wait(timeout=10) == 0
    assert time.monotonic() - t < 5
    s = json.loads(emu.summary.read_text())
    assert 0.35 < s["duration_s"] < 1.0
    assert s["packets"]["arrived"] == 0 and s["valid"]
    m = analyze_log(emu.log)
    assert m.opportunities == pytest.approx(2e6 * 0.4 / 12032, abs=3)


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    return int(e.value.code or 0), capsys.readouterr().err


@pytest.fixture
def base_args(tmp_path):
    trace = write_trace(tmp_path / "ok.mahi", 1e6)
    return ["--server", "127.0.0.1:4433", "--trace", str(trace), "--log", str(tmp_path / "l")]


def test_cli_missing_trace(tmp_path, capsys, base_args):
    code, err = run_cli([*base_args, "--trace", str(tmp_path / "none.mahi")], capsys)
    assert code == 2 and "trace file not found" in err


def test_cli_empty_and_malformed_trace(tmp_path, capsys, base_args):
    (tmp_path / "e.mahi").write_text("")
    code, err = run_cli([*base_args, "--trace", str(tmp_path / "e.mahi")], capsys)
    assert code == 2 and "empty trace" in err
    (tmp_path / "m.mahi").write_text("1\n2\nx3\n")
    code, err = run_cli([*base_args, "--trace", str(tmp_path / "m.mahi")], capsys)
    assert code == 2 and "m.mahi:3: malformed line" in err


def test_cli_conflicting_and_bad_options(tmp_path, capsys, base_args):
    code, err = run_cli([*base_args, "--queue-packets", "10", "--queue-bytes", "1000"], capsys)
    assert code == 2 and "not allowed with argument" in err
    code, err = run_cli([*base_args, "--uplink-mbps", "10", "--uplink-trace", "x"], capsys)
    assert code == 2 and "not allowed with argument" in err
    code, err = run_cli([*base_args, "--loss", "1.5"], capsys)
    assert code == 2 and "loss must be in [0, 1)" in err
    code, err = run_cli([*base_args, "--queue-packets", "0"], capsys)
    assert code == 2 and "positive integer" in err
    code, err = run_cli([*base_args, "--server", "nohostport"], capsys)
    assert code == 2 and "HOST:PORT" in err
    code, err = run_cli([*base_args, "--log", str(tmp_path / "no" / "dir" / "l")], capsys)
    assert code == 2 and "does not exist" in err
    code, err = run_cli(["--trace", "x", "--log", "y"], capsys)
    assert code == 2 and "--server" in err


def test_module_help_runs():
    r = subprocess.run(
        [sys.executable, "-m", "nuwa_lab.emulator", "--help"],
        capture_output=True, text=True, timeout=30, env={**os.environ},
    )  # fmt: skip
    assert r.returncode == 0 and "--queue-packets" in r.stdout


def test_uplink_trace_loss_and_byte_queue(tmp_path):
    down = write_trace(tmp_path / "d.mahi", 4e6)
    up = write_trace(tmp_path / "u.mahi", 1e6)
    server = udp()
    client = udp()
    emu = Emulator(
        tmp_path, server.getsockname()[1], down,
        "--uplink-trace", str(up), "--uplink-delay-ms", "5", "--delay-ms", "5",
        "--loss", "0.3", "--seed", "1", "--queue-bytes", "60000",
    )  # fmt: skip
    try:
        peer, up_owd = next(iter(hello(server, [client], emu.addr).items()))
        assert 5.0 <= up_owd < 25.0  # 5 ms, then a 1 Mbps trace opportunity
        pad = b"\0" * (1000 - HDR.size)
        for i in range(200):
            server.sendto(HDR.pack(i, now_us()) + pad, peer)
        got = receive([client], 200, 3.0)
    finally:
        summary = emu.stop() if emu.proc.poll() is None else {}
        emu.kill()
    m = analyze_log(emu.log)
    assert m.packets["arrived"] == 200
    assert m.packets["departed"] == len(got) == 200 - m.packets["dropped"]
    # 30% random loss, then at most 60 KB (60 packets) queued of the ~140 left
    assert 100 < m.packets["dropped"] < 160
    assert summary["link_counters"]["random_losses"] > 40
    meta = json.loads(Path(str(emu.log) + ".meta.json").read_text())
    assert meta["queue_bytes"] == 60000 and meta["uplink"]["trace"] == str(up)
