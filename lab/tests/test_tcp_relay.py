"""The emulator's TCP relay (``--tcp``): bytes through the trace link with
backpressure instead of drops, on loopback with real sockets."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nuwa_lab.emulator.analysis import analyze_log
from nuwa_lab.emulator.mmlog import read_sidecar
from nuwa_lab.emulator.summary import build_summary
from nuwa_lab.emulator.tcp_relay import UNIT_BYTES, TcpRelay, TcpRelayConfig
from nuwa_lab.emulator.trace import constant_rate_trace

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)

PAYLOAD = bytes(i % 251 for i in range(400_000))


async def _run_transfer(tmp_path: Path) -> dict[str, object]:
    """Server sends 400 kB at once and reads what the client sends; client reads
    everything through a 12 Mbit/s link with a 20 kB limit and 10/15 ms delays."""
    got_up = bytearray()
    up_at: list[float] = []

    async def server_side(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(PAYLOAD)
        t_written = time.monotonic()
        await w.drain()
        drained.append(time.monotonic() - t_written)
        while data := await r.read(65536):
            got_up.extend(data)
            up_at.append(time.monotonic())
        w.close()

    drained: list[float] = []
    srv = await asyncio.start_server(server_side, "127.0.0.1", 0)
    sport = srv.sockets[0].getsockname()[1]
    trace = constant_rate_trace(12e6)
    log = tmp_path / "down.log"
    ready: dict[str, object] = {}
    cfg = TcpRelayConfig(server=("127.0.0.1", sport), trace=trace, log_path=log,
                         delay_ms=10.0, uplink_delay_ms=15.0, limit_bytes=20_000)
    relay = TcpRelay(cfg, on_ready=ready.update)
    run = asyncio.create_task(relay.run())
    while "listen_port" not in ready:
        await asyncio.sleep(0.005)
    r, w = await asyncio.open_connection("127.0.0.1", int(ready["listen_port"]))  # type: ignore[call-overload]
    t0 = time.monotonic()
    w.write(b"hello")
    await w.drain()
    received = bytearray()
    while len(received) < len(PAYLOAD):
        data = await asyncio.wait_for(r.read(65536), 5)
        assert data, "relay closed early"
        received.extend(data)
    elapsed_s = time.monotonic() - t0
    w.close()
    await asyncio.sleep(0.1)
    relay.request_stop()
    stats = await run
    srv.close()
    return {"received": bytes(received), "elapsed_s": elapsed_s, "relay": relay, "stats": stats,
            "log": log, "trace": trace, "got_up": bytes(got_up), "up_delay_s": up_at[0] - t0}


def test_bytes_intact_at_trace_rate_with_backpressure_and_mm_log(tmp_path: Path) -> None:
    res = asyncio.run(_run_transfer(tmp_path))
    assert res["received"] == PAYLOAD  # in order, nothing lost
    assert res["got_up"] == b"hello"
    assert 0.015 <= float(res["up_delay_s"]) < 0.1  # type: ignore[arg-type]
    # 400 kB at 12 Mbit/s of 1504-byte opportunities: ≈ 0.267 s (+ 10 ms delay)
    ideal_s = len(PAYLOAD) * 8 / 12e6
    assert ideal_s * 0.95 < float(res["elapsed_s"]) < ideal_s * 1.5 + 0.05  # type: ignore[arg-type]
    relay = res["relay"]
    assert isinstance(relay, TcpRelay)
    assert relay.max_held_bytes <= 20_000 + UNIT_BYTES
    assert relay.backpressure_waits > 0
    m = analyze_log(res["log"], res["trace"])  # type: ignore[arg-type]
    assert m.packets["departed"] == m.packets["arrived"] > len(PAYLOAD) // UNIT_BYTES
    assert m.packets["dropped"] == 0
    assert m.replay_mismatches == 0 and m.delay_mismatches == 0
    assert m.queuing_delay_ms["max"] is not None
    assert m.queuing_delay_ms["max"] <= 20_000 / (12e6 / 8000) + 3  # queue bounded by the limit
    summary = build_summary(res["log"], res["trace"], res["stats"])  # type: ignore[arg-type]
    assert summary["delivered_bytes"] == len(PAYLOAD)
    assert summary["lateness_ms"]["p99"] is not None
    assert read_sidecar(res["log"])["mode"] == "tcp"  # type: ignore[arg-type]


def test_config_rejects_bad_limits() -> None:
    trace = constant_rate_trace(1e6)
    with pytest.raises(ValueError, match="byte limit"):
        TcpRelayConfig(server=("127.0.0.1", 1), trace=trace, log_path=Path("x"), limit_bytes=100)
    with pytest.raises(ValueError, match="delays"):
        TcpRelayConfig(server=("127.0.0.1", 1), trace=trace, log_path=Path("x"), delay_ms=-1)


@pytest.mark.parametrize("extra,match", [
    (["--loss", "0.1"], "cannot be dropped"),
    (["--uplink-mbps", "5"], "fixed delay only"),
    (["--queue-bytes", "100"], "byte limit"),
])
def test_cli_tcp_refuses_what_tcp_cannot_do(tmp_path: Path, extra: list[str], match: str) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("1\n2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "nuwa_lab.emulator", "--tcp", "--server", "127.0.0.1:9",
         "--trace", str(trace), "--log", str(tmp_path / "l.log"), *extra],
        capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode == 2
    assert match in proc.stderr
