"""BBR (draft-ietf-ccwg-bbr, v3) as an aioquic congestion controller (``--cc bbr``).

Our own Python, written against the draft's pseudocode (each method names the draft
function it implements) with ngtcp2's ``lib/ngtcp2_bbr.c`` read as a reference for the
QUIC details the draft leaves open (loss recovery episodes, persistent congestion).
Sans-I/O like aioquic's controllers: every time comes from the packets and the ``now``
aioquic passes (s); sizes are bytes, rates bytes/s.

How aioquic's events map onto the draft's:

* ``on_packet_sent`` → BBROnTransmit (restart from idle) and the delivery-state
  snapshot of the packet (:mod:`.rate_sample`), kept here by packet number, since
  aioquic's sent packets carry no such fields.
* ``on_packet_acked`` (once per packet of an ACK frame) → UpdateRateSample; the ACK is
  finished (GenerateRateSample, then BBRUpdateOnACK) at aioquic's next event, which for
  an ACK that yields an RTT sample is ``on_rtt_measurement`` right after its packets,
  else the next send or loss.
* ``on_packets_lost`` → BBRUpdateOnLoss per packet, then a loss recovery episode as in
  RFC 9002 §7.3.2 (cwnd = inflight + 1 packet, restored when a packet sent after the
  episode began is acknowledged; ngtcp2's ``bbr_handle_recovery``).
* ``on_persistent_congestion`` → cwnd = inflight + 1 packet (RFC 9002 §7.6.2; ngtcp2).

The pacing rate (:attr:`BbrCongestionControl.pacing_rate_bytes_per_s`) reaches aioquic's
pacer through :mod:`.pacing`; the server marks app-limited phases with
:meth:`BbrCongestionControl.on_app_limited`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from aioquic.quic.congestion.base import (
    K_INITIAL_WINDOW,
    QuicCongestionControl,
    register_congestion_control,
)
from aioquic.quic.packet_builder import QuicSentPacket

from .bbr_model import (
    BETA,
    DEFAULT_CWND_GAIN,
    DRAIN_PACING_GAIN,
    EXTRA_ACKED_FILTER_ROUNDS,
    HEADROOM,
    LOSS_THRESH,
    MIN_PIPE_CWND_PACKETS,
    MIN_RTT_FILTER_S,
    PACING_MARGIN,
    PROBE_BW_DOWN_PACING_GAIN,
    PROBE_BW_STATES,
    PROBE_BW_UP_CWND_GAIN,
    PROBE_BW_UP_PACING_GAIN,
    PROBE_BW_WAIT_BASE_S,
    PROBE_RTT_CWND_GAIN,
    PROBE_RTT_DURATION_S,
    PROBE_RTT_INTERVAL_S,
    RENO_ROUNDS_MAX,
    SEND_QUANTUM_INTERVAL_S,
    SEND_QUANTUM_MAX_BYTES,
    STARTUP_CWND_GAIN,
    STARTUP_FULL_BW_ROUNDS,
    STARTUP_FULL_BW_THRESH,
    STARTUP_FULL_LOSS_COUNT,
    STARTUP_PACING_GAIN,
    AckPhase,
    BbrState,
    MaxBwFilter,
    WindowedMax,
    inflight_hi_from_lost_packet,
)
from .rate_sample import DeliveryRateSampler, PacketDeliveryState, RateSample

BBR_CC_NAME = "bbr"
"""aioquic congestion-control name of :class:`BbrCongestionControl`."""

INF = float("inf")


def _key(packet: QuicSentPacket) -> tuple[object, int]:
    """A sent packet's identity: packet numbers count per epoch (RFC 9000 §12.3)."""
    return (packet.epoch, packet.packet_number)


class BbrCongestionControl(QuicCongestionControl):
    """BBRv3 (module doc). Public read-only state for logs and tests: ``state``,
    ``max_bw_bytes_per_s``, ``bw_bytes_per_s``, ``min_rtt_s``, ``inflight_hi_bytes``,
    ``pacing_rate_bytes_per_s``, ``send_quantum_bytes``, ``round_count``,
    ``full_bw_reached``; ``congestion_window`` and ``bytes_in_flight`` as aioquic's.

    Args:
        max_datagram_size: SMSS, bytes.
        rng: source of BBRPickProbeWait's randomness (seed it for reproducible tests).
    """

    def __init__(self, *, max_datagram_size: int, rng: random.Random | None = None) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self._mss = max_datagram_size
        self._rng = rng if rng is not None else random.Random()
        self._initial_cwnd = K_INITIAL_WINDOW * max_datagram_size
        self._sampler = DeliveryRateSampler()
        self._sent: dict[tuple[object, int], PacketDeliveryState] = {}
        self._ack_now_s: float | None = None  # an ACK's packets are being counted
        self._conn_min_rtt_s: float | None = None
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
        # BBRInitPacingRate: InitialCwnd / 1 ms until an RTT is known
        self.pacing_rate_bytes_per_s = STARTUP_PACING_GAIN * self._initial_cwnd / 0.001
        self.send_quantum_bytes = 2 * max_datagram_size
        self._enter_startup()

    # ------------------------------------------------------------------ aioquic events

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        """BBROnTransmit (BBRHandleRestartFromIdle) and the packet's delivery snapshot."""
        self._finish_ack()
        now = packet.sent_time if packet.sent_time is not None else 0.0
        if self.bytes_in_flight == 0 and self._sampler.app_limited_bytes:
            self._handle_restart_from_idle(now)
        state = self._sampler.on_packet_sent(
            packet_number=packet.packet_number, sent_time_s=now,
            size_bytes=packet.sent_bytes, bytes_in_flight=self.bytes_in_flight)
        self._sent[_key(packet)] = state
        self.bytes_in_flight += packet.sent_bytes
        if self.bytes_in_flight + self._mss > self.congestion_window:
            self._is_cwnd_limited = True  # no room for another full packet

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        """UpdateRateSample for one packet of the ACK being processed."""
        self.bytes_in_flight -= packet.sent_bytes
        state = self._sent.pop(_key(packet), None)
        if state is None:
            return
        if self._ack_now_s is not None and self._ack_now_s != now:
            self._finish_ack()
        self._ack_now_s = now
        self._sampler.on_packet_acked(state, now)

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        """aioquic's RTT sample closes the ACK's list of packets: BBRUpdateOnACK now."""
        if not self._first_rtt_seen and self.bw_bytes_per_s == 0:
            # BBRInitPacingRate with SRTT known: StartupPacingGain · InitialCwnd / SRTT
            self.pacing_rate_bytes_per_s = (STARTUP_PACING_GAIN * self.congestion_window
                                            / max(rtt, 0.001))
        self._first_rtt_seen = True
        self._finish_ack()

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        """BBRUpdateOnLoss per packet, then a recovery episode (RFC 9002 §7.3.2)."""
        self._finish_ack()
        latest_sent_s: float | None = None
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            state = self._sent.pop(_key(packet), None)
            if state is None:
                continue
            self._sampler.on_packet_lost(state)
            self._bytes_lost_in_round += state.size_bytes
            self._loss_events_in_round += 1
            self._handle_lost_packet(state, now)
            if latest_sent_s is None or state.sent_time_s > latest_sent_s:
                latest_sent_s = state.sent_time_s
        in_episode = (self._recovery_start_s is not None and latest_sent_s is not None
                      and latest_sent_s <= self._recovery_start_s)
        if latest_sent_s is not None and not in_episode:
            # RFC 9002 §7.3.2: one episode per round of losses; ngtcp2 bbr_handle_recovery
            self._save_cwnd()
            self._in_recovery = True
            self._recovery_start_s = now
            self.congestion_window = max(self.bytes_in_flight + self._mss, self._min_pipe_cwnd())

    def on_packets_expired(self, *, packets: Iterable[QuicSentPacket]) -> None:
        """Packets of a discarded space leave the flight."""
        self._finish_ack()
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            self._sent.pop(_key(packet), None)

    def on_persistent_congestion(self) -> None:
        """RFC 9002 §7.6.2: collapse to the flight plus one packet (ngtcp2's BBR)."""
        self._save_cwnd()
        self._in_recovery = False
        self._recovery_start_s = None
        self.congestion_window = max(self.bytes_in_flight + self._mss, self._min_pipe_cwnd())

    def on_app_limited(self) -> None:
        """The sender has nothing more to send now: mark the connection app-limited
        (draft "Detecting application-limited phases"; called by the server's send loop)."""
        self._sampler.mark_app_limited(self.bytes_in_flight)

    @property
    def full_bw_count(self) -> int:
        """Rounds in a row without 25 % growth of the delivery rate (BBR.full_bw_count)."""
        return self._full_bw_count

    def get_log_data(self) -> dict[str, Any]:
        """aioquic's qlog metrics plus BBR's state."""
        data = super().get_log_data()
        data.update(bbr_state=self.state.value, pacing_rate=int(self.pacing_rate_bytes_per_s))
        return data

    # ------------------------------------------------------------------ per ACK

    def _finish_ack(self) -> None:
        now = self._ack_now_s
        if now is None:
            return
        self._ack_now_s = None
        rs = self._sampler.generate(self._conn_min_rtt_s)
        if rs.rtt_s is not None:
            rtt = max(rs.rtt_s, 0.0)
            if self._conn_min_rtt_s is None or rtt < self._conn_min_rtt_s:
                self._conn_min_rtt_s = rtt
        if (self._in_recovery and rs.newest_sent_time_s is not None
                and self._recovery_start_s is not None
                and rs.newest_sent_time_s > self._recovery_start_s):
            self._in_recovery = False  # ngtcp2 bbr_handle_recovery: the episode is over
            self._restore_cwnd()
        self._update_model_and_state(rs, now)
        self._update_control_parameters(rs)

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

    def _update_control_parameters(self, rs: RateSample) -> None:
        """BBRUpdateControlParameters."""
        self._set_pacing_rate(self.pacing_gain)
        self._set_send_quantum()
        self._set_cwnd(rs)

    # ------------------------------------------------------------------ model

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

    def _start_round(self) -> None:
        """BBRStartRound."""
        self._next_round_delivered = self._sampler.delivered_bytes

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

    def _reset_full_bw(self) -> None:
        """BBRResetFullBW."""
        self._full_bw = 0.0
        self._full_bw_count = 0
        self._full_bw_now = False

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

    def _check_drain(self, now: float) -> None:
        """BBRCheckDrain: Drain ends once the flight is down to one BDP (BBRInflight(1.0))."""
        if self.state is BbrState.DRAIN and self.bytes_in_flight <= self._inflight(1.0):
            self._start_probe_bw_down(now)  # BBREnterProbeBW

    # ------------------------------------------------------------------ ProbeBW

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

    # ------------------------------------------------------------------ min RTT, ProbeRTT

    def _update_min_rtt(self, rs: RateSample, now: float) -> None:
        """BBRUpdateMinRTT: a 5 s probe filter feeding the 10 s min-RTT filter."""
        self._probe_rtt_expired = now > self._probe_rtt_min_stamp_s + PROBE_RTT_INTERVAL_S
        if rs.rtt_s is not None and (rs.rtt_s < self._probe_rtt_min_delay_s
                                     or self._probe_rtt_expired):
            self._probe_rtt_min_delay_s = rs.rtt_s
            self._probe_rtt_min_stamp_s = now
        min_rtt_expired = now > self._min_rtt_stamp_s + MIN_RTT_FILTER_S
        if self._probe_rtt_min_delay_s < self.min_rtt_s or min_rtt_expired:
            self.min_rtt_s = self._probe_rtt_min_delay_s
            self._min_rtt_stamp_s = self._probe_rtt_min_stamp_s

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

    # ------------------------------------------------------------------ control

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

    def _set_cwnd(self, rs: RateSample) -> None:
        """BBRSetCwnd: grow by what was acknowledged up to max_inflight (cwnd_gain BDPs plus
        extra_acked, BBRUpdateMaxInflight), then the ProbeRTT and model bounds."""
        max_inflight = self._quantization_budget(
            self._bdp_multiple(self._cwnd_gain) + self._extra_acked.best)
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


register_congestion_control(BBR_CC_NAME, BbrCongestionControl)
