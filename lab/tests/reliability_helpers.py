"""Helpers of the ``test_reliability_*`` files (issue 7 items 1–3): a client that watches
for the session's close, honest granting while downloading, and a ``python -m`` process
started up to its ready line."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from aioquic.buffer import Buffer
from aioquic.h3.events import DataReceived, H3Event
from aioquic.quic.events import ConnectionTerminated, QuicEvent
from wt_harness import (
    WtClient,
)

from nuwa_server.connection import (
    CLOSE_WEBTRANSPORT_SESSION_CAPSULE,
)
from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    Grant,
)

FRAME_BYTES = FRAME_HEADER_BYTES + 1200
REPO_ROOT = Path(__file__).resolve().parents[2]


class CloseWatchingClient(WtClient):
    """WtClient that records a CLOSE_WEBTRANSPORT_SESSION capsule and the connection close."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connect_stream_data = bytearray()
        self.connect_stream_ended = False
        self.terminated: ConnectionTerminated | None = None

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
        super().quic_event_received(event)

    def _h3_event(self, event: H3Event) -> None:
        if isinstance(event, DataReceived) and event.stream_id == self.session_id:
            self.connect_stream_data += event.data
            self.connect_stream_ended |= event.stream_ended
        super()._h3_event(event)

    def close_capsule(self) -> tuple[int, bytes] | None:
        """(code, reason) of the first CLOSE_WEBTRANSPORT_SESSION capsule, if any."""
        buf = Buffer(data=bytes(self.connect_stream_data))
        while not buf.eof():
            ctype, length = buf.pull_uint_var(), buf.pull_uint_var()
            payload = buf.pull_bytes(length)
            if ctype == CLOSE_WEBTRANSPORT_SESSION_CAPSULE:
                return int.from_bytes(payload[:4], "big"), payload[4:]
        return None


async def download_with_grants(client: WtClient, size_bytes: int, window_bytes: int,
                               interval_s: float = 0.001, timeout_s: float = 20.0,
                               first_seq: int = 1) -> bytes:
    """Bulk download that grants ``window_bytes`` with honest cum every ``interval_s``,
    grant_seq counting from ``first_seq``."""
    sid = client.request({"v": 1, "op": "bulk", "size_bytes": size_bytes})
    seq = first_seq
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not client.results[sid].done.is_set():
        assert loop.time() < deadline, "download did not finish"
        echo = client.all_frames[-1][1].header.send_time_us if client.all_frames else 0
        client.send_grant(Grant(seq, seq, client.frame_bytes_received, window_bytes, echo, 0))
        seq += 1
        await asyncio.sleep(interval_s)
    return (await client.wait(sid)).body


async def keep_granting(client: WtClient, window_bytes: int, interval_s: float = 0.002) -> None:
    """Grant ``window_bytes`` with honest cum and echo every ``interval_s`` until cancelled."""
    seq = 1
    while True:
        echo = client.all_frames[-1][1].header.send_time_us if client.all_frames else 0
        client.send_grant(Grant(seq, seq, client.frame_bytes_received, window_bytes, echo, 0))
        seq += 1
        await asyncio.sleep(interval_s)



async def _start_ready(args: list[str], stderr_path: Path) -> tuple[Any, dict[str, Any]]:
    """Start ``python -m ...`` and wait for its ``{"event": "ready"}`` stdout line."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.PIPE,
        stderr=open(stderr_path, "w"), cwd=REPO_ROOT)  # noqa: SIM115 (closed with the process)
    assert proc.stdout is not None
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line, f"{args[:2]} exited before ready: {stderr_path.read_text()[-2000:]}"
        obj = json.loads(line)
        if obj.get("event") == "ready":
            return proc, obj


async def _stop(proc: Any) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()
