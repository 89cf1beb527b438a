"""Command line: ``python -m nuwa_lab.emulator`` / ``nuwa-emulator``.

Prints one JSON line ``{"event": "ready", "listen_port": P, ...}`` once the
link clock has started, relays until SIGTERM/SIGINT or ``--duration``, then
writes the summary JSON and prints ``{"event": "done", ...}``. Exit status:
0 on a valid run, 3 on a run whose timing self-check failed, 2 on bad arguments.

``--tcp`` relays TCP instead of UDP (:mod:`.tcp_relay`, for the WebSocket
fallback): same trace link and log, but a full queue stops reading from the
server (backpressure) instead of dropping; ``--loss``, the uplink rate or
trace and the oracle are refused there.

``--route LISTEN=SERVER`` (repeatable) puts another server behind the same
bottleneck: clients that send to LISTEN are relayed to SERVER; the ready line's
``listen_ports`` lists route 0 (``--listen``/``--server``) and then each route.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from .link import QueueLimit
from .relay import Relay, RelayConfig
from .summary import build_summary, write_summary
from .tcp_relay import UNIT_BYTES, TcpRelay, TcpRelayConfig
from .trace import TraceError, load_trace


def parse_hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port). Raises ``ValueError``."""
    host, sep, port_s = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_s)
    except ValueError:
        raise ValueError(f"bad port in {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range in {text!r}")
    return host, port


def _nonneg_float(s: str) -> float:
    v = float(s)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {s}")
    return v


def _pos_float(s: str) -> float:
    v = float(s)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {s}")
    return v


def _pos_int(s: str) -> int:
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {s}")
    return v


def _loss(s: str) -> float:
    v = float(s)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"loss must be in [0, 1), got {s}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for ``--help`` text and tests)."""
    p = argparse.ArgumentParser(
        prog="python -m nuwa_lab.emulator",
        description="Trace-driven UDP link emulator (mahimahi mm-link semantics) "
        "between QUIC clients and one server.",
    )
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT clients send to (0: any)")
    p.add_argument("--tcp", action="store_true",
                   help="relay TCP (WebSocket fallback) instead of UDP: a full queue applies "
                   "backpressure instead of dropping (tcp_relay.py)")
    p.add_argument("--server", required=True, help="HOST:PORT of the QUIC server")
    p.add_argument(
        "--route",
        action="append",
        default=[],
        metavar="LISTEN=SERVER",
        help="another HOST:PORT to listen on and the server its clients reach, behind the "
        "same bottleneck (repeatable; LISTEN port 0 picks a free port)",
    )
    p.add_argument("--trace", required=True, help="downlink mahimahi trace file")
    p.add_argument(
        "--delay-ms",
        type=_nonneg_float,
        default=25.0,
        help="downlink one-way propagation delay before the queue (default 25)",
    )
    p.add_argument(
        "--uplink-delay-ms",
        type=_nonneg_float,
        default=25.0,
        help="uplink one-way delay (default 25)",
    )
    q = p.add_mutually_exclusive_group()
    q.add_argument(
        "--queue-packets", type=_pos_int, help="drop-tail limit in packets (default 1000)"
    )
    q.add_argument("--queue-bytes", type=_pos_int, help="drop-tail limit in bytes")
    p.add_argument("--loss", type=_loss, default=0.0, help="random downlink loss probability")
    p.add_argument("--seed", type=int, default=0, help="seed of the loss generator")
    u = p.add_mutually_exclusive_group()
    u.add_argument("--uplink-mbps", type=_pos_float, help="fixed uplink rate (default 50)")
    u.add_argument("--uplink-trace", help="uplink mahimahi trace file (instead of a fixed rate)")
    p.add_argument(
        "--log",
        required=True,
        help="downlink log (mahimahi format); sidecar LOG.meta.json is written beside it",
    )
    p.add_argument("--summary-json", help="write the run summary here on exit")
    p.add_argument("--flow-log", help="write every downlink departure per client flow here "
                   "(JSON: departure ms, bytes, queuing delay ms; relay.write_flow_log)")
    p.add_argument("--duration", type=_pos_float, help="stop after this many seconds")
    p.add_argument(
        "--spin-us",
        type=_nonneg_float,
        default=0.0,
        help="busy-poll instead of sleeping this close to an event (default 0)",
    )
    p.add_argument(
        "--priority",
        choices=["auto", "rt", "nice", "none"],
        default="auto",
        help="raise CPU priority for timely wake-ups (auto: SCHED_FIFO if permitted, else nice)",
    )
    p.add_argument(
        "--oracle-to",
        help="HOST:PORT of the server's oracle socket (--cc oracle): send it the capacity "
        "offered over the last base RTT, one uplink delay late",
    )
    p.add_argument(
        "--oracle-interval-ms",
        type=_pos_float,
        default=10.0,
        help="oracle report period, ms (default 10)",
    )
    p.add_argument(
        "--oracle-window-ms",
        type=_pos_float,
        help="oracle measurement window, ms (default: --delay-ms + --uplink-delay-ms)",
    )
    return p


def config_from_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> RelayConfig:
    """Validate parsed arguments into a :class:`RelayConfig` (``p.error`` exits with 2)."""
    try:
        listen = parse_hostport(a.listen)
        server = parse_hostport(a.server)
    except ValueError as e:
        p.error(str(e))
    if server[1] == 0:
        p.error("--server needs a real port, not 0")
    routes: list[tuple[tuple[str, int], tuple[str, int]]] = []
    for text in a.route:
        listen_s, sep, server_s = text.partition("=")
        if not sep:
            p.error(f"--route: expected LISTEN=SERVER, got {text!r}")
        try:
            r_listen, r_server = parse_hostport(listen_s), parse_hostport(server_s)
        except ValueError as e:
            p.error(f"--route: {e}")
        if r_server[1] == 0:
            p.error(f"--route: the server needs a real port, not 0 ({text!r})")
        routes.append((r_listen, r_server))
    oracle_to = None
    if a.oracle_to:
        try:
            oracle_to = parse_hostport(a.oracle_to)
        except ValueError as e:
            p.error(f"--oracle-to: {e}")
        if oracle_to[1] == 0:
            p.error("--oracle-to needs a real port, not 0")
    try:
        trace = load_trace(a.trace)
        uplink_trace = load_trace(a.uplink_trace) if a.uplink_trace else None
    except TraceError as e:
        p.error(f"bad trace: {e}")
    log = Path(a.log)
    if not log.parent.is_dir():
        p.error(f"--log: directory {log.parent} does not exist")
    if a.summary_json and not Path(a.summary_json).parent.is_dir():
        p.error(f"--summary-json: directory {Path(a.summary_json).parent} does not exist")
    if a.queue_bytes is not None:
        limit = QueueLimit(packets=None, bytes_=a.queue_bytes)
    else:
        limit = QueueLimit(packets=a.queue_packets if a.queue_packets is not None else 1000)
    return RelayConfig(
        server=server,
        trace=trace,
        log_path=log,
        listen=listen,
        delay_ms=a.delay_ms,
        uplink_delay_ms=a.uplink_delay_ms,
        queue_limit=limit,
        loss_rate=a.loss,
        seed=a.seed,
        uplink_rate_bps=(a.uplink_mbps if a.uplink_mbps is not None else 50.0) * 1e6,
        uplink_trace=uplink_trace,
        duration_s=a.duration,
        spin_us=a.spin_us,
        priority=a.priority,
        oracle_to=oracle_to,
        oracle_interval_ms=a.oracle_interval_ms,
        oracle_window_ms=a.oracle_window_ms,
        routes=tuple(routes),
        flow_log_path=Path(a.flow_log) if a.flow_log else None,
    )


def tcp_config_from_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> TcpRelayConfig:
    """``--tcp``: validate into a :class:`TcpRelayConfig` (``p.error`` exits with 2)."""
    if a.loss:
        p.error("--tcp: --loss is not possible (TCP bytes cannot be dropped)")
    if a.uplink_trace or a.uplink_mbps is not None:
        p.error("--tcp: the uplink is a fixed delay only (no --uplink-trace/--uplink-mbps)")
    if a.oracle_to:
        p.error("--tcp: --oracle-to is not supported")
    if a.route:
        p.error("--tcp: --route is not supported (one server)")
    if a.flow_log:
        p.error("--tcp: --flow-log is not supported")
    cfg = config_from_args(p, a)
    if a.queue_bytes is not None:
        limit = a.queue_bytes
    else:
        limit = (a.queue_packets if a.queue_packets is not None else 1000) * UNIT_BYTES
    try:
        return TcpRelayConfig(server=cfg.server, trace=cfg.trace, log_path=cfg.log_path,
                              listen=cfg.listen, delay_ms=cfg.delay_ms,
                              uplink_delay_ms=cfg.uplink_delay_ms, limit_bytes=limit,
                              duration_s=cfg.duration_s)
    except ValueError as e:
        p.error(f"--tcp: {e}")


def _main_tcp(p: argparse.ArgumentParser, a: argparse.Namespace) -> int:
    cfg = tcp_config_from_args(p, a)

    async def go() -> Any:
        relay = TcpRelay(cfg, on_ready=lambda info: _emit({"event": "ready", **info}))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, relay.request_stop)
        stats = await relay.run()
        return stats, relay

    try:
        stats, relay = asyncio.run(go())
    except OSError as e:
        p.error(f"cannot listen on {a.listen}: {e}")
    summary = build_summary(cfg.log_path, cfg.trace, stats)
    summary["tcp"] = {"limit_bytes": cfg.limit_bytes, "max_held_bytes": relay.max_held_bytes,
                      "backpressure_waits": relay.backpressure_waits}
    if a.summary_json:
        write_summary(a.summary_json, summary)
    _emit({"event": "done", "valid": summary["valid"], "summary": a.summary_json,
           "lateness_ms": summary["lateness_ms"], "cpu_s": summary["cpu_s"], "mode": "tcp"})
    return 0 if summary["valid"] else 3


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """Run the emulator CLI; returns the exit status."""
    p = build_parser()
    a = p.parse_args(argv)
    if a.tcp:
        return _main_tcp(p, a)
    cfg = config_from_args(p, a)
    relay = Relay(cfg, on_ready=lambda info: _emit({"event": "ready", **info}))
    try:
        relay.open()
    except OSError as e:
        p.error(f"cannot listen on {a.listen}: {e}")
    prev = {
        sig: signal.signal(sig, lambda *_: relay.request_stop())
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        stats = relay.run()
    finally:
        for sig, h in prev.items():
            signal.signal(sig, h)
    summary = build_summary(cfg.log_path, cfg.trace, stats)
    if a.summary_json:
        write_summary(a.summary_json, summary)
    _emit(
        {
            "event": "done",
            "valid": summary["valid"],
            "summary": a.summary_json,
            "lateness_ms": summary["lateness_ms"],
            "cpu_s": summary["cpu_s"],
        }
    )
    return 0 if summary["valid"] else 3
