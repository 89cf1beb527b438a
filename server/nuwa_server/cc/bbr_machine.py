"""BBR's per-ACK model and state updates (draft-ietf-ccwg-bbr, BBRUpdateModelAndState):
delivery signals, rounds, max bandwidth and the lower bounds, ACK aggregation, the end
of Startup, min RTT and ProbeRTT.
"""

from __future__ import annotations

from .bbr_model import (
    BETA,
    EXTRA_ACKED_FILTER_ROUNDS,
    INF,
    LOSS_THRESH,
    MIN_RTT_FILTER_S,
    OUTAGE_MIN_RTTS,
    OUTAGE_RATE_FRACTION,
    PROBE_BW_STATES,
    PROBE_RTT_DURATION_S,
    PROBE_RTT_INTERVAL_S,
    STARTUP_FULL_BW_ROUNDS,
    STARTUP_FULL_BW_THRESH,
    STARTUP_FULL_LOSS_COUNT,
    AckPhase,
    BbrState,
)
from .bbr_probe_bw import BbrProbeBw
from .rate_sample import RateSample


class BbrMachine(BbrProbeBw):
    """The model-and-state layer of :class:`.bbr.BbrCongestionControl` (module doc)."""

    def _update_model_and_state(self, rs: RateSample, now: float) -> None:
        """BBRUpdateModelAndState."""
        self._update_latest_delivery_signals(rs)
        self._update_congestion_signals(rs)
        self._update_ack_aggregation(rs, now)
        self._check_full_bw_reached(rs)
        self._check_startup_done(rs)
        self._check_drain(now)
        self._update_probe_bw_cycle_phase(rs, now)
        self._update_min_rtt(rs, now)
        self._check_probe_rtt(rs, now)
        self._advance_latest_delivery_signals(rs)
        self.bw_bytes_per_s = min(self.max_bw_bytes_per_s, self._bw_lo)  # BBRBoundBWForModel

    def _update_latest_delivery_signals(self, rs: RateSample) -> None:
        """BBRUpdateLatestDeliverySignals: loss rounds and the latest rate and volume."""
        self._loss_round_start = False
        self._bw_latest = max(self._bw_latest, rs.delivery_rate_bytes_per_s)
        self._inflight_latest = max(self._inflight_latest, rs.delivered_bytes)
        if rs.prior_delivered_bytes >= self._loss_round_delivered:
            self._loss_round_delivered = self._sampler.delivered_bytes
            self._loss_round_start = True

    def _advance_latest_delivery_signals(self, rs: RateSample) -> None:
        """BBRAdvanceLatestDeliverySignals."""
        if self._loss_round_start:
            self._bw_latest = rs.delivery_rate_bytes_per_s
            self._inflight_latest = rs.delivered_bytes

    def _update_congestion_signals(self, rs: RateSample) -> None:
        """BBRUpdateCongestionSignals: max bandwidth, then the lower bounds once per round."""
        self._update_round(rs)
        if rs.valid and (rs.delivery_rate_bytes_per_s >= self.max_bw_bytes_per_s
                         or not rs.is_app_limited):  # BBRUpdateMaxBw
            self._max_bw.update(rs.delivery_rate_bytes_per_s)
            self.max_bw_bytes_per_s = self._max_bw.best_bytes_per_s
        if not self._loss_round_start:
            return
        # BBRAdaptLowerBoundsFromCongestion: not while probing (BBRIsProbingBW)
        probing = self.state in (BbrState.STARTUP, BbrState.PROBE_BW_REFILL,
                                 BbrState.PROBE_BW_UP)
        if not probing and self._loss_in_round:
            if self._bw_lo == INF:  # BBRInitLowerBounds
                self._bw_lo = self.max_bw_bytes_per_s
            if self._inflight_lo == INF:
                self._inflight_lo = float(self.congestion_window)
            # BBRLossLowerBounds
            self._bw_lo = max(self._bw_latest, BETA * self._bw_lo)
            self._inflight_lo = max(float(self._inflight_latest), BETA * self._inflight_lo)
        self._loss_in_round = False

    def _update_round(self, rs: RateSample) -> None:
        """BBRUpdateRound: a round ends when a packet sent after its start is acknowledged."""
        if rs.newest_sent_time_s is not None \
                and rs.prior_delivered_bytes >= self._next_round_delivered:
            self._start_round()
            self.round_count += 1
            self._rounds_since_bw_probe += 1
            self.round_start = True
            self._bytes_lost_in_round = 0
            self._loss_events_in_round = 0
            self._is_cwnd_limited = False
        else:
            self.round_start = False

    def _update_ack_aggregation(self, rs: RateSample, now: float) -> None:
        """BBRUpdateACKAggregation: bytes acknowledged beyond what bw explains (extra_acked)."""
        interval = now - self._extra_acked_interval_start_s
        expected = self.bw_bytes_per_s * interval
        if self._extra_acked_delivered_bytes <= expected:
            self._extra_acked_delivered_bytes = 0
            self._extra_acked_interval_start_s = now
            expected = 0.0
        self._extra_acked_delivered_bytes += rs.newly_acked_bytes
        extra = min(self._extra_acked_delivered_bytes - expected, float(self.congestion_window))
        self._extra_acked.window = EXTRA_ACKED_FILTER_ROUNDS if self.full_bw_reached else 1
        self._extra_acked.update(self.round_count, extra)

    def _check_full_bw_reached(self, rs: RateSample) -> None:
        """BBRCheckFullBWReached: three rounds without 25 % growth fill the pipe."""
        if self._full_bw_now or rs.is_app_limited or not rs.valid:
            return
        if rs.delivery_rate_bytes_per_s >= self._full_bw * STARTUP_FULL_BW_THRESH:
            self._reset_full_bw()
            self._full_bw = rs.delivery_rate_bytes_per_s
            return
        if not self.round_start:
            return
        self._full_bw_count += 1
        self._full_bw_now = self._full_bw_count >= STARTUP_FULL_BW_ROUNDS
        if self._full_bw_now:
            self.full_bw_reached = True

    def _check_startup_done(self, rs: RateSample) -> None:
        """BBRCheckStartupDone with BBRCheckStartupHighLoss (loss above BBRLossThresh with at
        least BBRStartupFullLossCnt loss events in a round also ends Startup)."""
        high_loss = (not self.full_bw_reached
                     and self._loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
                     and rs.lost_bytes > LOSS_THRESH * rs.tx_in_flight_bytes)
        if high_loss:
            self.full_bw_reached = True
            self.inflight_hi_bytes = max(self._bdp_multiple(self._cwnd_gain),
                                         float(self._inflight_latest))
        if self.state is BbrState.STARTUP and self.full_bw_reached:
            self._set_state(BbrState.DRAIN)  # BBREnterDrain

    def _update_min_rtt(self, rs: RateSample, now: float) -> None:
        """BBRUpdateMinRTT: a 5 s probe filter feeding the 10 s min-RTT filter. One rule of
        ours: an expired filter is not refreshed by a sample that waited through an outage
        (:meth:`_waited_through_outage`): the draft takes whatever sample comes next, and
        after a dark link that is the outage's length (3.5 s for 51 ms on AT&T LTE
        driving), which then sizes the BDP and every window from it."""
        self._probe_rtt_expired = now > self._probe_rtt_min_stamp_s + PROBE_RTT_INTERVAL_S
        if rs.rtt_s is not None and (rs.rtt_s < self._probe_rtt_min_delay_s
                                     or (self._probe_rtt_expired
                                         and not self._waited_through_outage(rs))):
            self._probe_rtt_min_delay_s = rs.rtt_s
            self._probe_rtt_min_stamp_s = now
        min_rtt_expired = now > self._min_rtt_stamp_s + MIN_RTT_FILTER_S
        if self._probe_rtt_min_delay_s < self.min_rtt_s or min_rtt_expired:
            self.min_rtt_s = self._probe_rtt_min_delay_s
            self._min_rtt_stamp_s = self._probe_rtt_min_stamp_s

    def _waited_through_outage(self, rs: RateSample) -> bool:
        """Whether the newest acked packet waited through an outage (bbr_model.OUTAGE_MIN_RTTS):
        its RTT is at least OUTAGE_MIN_RTTS × the lowest RTT measured and the bytes delivered
        during its flight are under OUTAGE_RATE_FRACTION × max_bw × that RTT. Asked only when
        the probe filter has expired, so not on every ACK."""
        lowest_s = self._conn_min_rtt_s
        return (rs.rtt_s is not None and lowest_s is not None and self.max_bw_bytes_per_s > 0
                and rs.rtt_s >= OUTAGE_MIN_RTTS * lowest_s
                and rs.delivered_bytes
                < OUTAGE_RATE_FRACTION * self.max_bw_bytes_per_s * rs.rtt_s)

    def _check_probe_rtt(self, rs: RateSample, now: float) -> None:
        """BBRCheckProbeRTT: every ProbeRTTInterval without a lower RTT, drain to half a BDP
        for ProbeRTTDuration and one round."""
        if self.state is not BbrState.PROBE_RTT and self._probe_rtt_expired \
                and not self._idle_restart:
            self._set_state(BbrState.PROBE_RTT)  # BBREnterProbeRTT
            self._save_cwnd()
            self._probe_rtt_done_stamp_s = None
            self._ack_phase = AckPhase.PROBE_STOPPING
            self._start_round()
        if self.state is BbrState.PROBE_RTT:
            self._handle_probe_rtt(now)
        if rs.delivered_bytes > 0:
            self._idle_restart = False

    def _handle_probe_rtt(self, now: float) -> None:
        """BBRHandleProbeRTT."""
        self._sampler.mark_app_limited(self.bytes_in_flight)  # low-rate samples: app-limited
        if self._probe_rtt_done_stamp_s is None \
                and self.bytes_in_flight <= self._probe_rtt_cwnd():
            self._probe_rtt_done_stamp_s = now + PROBE_RTT_DURATION_S
            self._probe_rtt_round_done = False
            self._start_round()
        elif self._probe_rtt_done_stamp_s is not None:
            if self.round_start:
                self._probe_rtt_round_done = True
            if self._probe_rtt_round_done:
                self._check_probe_rtt_done(now)

    def _check_probe_rtt_done(self, now: float) -> None:
        """BBRCheckProbeRTTDone, then BBRExitProbeRTT."""
        if self._probe_rtt_done_stamp_s is not None and now > self._probe_rtt_done_stamp_s:
            self._probe_rtt_min_stamp_s = now
            self._restore_cwnd()
            self._bw_lo = INF  # BBRResetLowerBounds
            self._inflight_lo = INF
            if self.full_bw_reached:
                self._start_probe_bw_down(now)
                self._set_state(BbrState.PROBE_BW_CRUISE)
            else:
                self._enter_startup()

    def _handle_restart_from_idle(self, now: float) -> None:
        """BBRHandleRestartFromIdle: after idle, pace at bw (not a probing gain)."""
        self._idle_restart = True
        self._extra_acked_interval_start_s = now
        if self.state in PROBE_BW_STATES:
            self._set_pacing_rate(1.0)
        elif self.state is BbrState.PROBE_RTT:
            self._check_probe_rtt_done(now)
