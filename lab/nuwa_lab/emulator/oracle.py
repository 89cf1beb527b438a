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

With each report go the emulator's delivered-bytes clocks, one per client
flow: the cumulative bytes (UDP payloads) of that flow's downlink packets
that left the bottleneck queue toward the client, and those the queue
dropped, both as of link time t. The server subtracts them from the bytes it
sent to that flow to know what is still in the network, one uplink delay late
(issue 13 item 3; :mod:`nuwa_server.oracle_sender`). A flow is named by the
UDP port of the emulator's socket toward the server (the peer port the
server sees for that client).

The message's wire format: :mod:`nuwa_server.oracle_wire` (in the product, so the server
reads it without the lab).
"""

from __future__ import annotations

import bisect

from nuwa_server.oracle_wire import (  # the codec lives in the product: the server reads it
    ORACLE_FLOW_BYTES,
    ORACLE_MAGIC,
    ORACLE_MAX_FLOWS,
    ORACLE_MESSAGE_BYTES,
    ORACLE_VERSION,
    FlowBytes,
    OracleMessageError,
    OracleReport,
    decode_report,
    encode_report,
)

from .trace import PACKET_SIZE_BYTES, Trace

__all__ = [
    "ORACLE_FLOW_BYTES",
    "ORACLE_MAGIC",
    "ORACLE_MAX_FLOWS",
    "ORACLE_MESSAGE_BYTES",
    "ORACLE_VERSION",
    "CapacityCounter",
    "FlowBytes",
    "OracleMessageError",
    "OracleReport",
    "decode_report",
    "encode_report",
]


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
