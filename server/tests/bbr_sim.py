"""Test vocabulary for BBR (server/tests/test_bbr.py): a scripted sender/ACK API over one
controller and a closed-loop bottleneck under a simulated clock.

:class:`Script`: ``send(n, t)``, ``ack(packets, t)``, ``lose(packets, t)`` drive the
controller exactly as aioquic's recovery does (per-packet ACKs, then the RTT sample).
:class:`Bottleneck`: a sender limited by cwnd and paced by the controller's pacing rate
(a token bucket of one send quantum, as :mod:`nuwa_server.cc.pacing`), one FIFO link of
``rate_bytes_per_s`` with a drop-tail queue, ``rtt_s`` of propagation, an ACK per
packet, losses declared one RTT after the drop. Times s, sizes bytes.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from aioquic.quic.packet_builder import QuicSentPacket

from nuwa_server.cc.bbr import BbrCongestionControl
from nuwa_server.cc.bbr_model import BbrState

MSS = 1200
GRID = 2**20
"""Event times are multiples of 1/GRID s (about 1 µs), so differences are exact."""


class Script:
    """Send/ACK/loss vocabulary over one controller; packet numbers count up."""

    def __init__(self, cc: BbrCongestionControl) -> None:
        self.cc = cc
        self.pn = 0

    def send(self, n: int, t: float) -> list[QuicSentPacket]:
        """Send ``n`` packets of :data:`MSS` at ``t``, whatever the window."""
        out = []
        for _ in range(n):
            p = QuicSentPacket(epoch=3, in_flight=True, is_ack_eliciting=True,  # type: ignore[arg-type]
                               is_crypto_packet=False, packet_number=self.pn,
                               packet_type=0, sent_time=t, sent_bytes=MSS)  # type: ignore[arg-type]
            self.pn += 1
            self.cc.on_packet_sent(packet=p)
            out.append(p)
        return out

    def ack(self, packets: list[QuicSentPacket], t: float) -> None:
        """One ACK at ``t`` for ``packets`` (aioquic: each packet, then the RTT sample)."""
        for p in packets:
            self.cc.on_packet_acked(now=t, packet=p)
        if packets:
            self.cc.on_rtt_measurement(now=t, rtt=t - float(packets[-1].sent_time or 0.0))

    def lose(self, packets: list[QuicSentPacket], t: float) -> None:
        """Declare ``packets`` lost at ``t``."""
        self.cc.on_packets_lost(now=t, packets=packets)


@dataclass
class Sample:
    """The controller after one ACK or loss event."""

    t: float
    state: BbrState
    cwnd: int
    inflight: int
    pacing_rate: float
    max_bw: float
    bw: float
    min_rtt: float
    round_count: int
    inflight_hi: float
    queue_delay: float


@dataclass(order=True)
class _Event:
    t: float
    seq: int
    kind: str = field(compare=False)
    packet: QuicSentPacket | None = field(compare=False, default=None)


class Bottleneck:
    """Closed loop: the controller's sender over one drop-tail link (module doc).

    ``rate_fn(t)`` (bytes/s) overrides the constant rate when given; ``drop_fn(pn)``
    drops chosen packets on top of the queue's own drops; ``outage`` (start, end), s: the
    link serves nothing in that interval (a packet whose service would start in it starts
    at its end; the queue's drop test counts the wait before the outage only).
    """

    def __init__(self, cc: BbrCongestionControl, *, rate_bytes_per_s: float, rtt_s: float,
                 queue_bytes: float = float("inf"), rate_fn=None, drop_fn=None,
                 outage: tuple[float, float] | None = None) -> None:
        self.outage = outage
        self.script = Script(cc)
        self.cc = cc
        self.rate = rate_bytes_per_s
        self.rate_fn = rate_fn
        self.drop_fn = drop_fn
        self.rtt_s = rtt_s
        self.queue_bytes = queue_bytes
        self.t = 0.0
        self._events: list[_Event] = []
        self._seq = 0
        self._link_free_s = 0.0
        self._tokens_bytes = float(cc.send_quantum_bytes)
        self._tokens_t = 0.0
        self._wake_at: float | None = None
        self.samples: list[Sample] = []
        self.delivered_bytes = 0
        self.queue_delays: list[tuple[float, float]] = []  # (send time, queuing delay)
        self._last_qd = 0.0
        self.full_bw_counts: list[tuple[float, int, int]] = []
        """(time, BBR.full_bw_count, round) at each round start."""

    def _push(self, t: float, kind: str, packet: QuicSentPacket | None = None) -> None:
        t = math.ceil(t * GRID) / GRID  # exact binary fractions: RTTs without rounding noise
        self._seq += 1
        heapq.heappush(self._events, _Event(t, self._seq, kind, packet))

    def _rate_at(self, t: float) -> float:
        return self.rate_fn(t) if self.rate_fn is not None else self.rate

    def _refill(self, t: float) -> None:
        rate = self.cc.pacing_rate_bytes_per_s
        cap = max(float(self.cc.send_quantum_bytes), float(MSS))
        self._tokens_bytes = min(cap, self._tokens_bytes + (t - self._tokens_t) * rate)
        self._tokens_t = t

    def _try_send(self) -> None:
        t = self.t
        while self.cc.bytes_in_flight + MSS <= self.cc.congestion_window:
            self._refill(t)
            if self._tokens_bytes < MSS - 1e-6:
                wait = max((MSS - self._tokens_bytes) / self.cc.pacing_rate_bytes_per_s, 1e-7)
                if self._wake_at is None or self._wake_at > t + wait:
                    self._wake_at = t + wait
                    self._push(t + wait, "wake")
                return
            self._tokens_bytes = max(self._tokens_bytes - MSS, 0.0)
            (p,) = self.script.send(1, t)
            start = max(t, self._link_free_s)
            queued_bytes = (start - t) * self._rate_at(t)
            dropped = queued_bytes > self.queue_bytes or (
                self.drop_fn is not None and self.drop_fn(p.packet_number))
            if dropped:
                self._push(start + self.rtt_s + 0.001, "lost", p)
                continue
            if self.outage is not None and self.outage[0] <= start < self.outage[1]:
                start = self.outage[1]
            depart = math.ceil((start + MSS / self._rate_at(start)) * GRID) / GRID
            self._link_free_s = depart
            self._last_qd = start - t
            self.queue_delays.append((t, start - t))
            self._push(depart + self.rtt_s, "ack", p)

    def run(self, until_s: float) -> list[Sample]:
        """Run the loop until ``until_s``; returns the samples recorded so far."""
        if not self._events:
            self._try_send()
        while self._events and self._events[0].t <= until_s:
            ev = heapq.heappop(self._events)
            self.t = ev.t
            if ev.kind == "wake":
                if self._wake_at is not None and ev.t >= self._wake_at:
                    self._wake_at = None
            elif ev.kind == "ack" and ev.packet is not None:
                self.script.ack([ev.packet], ev.t)
                self.delivered_bytes += MSS
                self._record()
            elif ev.kind == "lost" and ev.packet is not None:
                self.script.lose([ev.packet], ev.t)
                self._record()
            self._try_send()
        self.t = until_s
        return self.samples

    def _record(self) -> None:
        cc = self.cc
        if cc.round_start:
            self.full_bw_counts.append((self.t, cc.full_bw_count, cc.round_count))
        self.samples.append(Sample(
            t=self.t, state=cc.state, cwnd=cc.congestion_window, inflight=cc.bytes_in_flight,
            pacing_rate=cc.pacing_rate_bytes_per_s, max_bw=cc.max_bw_bytes_per_s,
            bw=cc.bw_bytes_per_s, min_rtt=cc.min_rtt_s, round_count=cc.round_count,
            inflight_hi=cc.inflight_hi_bytes, queue_delay=self._last_qd))
