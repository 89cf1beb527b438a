"""The causal capacity oracle: what the link offered over the last RTT, told to the server late.

Issue 5's physical reference sender (``--cc oracle``): every ``interval_ms`` of
link time t the emulator takes the capacity the trace offered in
``(t − window_ms, t]`` (delivery opportunities × 1504 bytes, mahimahi
``PACKET_SIZE``), where ``window_ms`` is the base RTT (downlink + uplink
propagation delay), and sends it to the server's oracle port one uplink delay
later, at t + ``uplink_delay_ms``. That is the best any receiver could know
causally: it sees the opportunities of (t − RTT, t] at the bottleneck's exit
by t, and its report reaches the server one one-way delay later
(docs/DESIGN.md §3, "causal oracle"). The server sets its window to that many
bytes, i.e. capacity × base RTT.

Pure parts only (no sockets, no clock): :class:`CapacityCounter` and the
message codec. The relay (:mod:`.relay`) schedules and sends.

Message (UDP payload, big-endian, 29 bytes): magic ``b"NWOR"`` (4), version
1 (u8), link time t of the measurement (f64 ms), window_ms (u32),
capacity_bytes offered in (t − window_ms, t] (u64), sequence (u32).
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from .trace import PACKET_SIZE_BYTES, Trace

ORACLE_MAGIC = b"NWOR"
ORACLE_VERSION = 1
_FMT = struct.Struct("!4sBdIQI")
ORACLE_MESSAGE_BYTES = _FMT.size
"""Size of one oracle message, bytes (29)."""


class OracleMessageError(ValueError):
    """An oracle datagram is malformed; the message says how."""


@dataclass(frozen=True, slots=True)
class OracleReport:
    """One capacity report.

    ``t_ms``: link time at the end of the measured interval, ms after the
    emulator's base timestamp; ``window_ms``: interval length, ms (the base
    RTT); ``capacity_bytes``: bytes the trace offered in ``(t_ms − window_ms,
    t_ms]``; ``seq``: report number, from 0.
    """

    t_ms: float
    window_ms: int
    capacity_bytes: int
    seq: int

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
    return _FMT.pack(ORACLE_MAGIC, ORACLE_VERSION, r.t_ms, r.window_ms, r.capacity_bytes,
                     r.seq % 2**32)


def decode_report(data: bytes) -> OracleReport:
    """Decode one datagram; :class:`OracleMessageError` on a bad length, magic or version."""
    if len(data) != ORACLE_MESSAGE_BYTES:
        raise OracleMessageError(
            f"oracle message must be {ORACLE_MESSAGE_BYTES} bytes, got {len(data)}"
        )
    magic, version, t_ms, window_ms, cap, seq = _FMT.unpack(data)
    if magic != ORACLE_MAGIC:
        raise OracleMessageError(f"bad oracle magic {magic!r}")
    if version != ORACLE_VERSION:
        raise OracleMessageError(f"unsupported oracle version {version}")
    if window_ms == 0:
        raise OracleMessageError("oracle window_ms is 0")
    return OracleReport(t_ms, window_ms, cap, seq)


class CapacityCounter:
    """Capacity a looped trace offers over an interval, in O(log n) per query.

    Opportunities follow :meth:`Trace.iter_opportunities_ms` (loop L adds
    L × period; the offset-0 opportunities of loop L+1 coincide with the last
    of loop L, as in mahimahi ``link_queue.cc``).
    """

    def __init__(self, trace: Trace) -> None:
        self._opps = trace.opportunities_ms
        self._period = trace.period_ms
        self._n = len(trace.opportunities_ms)

    def count_le(self, t_ms: int) -> int:
        """Number of opportunities at link times ≤ ``t_ms`` (0 for t < 0)."""
        if t_ms < 0:
            return 0
        loops = t_ms // self._period
        return loops * self._n + bisect.bisect_right(self._opps, t_ms - loops * self._period)

    def capacity_bytes(self, start_ms: float, end_ms: float) -> int:
        """Bytes offered in ``(start_ms, end_ms]`` (times floored to whole ms), bytes."""
        if end_ms < start_ms:
            raise ValueError(f"end_ms {end_ms} < start_ms {start_ms}")
        hi = self.count_le(int(end_ms // 1))
        lo = self.count_le(int(start_ms // 1))
        return (hi - lo) * PACKET_SIZE_BYTES
