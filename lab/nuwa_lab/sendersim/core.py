"""The simulated clock and the path: events in time order, two propagation delays and the
Mahimahi bottleneck shared by every flow.

Clock: simulated ms (float), advanced from event to event (a discrete-event simulation, not
fixed steps); aioquic is handed the same instant in seconds (``now_s`` = ms / 1000). Events
at the same instant run in the order they were scheduled, so a run is deterministic.

Path (the emulator's, ``lab/nuwa_lab/emulator``; docs/ARCHITECTURE.md diagram): a packet
written at t reaches the bottleneck at t + ``one_way_delay_ms`` (mm-delay on the downlink),
queues in the emulator's own :class:`~nuwa_lab.emulator.TraceLink` (Mahimahi opportunities of
1504 bytes, drop-tail in packets, the packet in transit outside the limit; checked against
spec/link_vectors.json), and reaches the receiver when it leaves the queue; what the receiver
sends back (ACKs, grants) reaches the sender ``one_way_delay_ms`` later (the uplink's rate is
not modelled: ACKs and grants are small); with ``loss_rate`` > 0 a seeded draw drops each packet
before the queue with that probability (mm-loss on the downlink). Truth per packet, as the
emulator logs it: queuing delay = departure opportunity − arrival at the queue, ms
(docs/DESIGN.md "How it is measured").
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from nuwa_lab.emulator import QueueLimit, Trace, TraceLink


class Sim:
    """The event queue and the simulated clock (ms)."""

    def __init__(self) -> None:
        self.now_ms = 0.0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    @property
    def now_s(self) -> float:
        """The current instant in seconds (aioquic's unit)."""
        return self.now_ms / 1000.0

    def at(self, t_ms: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` at simulated ``t_ms`` (never before now: an earlier time runs now)."""
        self._seq += 1
        heapq.heappush(self._heap, (max(t_ms, self.now_ms), self._seq, fn))

    def run_until(self, end_ms: float) -> None:
        """Run every event at or before ``end_ms``; the clock then reads ``end_ms``."""
        heap = self._heap
        while heap and heap[0][0] <= end_ms:
            t_ms, _, fn = heapq.heappop(heap)
            self.now_ms = t_ms
            fn()
        self.now_ms = end_ms


@dataclass(slots=True)
class WirePacket:
    """One QUIC packet on the path: its flow, packet number, the frame it carries (``frame_seq``
    in the flow's stream, its send stamp ``send_us`` for the receiver), its size on the wire
    (bytes) and when it was written (``sent_ms``)."""

    flow: int
    packet_number: int
    frame_seq: int
    size_bytes: int
    sent_ms: float
    send_us: int
    is_control: bool = False


class Receiver(Protocol):
    """What the path hands a packet to when it leaves the bottleneck."""

    def on_packet(self, pkt: WirePacket, now_ms: float, queue_delay_ms: float) -> None: ...


@dataclass
class FlowTruth:
    """Per flow, what the bottleneck saw (the emulator log's view): departures as
    (depart_ms, wire bytes, queuing delay ms) and dropped packets."""

    depart_ms: list[float] = field(default_factory=list)
    size_bytes: list[int] = field(default_factory=list)
    queue_delay_ms: list[float] = field(default_factory=list)
    dropped_packets: int = 0
    sent_packets: int = 0


class Path:
    """Downlink delay → trace bottleneck → receiver; uplink delay back (module doc)."""

    def __init__(self, sim: Sim, trace: Trace, queue_packets: int | None,
                 one_way_delay_ms: float, loss_rate: float = 0.0, loss_seed: int = 0) -> None:
        if one_way_delay_ms < 0:
            raise ValueError(f"one_way_delay_ms must be >= 0, got {one_way_delay_ms}")
        if not 0.0 <= loss_rate < 1.0:
            raise ValueError(f"loss_rate must be in [0, 1), got {loss_rate}")
        self.loss_rate = loss_rate
        self._loss_rng = random.Random(loss_seed)
        self.sim = sim
        self.trace = trace
        self.one_way_delay_ms = one_way_delay_ms
        self.link: TraceLink[WirePacket] = TraceLink(trace, QueueLimit(queue_packets, None))
        self.receivers: list[Receiver] = []
        self.truth: list[FlowTruth] = []
        self._service_pending = False

    def attach(self, receiver: Receiver) -> int:
        """Register a flow's receiver; returns the flow index packets must carry."""
        self.receivers.append(receiver)
        self.truth.append(FlowTruth())
        return len(self.receivers) - 1

    def send(self, pkt: WirePacket) -> None:
        """The sender writes ``pkt`` now; it reaches the bottleneck one one-way delay later."""
        self.truth[pkt.flow].sent_packets += 1
        self.sim.at(self.sim.now_ms + self.one_way_delay_ms, lambda: self._arrive(pkt))

    def back(self, fn: Callable[[], None]) -> None:
        """Something the receiver sends now (an ACK, a grant) reaches the sender as ``fn``."""
        self.sim.at(self.sim.now_ms + self.one_way_delay_ms, fn)

    def _arrive(self, pkt: WirePacket) -> None:
        # random loss before the queue (the PBQ paper's Fig. 9–10 setting; mm-loss downlink)
        if self.loss_rate > 0 and self._loss_rng.random() < self.loss_rate:
            self.truth[pkt.flow].dropped_packets += 1
            return
        if not self.link.enqueue(self.sim.now_ms, pkt.size_bytes, pkt):
            self.truth[pkt.flow].dropped_packets += 1
            return
        self._schedule_service()

    def _schedule_service(self) -> None:
        if self._service_pending:
            return
        t = self.link.next_service_ms()
        if t is not None:
            self._service_pending = True
            self.sim.at(t, self._service)

    def _service(self) -> None:
        self._service_pending = False
        now = self.sim.now_ms
        for d in self.link.service(now):
            pkt = d.item
            qd = d.departure_ms - d.arrival_ms
            tr = self.truth[pkt.flow]
            tr.depart_ms.append(d.departure_ms)
            tr.size_bytes.append(d.size_bytes)
            tr.queue_delay_ms.append(qd)
            self.receivers[pkt.flow].on_packet(pkt, d.departure_ms, qd)
        self._schedule_service()
