"""Loopback load test of the emulator: ``python -m nuwa_lab.emulator.bench``.

Starts the emulator CLI as a subprocess over a constant-rate trace (or
``--trace``), then plays a fake server that paces 1200-byte datagrams at
``--load`` × the trace's mean rate and a fake client that answers every
second packet with a 50-byte "ack" (uplink traffic). Prints one JSON object:
the emulator's summary (lateness, CPU, utilization, delays) and what the
client saw (goodput, one-way delay = receive − send on the shared monotonic
clock).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .analysis import percentile
from .trace import constant_rate_trace, load_trace

_HDR = struct.Struct("!IQ")  # seq, send time (µs, monotonic)


def run_bench(
    rate_mbps: float,
    load: float,
    seconds: float,
    trace_path: str | None = None,
    payload_bytes: int = 1200,
    extra_args: list[str] | None = None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """Run one loopback load test; returns ``{"emulator": summary, "client": stats}``."""
    tmp = Path(workdir or tempfile.mkdtemp(prefix="nuwa-emu-bench-"))
    if trace_path is None:
        tr = constant_rate_trace(rate_mbps * 1e6)
        trace_file = tmp / "const.mahi"
        trace_file.write_text("".join(f"{t}\n" for t in tr.opportunities_ms))
    else:
        tr = load_trace(trace_path)
        trace_file = Path(trace_path)
    send_bps = tr.mean_rate_bps * load
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    srv.setblocking(False)
    cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cli.bind(("127.0.0.1", 0))
    cli.setblocking(False)
    for s in (srv, cli):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    cmd = [
        sys.executable, "-m", "nuwa_lab.emulator",
        "--server", f"127.0.0.1:{srv.getsockname()[1]}",
        "--trace", str(trace_file),
        "--log", str(tmp / "down.log"),
        "--summary-json", str(tmp / "summary.json"),
        *(extra_args or []),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        emu = ("127.0.0.1", int(ready["listen_port"]))
        cli.sendto(b"hello", emu)
        peer = None
        deadline = time.monotonic() + 2.0
        while peer is None and time.monotonic() < deadline:
            if select.select([srv], [], [], 0.1)[0]:
                _, peer = srv.recvfrom(2048)
        if peer is None:
            raise RuntimeError("no hello through the emulator")
        gap_s = payload_bytes * 8 / send_bps
        pad = b"\0" * (payload_bytes - _HDR.size)
        seq = 0
        t_start = time.monotonic()
        t_end = t_start + seconds
        next_send = t_start
        owd_ms: list[float] = []
        got_bytes = 0
        first_rx = last_rx = None
        while True:
            now = time.monotonic()
            if now >= t_end + 1.0:
                break
            while now < t_end and next_send <= now:
                try:
                    srv.sendto(_HDR.pack(seq, time.monotonic_ns() // 1000) + pad, peer)
                except BlockingIOError:
                    pass
                seq += 1
                next_send += gap_s
            timeout = max(0.0, min(next_send, t_end + 1.0) - time.monotonic())
            r = select.select([cli, srv], [], [], timeout)[0]
            if cli in r:
                while True:
                    try:
                        data = cli.recv(65536)
                    except BlockingIOError:
                        break
                    rx_us = time.monotonic_ns() // 1000
                    n, sent_us = _HDR.unpack_from(data)
                    owd_ms.append((rx_us - sent_us) / 1000.0)
                    got_bytes += len(data)
                    first_rx = first_rx or rx_us
                    last_rx = rx_us
                    if n % 2 == 0:
                        cli.sendto(b"a" * 50, emu)
            if srv in r:
                while True:
                    try:
                        srv.recv(65536)
                    except BlockingIOError:
                        break
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        summary = json.loads((tmp / "summary.json").read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        srv.close()
        cli.close()
    owd_ms.sort()
    span_s = (last_rx - first_rx) / 1e6 if first_rx and last_rx and last_rx > first_rx else 0.0
    return {
        "emulator": summary,
        "client": {
            "sent_packets": seq,
            "received_packets": len(owd_ms),
            "goodput_mbps": round(got_bytes * 8 / span_s / 1e6, 3) if span_s else None,
            "trace_mean_mbps": round(tr.mean_rate_bps / 1e6, 3),
            "offered_mbps": round(send_bps / 1e6, 3),
            "owd_ms": {
                "min": owd_ms[0] if owd_ms else None,
                "p50": percentile(owd_ms, 50),
                "p95": percentile(owd_ms, 95),
            },
        },
        "workdir": str(tmp),
        "emulator_pid": proc.pid,
        "host_load": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    """CLI entry: prints the bench result as JSON."""
    p = argparse.ArgumentParser(prog="python -m nuwa_lab.emulator.bench")
    p.add_argument("--rate-mbps", type=float, default=20.0, help="constant trace rate")
    p.add_argument("--trace", help="use this trace instead of a constant one")
    p.add_argument("--load", type=float, default=1.1, help="offered load / trace mean rate")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--workdir")
    a, extra = p.parse_known_args(argv)
    res = run_bench(a.rate_mbps, a.load, a.seconds, a.trace, extra_args=extra, workdir=a.workdir)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
