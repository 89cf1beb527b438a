"""Trace-driven link emulator with mahimahi ``mm-link`` semantics.

Pure models (no clock, no I/O): :class:`TraceLink` (the bottleneck),
:class:`RateLink`, :class:`DelayLine`. Real-time relay: :class:`Relay`.
Log truth: :func:`analyze_log`, :func:`packet_records`, :func:`packet_delays`.
CLI: ``python -m nuwa_lab.emulator --help``.
"""

from .analysis import (
    LogMetrics,
    PacketRecord,
    analyze_log,
    packet_delays,
    packet_records,
    parse_log,
)
from .delay import DelayLine
from .link import Departure, LinkCounters, LinkRecorder, QueueLimit, TraceLink
from .mmlog import (
    MahimahiLogWriter,
    read_sidecar,
    server_send_us_to_log_ms,
    sidecar_path,
    write_sidecar,
)
from .rate import RateLink
from .relay import Relay, RelayConfig, RunStats
from .summary import build_summary, write_summary
from .trace import (
    PACKET_SIZE_BYTES,
    Trace,
    TraceError,
    constant_rate_trace,
    load_trace,
    parse_trace,
)

__all__ = [
    "PACKET_SIZE_BYTES",
    "DelayLine",
    "Departure",
    "LinkCounters",
    "LinkRecorder",
    "LogMetrics",
    "MahimahiLogWriter",
    "PacketRecord",
    "QueueLimit",
    "RateLink",
    "Relay",
    "RelayConfig",
    "RunStats",
    "Trace",
    "TraceError",
    "TraceLink",
    "analyze_log",
    "build_summary",
    "constant_rate_trace",
    "load_trace",
    "packet_delays",
    "packet_records",
    "parse_log",
    "parse_trace",
    "read_sidecar",
    "server_send_us_to_log_ms",
    "sidecar_path",
    "write_sidecar",
    "write_summary",
]
