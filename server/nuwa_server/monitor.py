"""A monitor of every flow the server holds: throughput, RTT, jitter, loss, and what only a
receiver-driven server has, the receiver's window and the queuing delay its grants show;
flags unfairness and starvation (issue 18 item 2).

Sans-I/O: the caller feeds cumulative counters and samples with ``now_us`` and asks for a
:class:`MonitorReport`; nothing here reads a clock or does I/O. Times µs, sizes bytes, rates
bit/s.

Per flow, over the last ``window_us`` (the seed paper's state, ``drl-cca-switching.txt`` §4
"State space": throughput, RTT, loss rate, jitter):

* ``throughput_bps``: delivered bytes (cumulative counter, e.g. bytes acknowledged or the
  receiver's reported ``cum_received_bytes``) over the window × 8 ÷ the window's span;
* ``rtt_ms``: mean of the RTT samples in the window;
* ``jitter_ms``: mean absolute difference of consecutive RTT samples (the interarrival
  jitter of RFC 3550 §6.4.1 without its 1/16 smoothing);
* ``loss_rate``: packets lost ÷ packets sent over the window (cumulative counters);
* ``window_bytes``: the receiver's last granted window (None: not a Nuwa flow);
* ``queuing_delay_ms`` {last, min}: RTT sample − the flow's min RTT; ``min`` over the window
  is 0 as soon as the queue drained once in it.

Flags (definitions stated, sources cited):

* **unfair**: Jain's index (Jain, Chiu & Hawe 1984, Eq. 1: (Σx)² ÷ (n Σx²)) of the
  throughputs of the flows active over the whole window is below ``unfair_below`` (0.8,
  the issue's threshold);
* **starving**: a flow whose throughput stays below ``starve_fraction`` (0.2) of its fair
  share for more than ``starve_min_us`` (5 s). Arun, Alizadeh & Balakrishnan, "Starvation
  in End-to-End Congestion Control", SIGCOMM 2022, §2, call a CCA s-starving when one flow
  can get less than 1/s of another's throughput for an unbounded time; the 20 %-for-5 s
  threshold is the issue's operational form (and the simulator's, ``sendersim.metrics``).
  The fair share is ``capacity_bps`` ÷ the active flows when the caller knows the capacity,
  else the mean throughput of the active flows (equal split of what they jointly get).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """Thresholds (module doc). Raises ValueError from :meth:`validate` on nonsense."""

    window_us: int = 2_000_000
    unfair_below: float = 0.8
    starve_fraction: float = 0.2
    starve_min_us: int = 5_000_000

    def validate(self) -> MonitorConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.window_us <= 0:
            raise ValueError(f"window_us must be > 0, got {self.window_us}")
        if not 0 < self.unfair_below <= 1:
            raise ValueError(f"unfair_below must be in (0, 1], got {self.unfair_below}")
        if not 0 < self.starve_fraction < 1:
            raise ValueError(f"starve_fraction must be in (0, 1), got {self.starve_fraction}")
        if self.starve_min_us < 0:
            raise ValueError(f"starve_min_us must be >= 0, got {self.starve_min_us}")
        return self


@dataclass(frozen=True, slots=True)
class FlowStats:
    """One flow's figures over the monitor's window (module doc for definitions)."""

    flow_id: int
    throughput_bps: float
    rtt_ms: float | None
    jitter_ms: float | None
    loss_rate: float | None
    window_bytes: int | None
    queuing_delay_ms: float | None
    min_queuing_delay_ms: float | None
    starving_for_ms: float
    starving: bool


@dataclass(frozen=True, slots=True)
class MonitorReport:
    """All flows at one instant: per-flow stats, Jain's index over the flows active the
    whole window (None when fewer than two), and the flags."""

    now_us: int
    flows: tuple[FlowStats, ...]
    jain_index: float | None
    unfair: bool
    starving: tuple[int, ...]


@dataclass(slots=True)
class _Flow:
    start_us: int
    counters: deque[tuple[int, int, int, int]] = field(default_factory=deque)
    """(t, delivered bytes, sent packets, lost packets), cumulative."""
    rtts: deque[tuple[int, int]] = field(default_factory=deque)
    """(t, rtt µs)."""
    min_rtt_us: int | None = None
    window_bytes: int | None = None
    starving_since_us: int | None = None


def jain_index(xs: list[float]) -> float:
    """(Σx)² ÷ (n Σx²) (Jain, Chiu & Hawe 1984, Eq. 1); ValueError if empty or all zero."""
    if not xs or not any(xs):
        raise ValueError("jain_index: need at least one non-zero value")
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


class FlowMonitor:
    """Flows by id; feed with :meth:`on_counters`, :meth:`on_rtt`, :meth:`on_window`;
    read with :meth:`report` (module doc)."""

    def __init__(self, config: MonitorConfig | None = None) -> None:
        self.config = (config or MonitorConfig()).validate()
        self._flows: dict[int, _Flow] = {}

    def add_flow(self, flow_id: int, now_us: int) -> None:
        """Start watching ``flow_id`` (ValueError if it is already watched)."""
        if flow_id in self._flows:
            raise ValueError(f"flow {flow_id} is already monitored")
        self._flows[flow_id] = _Flow(now_us)

    def remove_flow(self, flow_id: int) -> None:
        """Stop watching ``flow_id`` (a flow that ended); unknown ids are ignored."""
        self._flows.pop(flow_id, None)

    def _flow(self, flow_id: int) -> _Flow:
        try:
            return self._flows[flow_id]
        except KeyError:
            raise KeyError(f"flow {flow_id} is not monitored") from None

    def on_counters(self, flow_id: int, now_us: int, delivered_bytes: int,
                    sent_packets: int = 0, lost_packets: int = 0) -> None:
        """Cumulative counters of ``flow_id`` at ``now_us`` (KeyError: unknown flow)."""
        f = self._flow(flow_id)
        f.counters.append((now_us, delivered_bytes, sent_packets, lost_packets))
        self._trim(f, now_us)

    def on_rtt(self, flow_id: int, now_us: int, rtt_us: int) -> None:
        """One RTT sample, µs (negative samples are ignored)."""
        f = self._flow(flow_id)
        if rtt_us < 0:
            return
        f.rtts.append((now_us, rtt_us))
        if f.min_rtt_us is None or rtt_us < f.min_rtt_us:
            f.min_rtt_us = rtt_us
        self._trim(f, now_us)

    def on_window(self, flow_id: int, window_bytes: int) -> None:
        """The receiver's newest granted window, bytes."""
        self._flow(flow_id).window_bytes = window_bytes

    def _trim(self, f: _Flow, now_us: int) -> None:
        edge = now_us - self.config.window_us
        # keep one counter sample at or before the window's start (the baseline)
        while len(f.counters) > 1 and f.counters[1][0] <= edge:
            f.counters.popleft()
        while f.rtts and f.rtts[0][0] < edge:
            f.rtts.popleft()

    def flow_stats(self, flow_id: int, now_us: int) -> FlowStats:
        """``flow_id``'s figures over the window ending at ``now_us`` (without the
        starvation state, which :meth:`report` keeps)."""
        f = self._flow(flow_id)
        self._trim(f, now_us)
        thr = 0.0
        loss: float | None = None
        if len(f.counters) >= 2:
            (t0, d0, s0, l0), (t1, d1, s1, l1) = f.counters[0], f.counters[-1]
            if t1 > t0:
                thr = (d1 - d0) * 8e6 / (t1 - t0)
            if s1 > s0:
                loss = (l1 - l0) / (s1 - s0)
        rtts = [r for _, r in f.rtts]
        rtt_ms = sum(rtts) / len(rtts) / 1000 if rtts else None
        jitter_ms = (sum(abs(b - a) for a, b in zip(rtts, rtts[1:], strict=False))
                     / (len(rtts) - 1) / 1000) if len(rtts) >= 2 else None
        qd = qd_min = None
        if rtts and f.min_rtt_us is not None:
            qd = (rtts[-1] - f.min_rtt_us) / 1000
            qd_min = (min(rtts) - f.min_rtt_us) / 1000
        since = f.starving_since_us
        starving_ms = (now_us - since) / 1000 if since is not None else 0.0
        return FlowStats(flow_id, thr, rtt_ms, jitter_ms, loss, f.window_bytes, qd, qd_min,
                         starving_ms, starving_ms * 1000 > self.config.starve_min_us)

    def report(self, now_us: int, capacity_bps: float | None = None) -> MonitorReport:
        """Every flow's stats and the flags at ``now_us`` (module doc); updates each flow's
        starvation clock, so call it regularly (e.g. every 100 ms)."""
        cfg = self.config
        stats = {i: self.flow_stats(i, now_us) for i in self._flows}
        full = [i for i, f in self._flows.items() if now_us - f.start_us >= cfg.window_us]
        thr = [stats[i].throughput_bps for i in full]
        fair = None
        if full:
            fair = capacity_bps / len(full) if capacity_bps else sum(thr) / len(full)
        for i, f in self._flows.items():
            below = fair is not None and i in full and stats[i].throughput_bps < (
                cfg.starve_fraction * fair)
            if below and f.starving_since_us is None:
                f.starving_since_us = now_us
            elif not below:
                f.starving_since_us = None
        stats = {i: self.flow_stats(i, now_us) for i in self._flows}
        jain = jain_index(thr) if len(thr) >= 2 and any(thr) else None
        return MonitorReport(now_us, tuple(stats[i] for i in sorted(stats)), jain,
                             jain is not None and jain < cfg.unfair_below,
                             tuple(i for i in sorted(stats) if stats[i].starving))
