"""The capacity oracle's message: what the emulator tells the server, and how it is encoded.

The wire format of issue 5's causal oracle (``--cc oracle``): the emulator
(the lab's ``nuwa_lab.emulator.oracle``) measures and sends, the server
(:mod:`.oracle_sender`, :mod:`.server`) decodes. It lives in the product because
the server must read it without the lab installed.

Message (UDP payload, big-endian): a 43-byte header, magic ``b"NWOR"`` (4),
version 2 (u8), link time t of the measurement (f64 ms), window_ms (u32),
report interval (u32 µs), capacity_bytes offered in (t − window_ms, t]
(u64), sequence (u32), due time (f64 ms, CLOCK_MONOTONIC: when the emulator
sends it, t + uplink delay; 0 if unknown), flow count n (u16); then n flow
entries of 18 bytes:
port (u16), delivered_bytes (u64), dropped_bytes (u64), cumulative since the
emulator started.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

ORACLE_MAGIC = b"NWOR"
ORACLE_VERSION = 2
_FMT = struct.Struct("!4sBdIIQIdH")
_FLOW = struct.Struct("!HQQ")
ORACLE_MESSAGE_BYTES = _FMT.size
"""Size of an oracle message without flow entries (the header), bytes (43)."""
ORACLE_FLOW_BYTES = _FLOW.size
"""Size of one flow entry, bytes (18)."""
ORACLE_MAX_FLOWS = 64
"""Most flow entries in one message (43 + 64 × 18 = 1195 bytes, one datagram)."""


class OracleMessageError(ValueError):
    """An oracle datagram is malformed; the message says how."""


@dataclass(frozen=True, slots=True)
class FlowBytes:
    """One flow's delivered-bytes clock at the report's link time.

    ``port``: UDP port of the emulator's socket toward the server for this
    client (the peer port the server sees); ``delivered_bytes``: cumulative
    UDP payload bytes of the flow's downlink packets that left the bottleneck
    toward the client; ``dropped_bytes``: those the queue dropped (drop-tail
    or random loss). Both cumulative since the emulator started, bytes.
    """

    port: int
    delivered_bytes: int
    dropped_bytes: int


@dataclass(frozen=True, slots=True)
class OracleReport:
    """One capacity report.

    ``t_ms``: link time at the end of the measured interval, ms after the
    emulator's base timestamp; ``window_ms``: interval length, ms (the base
    RTT); ``capacity_bytes``: bytes the trace offered in ``(t_ms − window_ms,
    t_ms]``; ``seq``: report number, from 0; ``interval_ms``: time between
    reports, ms (µs resolution on the wire); ``flows``: the delivered-bytes
    clock of each client flow (:class:`FlowBytes`), at most
    :data:`ORACLE_MAX_FLOWS`; ``due_monotonic_ms``: CLOCK_MONOTONIC ms at which
    the emulator sends the report (t + uplink delay on the host's clock, which
    the server shares: how late the server reads it), 0 if unknown.
    """

    t_ms: float
    window_ms: int
    capacity_bytes: int
    seq: int
    interval_ms: float = 0.0
    flows: tuple[FlowBytes, ...] = ()
    due_monotonic_ms: float = 0.0

    @property
    def capacity_bps(self) -> float:
        """Mean offered rate over the window, bit/s."""
        return self.capacity_bytes * 8 * 1000.0 / self.window_ms


def encode_report(r: OracleReport) -> bytes:
    """Encode a report (see module doc). Raises ``ValueError`` on out-of-range fields."""
    if not 0 < r.window_ms < 2**32:
        raise ValueError(f"window_ms must be in 1..2^32-1, got {r.window_ms}")
    if not 0 <= r.capacity_bytes < 2**64:
        raise ValueError(f"capacity_bytes must be in 0..2^64-1, got {r.capacity_bytes}")
    interval_us = round(r.interval_ms * 1000.0)
    if not 0 <= interval_us < 2**32:
        raise ValueError(f"interval_ms must be in 0..4294 s, got {r.interval_ms}")
    if len(r.flows) > ORACLE_MAX_FLOWS:
        raise ValueError(f"at most {ORACLE_MAX_FLOWS} flows per report, got {len(r.flows)}")
    out = [_FMT.pack(ORACLE_MAGIC, ORACLE_VERSION, r.t_ms, r.window_ms, interval_us,
                     r.capacity_bytes, r.seq % 2**32, r.due_monotonic_ms, len(r.flows))]
    for f in r.flows:
        if not 0 <= f.port < 2**16:
            raise ValueError(f"flow port must be in 0..65535, got {f.port}")
        out.append(_FLOW.pack(f.port, f.delivered_bytes % 2**64, f.dropped_bytes % 2**64))
    return b"".join(out)


def decode_report(data: bytes) -> OracleReport:
    """Decode one datagram; :class:`OracleMessageError` on a bad length, magic or version."""
    if len(data) < ORACLE_MESSAGE_BYTES:
        raise OracleMessageError(
            f"oracle message must be at least {ORACLE_MESSAGE_BYTES} bytes, got {len(data)}"
        )
    magic, version, t_ms, window_ms, interval_us, cap, seq, due_ms, n = _FMT.unpack_from(data)
    if magic != ORACLE_MAGIC:
        raise OracleMessageError(f"bad oracle magic {magic!r}")
    if version != ORACLE_VERSION:
        raise OracleMessageError(f"unsupported oracle version {version}")
    if window_ms == 0:
        raise OracleMessageError("oracle window_ms is 0")
    if len(data) != ORACLE_MESSAGE_BYTES + n * ORACLE_FLOW_BYTES:
        raise OracleMessageError(
            f"oracle message with {n} flows must be "
            f"{ORACLE_MESSAGE_BYTES + n * ORACLE_FLOW_BYTES} bytes, got {len(data)}"
        )
    flows = tuple(FlowBytes(*_FLOW.unpack_from(data, ORACLE_MESSAGE_BYTES + i * ORACLE_FLOW_BYTES))
                  for i in range(n))
    return OracleReport(t_ms, window_ms, cap, seq, interval_us / 1000.0, flows, due_ms)
