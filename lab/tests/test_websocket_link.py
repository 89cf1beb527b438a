"""Grants over the WebSocket fallback bound the queue of an emulated TCP bottleneck.

In-process, loopback, short: the real server's WebSocket endpoint, the
emulator's TCP relay (12 Mbit/s constant trace, 10 ms each way, 100 kB
limit), and a Python receiver speaking the polyfill's framing that grants a
fixed 15 kB window on the grant stream as it reads. With ``--cc nuwa`` the
bytes queued at the bottleneck stay within the window (queuing delay ≤
window ÷ rate ≈ 10 ms); with ``--cc cubic`` (grants ignored: TCP alone) the
relay's queue fills up to its limit. The browser path is e2e/websocket.e2e.test.ts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from nuwa_lab.emulator.analysis import analyze_log
from nuwa_lab.emulator.tcp_relay import TcpRelay, TcpRelayConfig
from nuwa_lab.emulator.trace import constant_rate_trace
from nuwa_server.config import SessionConfig
from nuwa_server.protocol import FrameReader, FrameType, Grant, encode_grant
from nuwa_server.server import start_server
from nuwa_server.ws_framing import GRANT_STREAM_ID, decode_ws_frame, encode_stream_frame

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)

RATE_BPS = 12e6
WINDOW_BYTES = 15_000
SIZE_BYTES = 600_000


async def _bulk_through_relay(tmp_path: Path, cc: str) -> dict[str, float]:
    server = await start_server(SessionConfig(cc=cc, log_dir=str(tmp_path / "logs")),
                                host="127.0.0.1", port=0, state_dir=str(tmp_path / "state"),
                                ws_port=0)
    trace = constant_rate_trace(RATE_BPS)
    log = tmp_path / f"{cc}.log"
    ready: dict[str, object] = {}
    relay = TcpRelay(TcpRelayConfig(server=("127.0.0.1", int(server.ws_port or 0)), trace=trace,
                                    log_path=log, delay_ms=10, uplink_delay_ms=10,
                                    limit_bytes=100_000), on_ready=ready.update)
    run = asyncio.create_task(relay.run())
    while "listen_port" not in ready:
        await asyncio.sleep(0.005)
    try:
        url = f"ws://127.0.0.1:{ready['listen_port']}/nuwa"
        async with connect(url, subprotocols=["webtransport"], max_size=None) as ws:  # type: ignore[list-item]
            seq = 0
            received = 0

            async def grant() -> None:
                nonlocal seq
                seq += 1
                await ws.send(encode_stream_frame(
                    GRANT_STREAM_ID, encode_grant(Grant(seq, seq, received, WINDOW_BYTES)), False))

            await grant()
            req = json.dumps({"v": 1, "op": "bulk", "size_bytes": SIZE_BYTES}).encode()
            await ws.send(encode_stream_frame(0, req, True))
            reader = FrameReader()
            done = False
            frames = 0
            while not done:
                f = decode_ws_frame(await asyncio.wait_for(ws.recv(), 10))
                for fr in reader.feed(f.data):
                    received += 20 + len(fr.payload)
                    frames += 1
                    done = fr.header.frame_type == FrameType.END
                if frames % 4 == 0 or done:
                    await grant()
        await asyncio.sleep(0.1)
    finally:
        relay.request_stop()
        await run
        server.close()
        await server.ws_server.wait_closed()
    m = analyze_log(log, trace)
    session = server.context.recent_sessions()[-1]
    return {"qd_p95_ms": float(m.queuing_delay_ms["p95"] or 0.0),
            "qd_max_ms": float(m.queuing_delay_ms["max"] or 0.0),
            "dropped": m.packets["dropped"], "violations": session.grants.grant_violations,
            "grants": session.grants.grants_accepted, "max_held_bytes": relay.max_held_bytes}


def test_grants_bound_the_tcp_bottleneck_queue(tmp_path: Path) -> None:
    nuwa = asyncio.run(_bulk_through_relay(tmp_path, "nuwa"))
    cubic = asyncio.run(_bulk_through_relay(tmp_path, "cubic"))
    window_ms = WINDOW_BYTES / (RATE_BPS / 8000)  # 10 ms of the link
    assert nuwa["dropped"] == cubic["dropped"] == 0
    assert nuwa["grants"] > 50 and nuwa["violations"] == 0
    # grant-bounded: the queue holds at most the window (+ a unit of rounding, 1 ms log floor)
    assert nuwa["qd_max_ms"] <= window_ms + 3, nuwa
    assert nuwa["max_held_bytes"] <= WINDOW_BYTES + 2 * 1504, nuwa
    # TCP alone fills the relay's buffer: several times the Nuwa queue
    assert cubic["qd_p95_ms"] > 3 * max(nuwa["qd_p95_ms"], 1.0), (nuwa, cubic)
