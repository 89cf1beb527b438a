"""Issue 7 item 8, server side: frame stamps come from CLOCK_MONOTONIC, so a step of the
wall clock during a session does not reach ``send_time_us`` (PROTOCOL.md "Responses")."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from wt_harness import run, running_server, wt_client

from nuwa_server.config import now_us


def test_now_us_is_the_monotonic_clock() -> None:
    """now_us() is CLOCK_MONOTONIC in µs (the emulator's clock too), not the wall clock."""
    a = time.monotonic_ns() // 1000
    t = now_us()
    b = time.monotonic_ns() // 1000
    assert a <= t <= b


def test_wall_clock_step_does_not_reach_the_stamps(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall clock jumps back 1 h, then forward 2 h, in the middle of a download (the
    Python wall-clock functions are patched, as an NTP step would move them): consecutive
    frame stamps never move backwards, never jump, and stay within the monotonic span."""
    offset_s = [0.0]
    real_time, real_time_ns = time.time, time.time_ns
    monkeypatch.setattr(time, "time", lambda: real_time() + offset_s[0])
    monkeypatch.setattr(time, "time_ns", lambda: real_time_ns() + int(offset_s[0] * 1e9))

    async def main() -> tuple[list[int], int, int]:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            assert await client.open_session() == 200
            t0 = time.monotonic_ns() // 1000
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 6_000_000})
            while client.frame_bytes_received < 1_000_000:
                client.progress.clear()
                await asyncio.wait_for(client.progress.wait(), 5)
            offset_s[0] = -3600.0
            while client.frame_bytes_received < 3_000_000:
                client.progress.clear()
                await asyncio.wait_for(client.progress.wait(), 5)
            offset_s[0] = +3600.0
            r = await client.wait(sid)
            t1 = time.monotonic_ns() // 1000
            return [f.header.send_time_us for f in r.frames], t0, t1

    stamps, t0, t1 = run(main())
    assert len(stamps) > 5000
    steps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert min(steps) >= 0  # one stream: stamped in order
    assert max(steps) < 500_000  # no 1 h jump (nor any pause near one)
    assert t0 <= stamps[0] and stamps[-1] <= t1
