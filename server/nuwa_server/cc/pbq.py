"""PBQ (PBQ-enhanced QUIC, Sensors 2023; docs/PBQ.md): BBR sets the pacing rate, an agent
sets the congestion window every 100 ms (``--cc pbq``).

Sans-I/O like :mod:`.bbr`, which it extends: every time is a packet's or the ``now`` passed
in (s); sizes bytes, rates bytes/s. The controller holds the *monitor* and the *action
rule*; whatever runs the policy (the server's :mod:`.pbq_agent`, the training environment in
``models/pbq_rl``) calls, every :data:`INTERVAL_S` of the connection's clock:

1. :meth:`PbqCongestionControl.observe` ``(now)`` → the state (docs/PBQ.md "State": 17
   features of the interval just closed, the last 4 intervals oldest first, 68 floats,
   :data:`STATE_VERSION`); the interval's measurements stay in ``last_interval``;
2. :meth:`PbqCongestionControl.apply_action` ``(a, now)``: ``cwnd ← clamp(cwnd_prev · 2^a,
   floor, ceiling)`` (docs/PBQ.md "Control loop"; the paper §3.2's continuous ratio), the
   bounds BBR's model (:meth:`PbqCongestionControl.cwnd_bounds_bytes`, action rule
   :data:`ACTION_RULE_VERSION`);
3. or :meth:`PbqCongestionControl.fall_back` ``(reason)``: plain BBR from then on.

Between decisions BBR's own cwnd computations are ignored (its pacing rate is kept), but the
agent's window is clamped again on every ACK to the bounds of BBR's current model: never
below the flight that sustains BBR's pacing rate for one min RTT (so BBR's ProbeBW_UP can
probe and Startup runs as BBR's), never above BBR's own target flight (cwnd_gain BDPs plus
the ACK-aggregation allowance), and under ProbeRTT's cap (draft-ietf-ccwg-bbr
BBRBoundCwndForProbeRTT) so the min-RTT filter the state reads does not age. Before the
first decision, BBR's own window holds. Persistent congestion collapses the agent's window
too (RFC 9002 §7.6.2).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aioquic.quic.congestion.base import register_congestion_control
from aioquic.quic.packet_builder import QuicSentPacket

from .bbr import BbrCongestionControl
from .bbr_model import INF, BbrState
from .rate_sample import RateSample

PBQ_CC_NAME = "pbq"
"""aioquic congestion-control name of :class:`PbqCongestionControl`."""
STATE_VERSION = "pbq-state-v1"
"""Version of the state vector's layout (:data:`FEATURES`, :data:`FRAMES`); an ONNX model
carries it in its metadata and the server refuses a model with another."""
ACTION_RULE_VERSION = "pbq-action-v2"
"""Version of the action rule (:meth:`PbqCongestionControl.apply_action`); an ONNX model
carries it in its metadata (``action_rule_version``) and the server refuses a model trained
for another. v1 (ninth session): ``clamp(cwnd_prev · 2^a, 4 MSS, 2 · BDP_max)``, the agent's
window replacing BBR's; v2 (twenty-first session): the bounds follow BBR's model."""
ACTION_RULE = ("cwnd <- clamp(cwnd_prev * 2^a, BBRInflight(pacing_gain) + extra_acked, "
               "BBRInflight(cwnd_gain) + extra_acked), a in [-1, 1], re-clamped every ACK")
"""The rule of :data:`ACTION_RULE_VERSION` in one line, for a model's metadata (``action_rule``)."""
INTERVAL_S = 0.1
"""The agent's decision interval, s (the paper's 100 ms)."""
FRAMES = 4
"""Intervals in the state, oldest first (docs/PBQ.md "Frame stack", as Orca and Aurora)."""
BBR_STATES: tuple[BbrState, ...] = tuple(BbrState)
"""BBR's states in the one-hot's order (the enum's: Startup, Drain, ProbeBW_DOWN, _CRUISE,
_REFILL, _UP, ProbeRTT)."""
FEATURES: tuple[str, ...] = (
    "pacing_rate_over_max_delivery_rate",
    "delivery_rate_over_max_delivery_rate",
    "latest_rtt_over_min_rtt",
    "smoothed_rtt_over_min_rtt",
    "min_rtt_s",
    "interval_over_100ms",
    "loss_rate",
    "cwnd_over_bdp",
    "inflight_over_cwnd",
    *(f"bbr_state_{s.value}" for s in BBR_STATES),
    "last_action",
)
"""One interval's features, in order (docs/PBQ.md "State", rows 1–11)."""
FRAME_SIZE = len(FEATURES)
"""Features per interval (17)."""
STATE_SIZE = FRAME_SIZE * FRAMES
"""Length of the state vector (68)."""
FEATURE_MAX = 10.0
"""Finite normalised features are clipped to [0, this] (the action to [−1, 1]), so a
burst of one interval cannot dominate the network's input."""
SRTT_GAIN = 1 / 8
"""Smoothed RTT's EWMA gain (RFC 9002 §5.3, without the ACK delay: the controller is not
given it)."""


def _clip(x: float, lo: float, hi: float) -> float:
    """Clip a finite ``x``; NaN and ±inf pass through, so the runner sees and refuses them."""
    if not math.isfinite(x):
        return x
    return min(max(x, lo), hi)


def _ratio(num: float, den: float) -> float:
    """num / den, 0 while the denominator is unknown (0 or infinite)."""
    if den == 0 or den == INF:
        return 0.0
    return num / den


@dataclass(frozen=True, slots=True)
class PbqInterval:
    """One closed monitor interval (docs/PBQ.md "State"): what it measured.

    Attributes:
        start_s, end_s: the interval, s of the connection's clock.
        sent_packets, lost_packets: packets sent in it and declared lost in it.
        delivered_bytes: bytes acknowledged in it.
        delivery_rate_bytes_per_s: delivered_bytes / (end_s − start_s).
        max_delivery_rate_bytes_per_s: the largest delivery rate seen so far (intervals and
            BBR's max-bandwidth filter), bytes/s.
        latest_rtt_s: the last RTT sample, s (0 before one).
        smoothed_rtt_s: the EWMA of the samples (RFC 9002 §5.3 gain), s.
        min_rtt_s: BBR's min RTT (draft BBR.min_rtt), else the connection's, s (0 before one).
        cwnd_bytes, bytes_in_flight: at the interval's end.
        state: BBR's state at the interval's end.
        app_limited: the sender ran out of data in the interval (the server's send loop
            called ``on_app_limited``): its delivery rate measured the application.
    """

    start_s: float
    end_s: float
    sent_packets: int
    lost_packets: int
    delivered_bytes: int
    delivery_rate_bytes_per_s: float
    max_delivery_rate_bytes_per_s: float
    latest_rtt_s: float
    smoothed_rtt_s: float
    min_rtt_s: float
    cwnd_bytes: int
    bytes_in_flight: int
    state: BbrState
    app_limited: bool = False

    @property
    def loss_rate(self) -> float:
        """Lost ÷ sent packets in the interval (0 when nothing was sent and nothing lost;
        at most 1)."""
        if self.lost_packets == 0:
            return 0.0
        return min(1.0, self.lost_packets / max(self.sent_packets, 1))


class PbqCongestionControl(BbrCongestionControl):
    """PBQ (module doc): :class:`.bbr.BbrCongestionControl` plus the monitor and the
    agent's window. Read-only for logs and tests: ``agent_active``, ``agent_cwnd_bytes``,
    ``fallback_reason``, ``last_interval``, ``decisions``,
    ``held_app_limited`` (decisions not taken because their interval was app-limited).

    Args:
        max_datagram_size: SMSS, bytes.
        rng: BBR's randomness (seed it for reproducible runs).
    """

    def __init__(self, *, max_datagram_size: int, rng: random.Random | None = None) -> None:
        super().__init__(max_datagram_size=max_datagram_size, rng=rng)
        self.agent_active = True
        self.agent_cwnd_bytes: int | None = None
        self.fallback_reason: str | None = None
        self.last_interval: PbqInterval | None = None
        self.decisions = 0
        self.held_app_limited = 0
        self._last_action = 0.0
        self._iv_app_limited = False
        self._frames: deque[list[float]] = deque(
            [[0.0] * FRAME_SIZE for _ in range(FRAMES)], maxlen=FRAMES)
        self._interval_start_s: float | None = None
        self._iv_sent_packets = 0
        self._iv_lost_packets = 0
        self._iv_delivered_bytes = 0
        self._latest_rtt_s = 0.0
        self._srtt_s = 0.0
        self._max_delivery_rate_bytes_per_s = 0.0

    # ------------------------------------------------------------------ monitor (aioquic's events)

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        """BBR's, and the packet counts toward the interval."""
        super().on_packet_sent(packet=packet)
        if self._interval_start_s is None:
            self._interval_start_s = packet.sent_time if packet.sent_time is not None else 0.0
        self._iv_sent_packets += 1

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        """BBR's, and the packet's bytes count as delivered in the interval."""
        super().on_packet_acked(now=now, packet=packet)
        self._iv_delivered_bytes += packet.sent_bytes

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        """BBR's, and the latest and smoothed RTT (RFC 9002 §5.3's EWMA, no ACK delay)."""
        super().on_rtt_measurement(now=now, rtt=rtt)
        self._latest_rtt_s = rtt
        self._srtt_s = (rtt if self._srtt_s == 0
                        else (1 - SRTT_GAIN) * self._srtt_s + SRTT_GAIN * rtt)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        """BBR's (its model learns of the loss), the losses count in the interval; the
        agent's window, once set, stays (docs/PBQ.md: BBR's cwnd computations are ignored)."""
        packets = list(packets)
        super().on_packets_lost(now=now, packets=packets)
        self._iv_lost_packets += len(packets)
        if self._agent_controls():
            self._apply_agent_cwnd()

    def on_app_limited(self) -> None:
        """BBR's (its sampler marks the phase), and the interval is app-limited."""
        super().on_app_limited()
        self._iv_app_limited = True

    def on_persistent_congestion(self) -> None:
        """RFC 9002 §7.6.2: BBR collapses to the flight plus one packet, and the agent's next
        ratio applies to that collapsed window."""
        super().on_persistent_congestion()
        if self._agent_controls():
            self.agent_cwnd_bytes = self.congestion_window

    def get_log_data(self) -> dict[str, Any]:
        """BBR's qlog metrics plus whether the agent holds the window."""
        data = super().get_log_data()
        data.update(pbq_agent=self.agent_active)
        return data

    # ------------------------------------------------------------------ the agent's seam

    def observe(self, now: float) -> list[float]:
        """Close the monitor interval at ``now`` (s) and return the state: :data:`FRAMES`
        frames of :data:`FEATURES`, oldest first, :data:`STATE_SIZE` floats (docs/PBQ.md
        "State"). Finite features are clipped (:data:`FEATURE_MAX`); a NaN or infinite
        measurement stays so, for the runner to refuse. The interval's measurements are in
        ``last_interval`` afterwards."""
        start = self._interval_start_s if self._interval_start_s is not None else now - INTERVAL_S
        length_s = max(now - start, 1e-6)
        delivery = self._iv_delivered_bytes / length_s
        self._max_delivery_rate_bytes_per_s = max(self._max_delivery_rate_bytes_per_s, delivery,
                                                  self.max_bw_bytes_per_s)
        max_rate = self._max_delivery_rate_bytes_per_s
        min_rtt = self.min_rtt_s if self.min_rtt_s != INF else (self._conn_min_rtt_s or 0.0)
        iv = PbqInterval(
            start_s=start, end_s=now, sent_packets=self._iv_sent_packets,
            lost_packets=self._iv_lost_packets, delivered_bytes=self._iv_delivered_bytes,
            delivery_rate_bytes_per_s=delivery, max_delivery_rate_bytes_per_s=max_rate,
            latest_rtt_s=self._latest_rtt_s, smoothed_rtt_s=self._srtt_s, min_rtt_s=min_rtt,
            cwnd_bytes=self.congestion_window, bytes_in_flight=self.bytes_in_flight,
            state=self.state, app_limited=self._iv_app_limited)
        self.last_interval = iv
        self._interval_start_s = now
        self._iv_sent_packets = self._iv_lost_packets = self._iv_delivered_bytes = 0
        self._iv_app_limited = False
        self._frames.append(self._frame(iv, length_s))
        return [x for frame in self._frames for x in frame]

    def _frame(self, iv: PbqInterval, length_s: float) -> list[float]:
        """One interval's :data:`FEATURES` (docs/PBQ.md "State" rows 1–11)."""
        m = FEATURE_MAX
        bdp = iv.max_delivery_rate_bytes_per_s * iv.min_rtt_s
        out = [
            _clip(_ratio(self.pacing_rate_bytes_per_s, iv.max_delivery_rate_bytes_per_s), 0, m),
            _clip(_ratio(iv.delivery_rate_bytes_per_s, iv.max_delivery_rate_bytes_per_s), 0, m),
            _clip(_ratio(iv.latest_rtt_s, iv.min_rtt_s), 0, m),
            _clip(_ratio(iv.smoothed_rtt_s, iv.min_rtt_s), 0, m),
            _clip(iv.min_rtt_s, 0, m),
            _clip(length_s / INTERVAL_S, 0, m),
            iv.loss_rate,
            _clip(_ratio(iv.cwnd_bytes, bdp), 0, m),
            _clip(_ratio(iv.bytes_in_flight, iv.cwnd_bytes), 0, m),
        ]
        out += [1.0 if iv.state is s else 0.0 for s in BBR_STATES]
        out.append(self._last_action)
        return out

    def cwnd_bounds_bytes(self) -> tuple[int, int]:
        """The action rule's clamp (docs/PBQ.md "Control loop", :data:`ACTION_RULE_VERSION`),
        from BBR's model now (bytes):

        * floor: BBRInflight(pacing_gain) plus extra_acked (draft-ietf-ccwg-bbr BBRInflight,
          BBRBDPMultiple, BBRQuantizationBudget), the flight that keeps BBR's pacing rate busy
          for one min RTT: 1.25 BDP in ProbeBW_UP (so BBR's probe can find more bandwidth), 0.9
          in ProbeBW_DOWN, 1 in CRUISE and REFILL; at least BBRMinPipeCwnd (4 SMSS);
        * ceiling: BBR's own target, BBRInflight(cwnd_gain) plus extra_acked (BBRUpdateMaxInflight,
          2 BDPs in ProbeBW) without the model's loss bounds (inflight_hi/lo: the agent answers
          loss through its reward). The floor is never above it (in Startup the pacing gain
          exceeds the cwnd gain: the window is BBR's target, so Startup is BBR's).

        ProbeRTT's cap (BBRBoundCwndForProbeRTT) is not a bound of the agent's window: it caps
        the window applied while BBR is in ProbeRTT (:meth:`_apply_agent_cwnd`), and the
        agent's own window is there again after it.
        """
        floor = self._quantization_budget(  # draft BBRInflight(BBR.pacing_gain) + extra_acked
            self._bdp_multiple(self.pacing_gain) + self._extra_acked.best)
        ceiling = self._max_inflight()  # draft BBRUpdateMaxInflight; ≥ BBRMinPipeCwnd
        return int(min(floor, ceiling)), int(ceiling)

    def apply_action(self, action: float, now: float) -> int:
        """The agent's decision at ``now`` (s): ``cwnd ← clamp(cwnd_prev · 2^a, floor,
        ceiling)`` with ``a`` clipped to [−1, 1] and the bounds of :meth:`cwnd_bounds_bytes`;
        ``cwnd_prev`` is the agent's previous window (BBR's current one at the first
        decision). Returns the new window, bytes; until the next decision every ACK clamps
        it again to the bounds of the moment (BBR's model moves).

        After an app-limited interval (``last_interval.app_limited``) the window is held
        instead: its delivery rate and flight measured the application, not the path, and
        the policy was trained on backlogged flows. Ours, in the spirit of RFC 7661 §4.3
        (a rate-limited sender neither grows nor shrinks cwnd on such a period) and of BBR's
        discounting of app-limited samples (draft-ietf-ccwg-bbr, "Detecting
        application-limited phases"); measured in docs/PBQ.md "Video-like traffic".

        Raises:
            ValueError: ``action`` is NaN or infinite (the runner falls back instead).
        """
        if not math.isfinite(action):
            raise ValueError(f"PBQ action must be finite, got {action}")
        if not self.agent_active:
            return self.congestion_window
        if self.last_interval is not None and self.last_interval.app_limited:
            self.held_app_limited += 1
            self._last_action = 0.0
            return self.congestion_window
        a = min(max(action, -1.0), 1.0)
        prev = (self.agent_cwnd_bytes if self.agent_cwnd_bytes is not None
                else self.congestion_window)
        floor, ceiling = self.cwnd_bounds_bytes()
        self.agent_cwnd_bytes = int(min(max(prev * 2.0 ** a, floor), ceiling))  # PBQ §3.2 ratio
        self._last_action = a
        self.decisions += 1
        self._apply_agent_cwnd()
        return self.congestion_window

    def fall_back(self, reason: str) -> None:
        """Plain BBR from now on (its own cwnd computations resume from the current window);
        ``reason`` is kept in ``fallback_reason``."""
        self.agent_active = False
        self.agent_cwnd_bytes = None
        self.fallback_reason = reason

    # ------------------------------------------------------------------ the window

    def _agent_controls(self) -> bool:
        return self.agent_active and self.agent_cwnd_bytes is not None

    def _apply_agent_cwnd(self) -> None:
        """The agent's window within the bounds of BBR's model now (:meth:`cwnd_bounds_bytes`,
        ProbeRTT's cap included)."""
        if self.agent_cwnd_bytes is None:
            return
        floor, ceiling = self.cwnd_bounds_bytes()
        cwnd = min(max(self.agent_cwnd_bytes, floor), ceiling)
        if self.state is BbrState.PROBE_RTT:  # draft BBRBoundCwndForProbeRTT (≥ BBRMinPipeCwnd)
            cwnd = min(cwnd, int(self._probe_rtt_cwnd()))
        self.congestion_window = cwnd

    def _set_cwnd(self, rs: RateSample) -> None:
        """BBRSetCwnd while no agent holds the window; the agent's window (with ProbeRTT's
        cap) once one does."""
        if self._agent_controls():
            self._apply_agent_cwnd()
        else:
            super()._set_cwnd(rs)


register_congestion_control(PBQ_CC_NAME, PbqCongestionControl)
