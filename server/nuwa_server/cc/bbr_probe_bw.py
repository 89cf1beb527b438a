"""BBR's Drain exit and ProbeBW cycle (DOWN, CRUISE, REFILL, UP) with its upper bound
inflight_hi and the response to loss above BBRLossThresh (draft-ietf-ccwg-bbr,
BBRUpdateProbeBWCyclePhase, BBRAdaptUpperBounds, BBRHandleLostPacket and what they call).
"""

from __future__ import annotations

from .bbr_control import BbrControl
from .bbr_model import (
    BETA,
    INF,
    LOSS_THRESH,
    PROBE_BW_STATES,
    PROBE_BW_WAIT_BASE_S,
    RENO_ROUNDS_MAX,
    AckPhase,
    BbrState,
    inflight_hi_from_lost_packet,
)
from .rate_sample import PacketDeliveryState, RateSample


class BbrProbeBw(BbrControl):
    """The ProbeBW layer of :class:`.bbr.BbrCongestionControl` (module doc)."""

    def _check_drain(self, now: float) -> None:
        """BBRCheckDrain: Drain ends once the flight is down to one BDP (BBRInflight(1.0))."""
        if self.state is BbrState.DRAIN and self.bytes_in_flight <= self._inflight(1.0):
            self._start_probe_bw_down(now)  # BBREnterProbeBW

    def _start_probe_bw_down(self, now: float) -> None:
        """BBRStartProbeBW_DOWN."""
        self._loss_in_round = False  # BBRResetCongestionSignals
        self._bw_latest = 0.0
        self._inflight_latest = 0
        self._probe_up_cnt = INF
        self._rounds_since_bw_probe = self._rng.randint(0, 1)  # BBRPickProbeWait
        self._bw_probe_wait_s = PROBE_BW_WAIT_BASE_S + self._rng.random()
        self._cycle_stamp_s = now
        self._ack_phase = AckPhase.PROBE_STOPPING
        self._start_round()
        self._set_state(BbrState.PROBE_BW_DOWN)

    def _start_probe_bw_refill(self) -> None:
        """BBRStartProbeBW_REFILL."""
        self._bw_lo = INF  # BBRResetLowerBounds
        self._inflight_lo = INF
        self._bw_probe_up_rounds = 0
        self._bw_probe_up_acks = 0
        self._ack_phase = AckPhase.REFILLING
        self._start_round()
        self._set_state(BbrState.PROBE_BW_REFILL)

    def _start_probe_bw_up(self, rs: RateSample) -> None:
        """BBRStartProbeBW_UP."""
        self._ack_phase = AckPhase.PROBE_STARTING
        self._start_round()
        self._reset_full_bw()
        self._full_bw = rs.delivery_rate_bytes_per_s
        self._set_state(BbrState.PROBE_BW_UP)
        self._raise_inflight_hi_slope()

    def _update_probe_bw_cycle_phase(self, rs: RateSample, now: float) -> None:
        """BBRUpdateProbeBWCyclePhase: DOWN → CRUISE → REFILL → UP → DOWN."""
        if not self.full_bw_reached:
            return
        self._adapt_upper_bounds(rs, now)
        state = self.state
        if state is BbrState.PROBE_BW_DOWN:
            if self._is_time_to_probe_bw(now):
                return
            if self._is_time_to_cruise():
                self._set_state(BbrState.PROBE_BW_CRUISE)
        elif state is BbrState.PROBE_BW_CRUISE:
            self._is_time_to_probe_bw(now)
        elif state is BbrState.PROBE_BW_REFILL:
            if self.round_start:  # one round of refill at gain 1, then probe
                self._bw_probe_samples = True
                self._start_probe_bw_up(rs)
        elif state is BbrState.PROBE_BW_UP and self._is_time_to_go_down(rs):
            self._start_probe_bw_down(now)

    def _is_time_to_cruise(self) -> bool:
        """BBRIsTimeToCruise."""
        if self.bytes_in_flight > self._inflight_with_headroom():
            return False
        return self.bytes_in_flight <= self._inflight(1.0)

    def _is_time_to_go_down(self, rs: RateSample) -> bool:
        """BBRIsTimeToGoDown: the probe found no more bandwidth (BBR.full_bw_now)."""
        if self._is_cwnd_limited and self.congestion_window >= self.inflight_hi_bytes:
            self._reset_full_bw()  # inflight_hi holds the probe back: it cannot judge
            self._full_bw = rs.delivery_rate_bytes_per_s
        elif self._full_bw_now:
            return True
        return False

    def _is_time_to_probe_bw(self, now: float) -> bool:
        """BBRIsTimeToProbeBW: after the 2–3 s wait or BBRIsRenoCoexistenceProbeTime."""
        reno_rounds = min(self._target_inflight() / self._mss, RENO_ROUNDS_MAX)
        if (now > self._cycle_stamp_s + self._bw_probe_wait_s
                or self._rounds_since_bw_probe >= reno_rounds):
            self._start_probe_bw_refill()
            return True
        return False

    def _raise_inflight_hi_slope(self) -> None:
        """BBRRaiseInflightHiSlope: inflight_hi's growth doubles each round of ProbeBW_UP."""
        growth_this_round = self._mss << self._bw_probe_up_rounds
        self._bw_probe_up_rounds = min(self._bw_probe_up_rounds + 1, 30)
        self._probe_up_cnt = max(self.congestion_window // growth_this_round, 1) * self._mss

    def _probe_inflight_hi_upward(self, rs: RateSample) -> None:
        """BBRProbeInflightHiUpward."""
        if not self._is_cwnd_limited or self.congestion_window < self.inflight_hi_bytes:
            return
        self._bw_probe_up_acks += rs.newly_acked_bytes
        if self._bw_probe_up_acks >= self._probe_up_cnt:
            delta = self._bw_probe_up_acks // self._probe_up_cnt
            self._bw_probe_up_acks -= int(delta * self._probe_up_cnt)
            self.inflight_hi_bytes += delta * self._mss
        if self.round_start:
            self._raise_inflight_hi_slope()

    def _adapt_upper_bounds(self, rs: RateSample, now: float) -> None:
        """BBRAdaptUpperBounds: the max-bw filter's cycles and inflight_hi."""
        if self._ack_phase is AckPhase.PROBE_STARTING and self.round_start:
            self._ack_phase = AckPhase.PROBE_FEEDBACK
        if self._ack_phase is AckPhase.PROBE_STOPPING and self.round_start:
            # the probe's samples are in: advance the filter once per cycle. The draft's
            # pseudocode leaves ack_phase at PROBE_STOPPING, which advances it every round of
            # DOWN/CRUISE (a 2-round filter); Linux BBRv3 (bbr_adapt_upper_bounds) resets
            # ack_phase and bw_probe_samples here, as done here.
            self._bw_probe_samples = False
            self._ack_phase = AckPhase.INIT
            if self.state in PROBE_BW_STATES and not rs.is_app_limited:
                self._max_bw.advance()  # BBRAdvanceMaxBwFilter
        if self._is_inflight_too_high(rs):  # BBRCheckInflightTooHigh
            if self._bw_probe_samples:
                self._handle_inflight_too_high(rs.is_app_limited, rs.tx_in_flight_bytes, now)
            return
        if self.inflight_hi_bytes == INF:
            return
        if rs.tx_in_flight_bytes > self.inflight_hi_bytes:
            self.inflight_hi_bytes = float(rs.tx_in_flight_bytes)
        if self.state is BbrState.PROBE_BW_UP:
            self._probe_inflight_hi_upward(rs)

    @staticmethod
    def _is_inflight_too_high(rs: RateSample) -> bool:
        """IsInflightTooHigh: more than BBRLossThresh of the flight was lost."""
        return rs.lost_bytes > LOSS_THRESH * rs.tx_in_flight_bytes

    def _handle_inflight_too_high(self, is_app_limited: bool, tx_in_flight: float,
                                  now: float) -> None:
        """BBRHandleInflightTooHigh: inflight_hi = max(that flight, β · target); UP ends."""
        self._bw_probe_samples = False
        if not is_app_limited:
            self.inflight_hi_bytes = max(tx_in_flight, BETA * self._target_inflight())
        if self.state is BbrState.PROBE_BW_UP:
            self._start_probe_bw_down(now)

    def _handle_lost_packet(self, p: PacketDeliveryState, now: float) -> None:
        """BBRHandleLostPacket (with BBRNoteLoss): a probe that loses over 2 % of its flight
        sets inflight_hi where the loss rate crossed 2 % (BBRInflightHiFromLostPacket)."""
        if not self._loss_in_round:  # BBRNoteLoss
            self._loss_in_round = True
            self._loss_round_delivered = self._sampler.delivered_bytes
        if not self._bw_probe_samples:
            return
        lost = self._sampler.lost_bytes - p.lost_bytes  # RS.lost, this packet included
        if lost > LOSS_THRESH * p.tx_in_flight_bytes:
            inflight = inflight_hi_from_lost_packet(
                tx_in_flight_bytes=p.tx_in_flight_bytes, lost_bytes=lost,
                size_bytes=p.size_bytes)
            self._handle_inflight_too_high(p.is_app_limited, inflight, now)
