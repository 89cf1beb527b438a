"""BBR's state (BBROnInit) and its control parameters: gains per state, pacing rate, send
quantum and cwnd with their bounds (draft-ietf-ccwg-bbr, BBRUpdateControlParameters and
the functions it calls, named on each method). Base of :class:`.bbr.BbrCongestionControl`;
sizes bytes, times s, rates bytes/s.
"""

from __future__ import annotations

import random

from aioquic.quic.congestion.base import K_INITIAL_WINDOW

from .bbr_model import (
    DEFAULT_CWND_GAIN,
    DRAIN_PACING_GAIN,
    EXTRA_ACKED_FILTER_ROUNDS,
    HEADROOM,
    INF,
    MIN_PIPE_CWND_PACKETS,
    PACING_MARGIN,
    PROBE_BW_DOWN_PACING_GAIN,
    PROBE_BW_STATES,
    PROBE_BW_UP_CWND_GAIN,
    PROBE_BW_UP_PACING_GAIN,
    PROBE_RTT_CWND_GAIN,
    SEND_QUANTUM_INTERVAL_S,
    SEND_QUANTUM_MAX_BYTES,
    STARTUP_CWND_GAIN,
    STARTUP_PACING_GAIN,
    AckPhase,
    BbrState,
    MaxBwFilter,
    WindowedMax,
)
from .rate_sample import DeliveryRateSampler, RateSample


class BbrControl:
    """BBR's state and control parameters (module doc). No aioquic here: the subclass
    :class:`.bbr.BbrCongestionControl` feeds it."""

    congestion_window: int
    bytes_in_flight: int

    def __init__(self, *, max_datagram_size: int, rng: random.Random | None = None) -> None:
        """BBROnInit. ``max_datagram_size``: SMSS, bytes; ``rng``: BBRPickProbeWait's
        randomness."""
        self._mss = max_datagram_size
        self.congestion_window = K_INITIAL_WINDOW * max_datagram_size
        self.bytes_in_flight = 0
        self._rng = rng if rng is not None else random.Random()
        self._initial_cwnd = K_INITIAL_WINDOW * max_datagram_size
        self._sampler = DeliveryRateSampler()
        self._is_cwnd_limited = False
        # BBROnInit
        self.min_rtt_s = INF
        self._min_rtt_stamp_s = 0.0
        self._probe_rtt_min_delay_s = INF
        self._probe_rtt_min_stamp_s = 0.0
        self._probe_rtt_expired = False
        self._probe_rtt_done_stamp_s: float | None = None
        self._probe_rtt_round_done = False
        self._prior_cwnd_bytes = 0
        self._idle_restart = False
        self._extra_acked_interval_start_s = 0.0
        self._extra_acked_delivered_bytes = 0
        self._extra_acked = WindowedMax(EXTRA_ACKED_FILTER_ROUNDS)
        self._max_bw = MaxBwFilter()
        self.max_bw_bytes_per_s = 0.0
        self.bw_bytes_per_s = 0.0
        self._bw_lo = INF
        self._inflight_lo = INF
        self.inflight_hi_bytes = INF
        self._bw_latest = 0.0
        self._inflight_latest = 0
        self._loss_in_round = False
        self._loss_round_delivered = INF
        self._loss_round_start = False
        self._bytes_lost_in_round = 0
        self._loss_events_in_round = 0
        self._next_round_delivered = 0
        self.round_start = False
        self.round_count = 0
        self._rounds_since_bw_probe = 0
        self._full_bw = 0.0
        self._full_bw_count = 0
        self._full_bw_now = False
        self.full_bw_reached = False
        self._cycle_stamp_s = 0.0
        self._bw_probe_wait_s = 0.0
        self._ack_phase = AckPhase.INIT
        self._bw_probe_samples = False
        self._bw_probe_up_rounds = 0
        self._bw_probe_up_acks = 0
        self._probe_up_cnt = INF
        self._in_recovery = False
        self._recovery_start_s: float | None = None
        self._first_rtt_seen = False
        self._conn_min_rtt_s: float | None = None  # the lowest RTT measured, s (never raised)
        # BBRInitPacingRate: InitialCwnd / 1 ms until an RTT is known
        self.pacing_rate_bytes_per_s = STARTUP_PACING_GAIN * self._initial_cwnd / 0.001
        self.send_quantum_bytes = 2 * max_datagram_size
        self._enter_startup()


    def _enter_startup(self) -> None:
        self._set_state(BbrState.STARTUP)

    def _set_state(self, state: BbrState) -> None:
        """Enter ``state`` with its pacing and cwnd gains (the draft's BBREnter*/BBRStart*)."""
        self.state = state
        self.pacing_gain, self._cwnd_gain = {
            BbrState.STARTUP: (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            BbrState.DRAIN: (DRAIN_PACING_GAIN, STARTUP_CWND_GAIN),
            BbrState.PROBE_BW_DOWN: (PROBE_BW_DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
            BbrState.PROBE_BW_CRUISE: (1.0, DEFAULT_CWND_GAIN),
            BbrState.PROBE_BW_REFILL: (1.0, DEFAULT_CWND_GAIN),
            BbrState.PROBE_BW_UP: (PROBE_BW_UP_PACING_GAIN, PROBE_BW_UP_CWND_GAIN),
            BbrState.PROBE_RTT: (1.0, PROBE_RTT_CWND_GAIN),
        }[state]

    def _start_round(self) -> None:
        """BBRStartRound."""
        self._next_round_delivered = self._sampler.delivered_bytes

    def _reset_full_bw(self) -> None:
        """BBRResetFullBW."""
        self._full_bw = 0.0
        self._full_bw_count = 0
        self._full_bw_now = False

    @property
    def full_bw_count(self) -> int:
        """Rounds in a row without 25 % growth of the delivery rate (BBR.full_bw_count)."""
        return self._full_bw_count

    def _update_control_parameters(self, rs: RateSample) -> None:
        """BBRUpdateControlParameters."""
        self._set_pacing_rate(self.pacing_gain)
        self._set_send_quantum()
        self._set_cwnd(rs)

    def _set_pacing_rate(self, gain: float) -> None:
        """BBRSetPacingRateWithGain: gain · bw · (1 − 1 % margin); never lower in Startup."""
        if self.bw_bytes_per_s <= 0:
            return
        rate = gain * self.bw_bytes_per_s * (1 - PACING_MARGIN)
        if self.full_bw_reached or rate > self.pacing_rate_bytes_per_s:
            self.pacing_rate_bytes_per_s = rate

    def _set_send_quantum(self) -> None:
        """BBRSetSendQuantum: 1 ms at the pacing rate, within [2 SMSS, 64 KB]."""
        quantum = min(self.pacing_rate_bytes_per_s * SEND_QUANTUM_INTERVAL_S,
                      SEND_QUANTUM_MAX_BYTES)
        self.send_quantum_bytes = int(max(quantum, 2 * self._mss))

    def _min_pipe_cwnd(self) -> int:
        return MIN_PIPE_CWND_PACKETS * self._mss

    def _bdp_multiple(self, gain: float) -> float:
        """BBRBDPMultiple: gain · bw · min_rtt (InitialCwnd before a min RTT)."""
        if self.min_rtt_s == INF:
            return float(self._initial_cwnd)
        return gain * self.bw_bytes_per_s * self.min_rtt_s

    def _quantization_budget(self, inflight: float) -> float:
        """BBRQuantizationBudget: room for 3 send quanta (offload), ≥ BBRMinPipeCwnd, and 2
        packets more in ProbeBW_UP."""
        inflight = max(inflight, 3 * self.send_quantum_bytes, self._min_pipe_cwnd())
        if self.state is BbrState.PROBE_BW_UP:
            inflight += 2 * self._mss
        return inflight

    def _inflight(self, gain: float) -> float:
        """BBRInflight(gain): gain BDPs plus the quantization budget, bytes."""
        return self._quantization_budget(self._bdp_multiple(gain))

    def _inflight_with_headroom(self) -> float:
        """BBRInflightWithHeadroom: inflight_hi less 15 % (≥ 1 SMSS) for other flows."""
        if self.inflight_hi_bytes == INF:
            return INF
        headroom = max(float(self._mss), HEADROOM * self.inflight_hi_bytes)
        return max(self.inflight_hi_bytes - headroom, float(self._min_pipe_cwnd()))

    def _target_inflight(self) -> float:
        """BBRTargetInflight: min(BDP · cwnd_gain, cwnd)."""
        return min(self._bdp_multiple(self._cwnd_gain), float(self.congestion_window))

    def _probe_rtt_cwnd(self) -> float:
        """BBRProbeRTTCwnd: half a BDP, at least BBRMinPipeCwnd."""
        return max(self._bdp_multiple(PROBE_RTT_CWND_GAIN), float(self._min_pipe_cwnd()))

    def _save_cwnd(self) -> None:
        """BBRSaveCwnd."""
        if not self._in_recovery and self.state is not BbrState.PROBE_RTT:
            self._prior_cwnd_bytes = self.congestion_window
        else:
            self._prior_cwnd_bytes = max(self._prior_cwnd_bytes, self.congestion_window)

    def _restore_cwnd(self) -> None:
        """BBRRestoreCwnd."""
        self.congestion_window = max(self.congestion_window, self._prior_cwnd_bytes)

    def _max_inflight(self) -> float:
        """BBRUpdateMaxInflight: cwnd_gain BDPs plus extra_acked, with the quantization
        budget, bytes (the target BBRSetCwnd grows toward)."""
        return self._quantization_budget(
            self._bdp_multiple(self._cwnd_gain) + self._extra_acked.best)

    def _set_cwnd(self, rs: RateSample) -> None:
        """BBRSetCwnd: grow by what was acknowledged up to max_inflight (cwnd_gain BDPs plus
        extra_acked, BBRUpdateMaxInflight), then the ProbeRTT and model bounds."""
        max_inflight = self._max_inflight()
        cwnd = float(self.congestion_window)
        if self.full_bw_reached:
            cwnd = min(cwnd + rs.newly_acked_bytes, max_inflight)
        elif cwnd < max_inflight or self._sampler.delivered_bytes < self._initial_cwnd:
            cwnd += rs.newly_acked_bytes
        cwnd = max(cwnd, float(self._min_pipe_cwnd()))
        if self.state is BbrState.PROBE_RTT:  # BBRBoundCwndForProbeRTT
            cwnd = min(cwnd, self._probe_rtt_cwnd())
        # BBRBoundCwndForModel
        cap = INF
        if self.state in PROBE_BW_STATES and self.state is not BbrState.PROBE_BW_CRUISE:
            cap = self.inflight_hi_bytes
        elif self.state in (BbrState.PROBE_RTT, BbrState.PROBE_BW_CRUISE):
            cap = self._inflight_with_headroom()
        cap = max(min(cap, self._inflight_lo), float(self._min_pipe_cwnd()))
        self.congestion_window = int(min(cwnd, cap))
