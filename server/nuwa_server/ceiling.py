"""The loss-based ceiling under Nuwa's grants: aioquic's Cubic, validated by use,
restarting where the RFCs aim after an outage, leaving slow start on its own queue.

In ``nuwa`` and ``oracle`` modes the server sends at most min(grant, cwnd): the
receiver's delay-based grant is the control, and Cubic's window is only a
safety ceiling against loss. Three things make aioquic's Cubic a poor ceiling:

1. **It grows on every ACK whether or not the window is used.** Under a grant
   the sender is almost never cwnd-limited, so the window grew without bound
   (issue 13: 9.8 MB of ceiling over 0.38 MB in flight; Cubic alone peaked at
   1.5 MB), and a receiver that behaved and then granted 2^62 got a burst of
   that size paced at ceiling/srtt. Here the window grows only while it is
   used (RFC 9002 §7.8, RFC 9438 §5.8): see :meth:`NuwaCeilingCongestionControl.cwnd_limited`
   for the exact test (Linux's ``tcp_is_cwnd_limited``), and Cubic's clock
   ``t`` stops while the window is unused, so its target does not accumulate
   either (RFC 9438 §5.8).

2. **An outage leaves it at the minimum window for seconds.** A downlink outage
   (12 s on the Lumos LTE trace) shows up three ways: persistent congestion
   (RFC 9002 §7.6), losses declared long after sending, or Cubic's own reset
   of the window after 2 s without an ACK (``K_CUBIC_MAX_IDLE_TIME``). aioquic
   then either computes ssthresh from a flight the loss just emptied (near the
   minimum window) or leaves slow start to its delay-based exit, which the
   outage's late RTT samples trigger at once; the ceiling regrew at about one
   packet per RTT (docs/RELIABILITY.md, "Link outages"). Here each restart slow
   starts (RFC 9002 §7.3.1) toward an explicit ssthresh computed from the flight
   actually in use before the outage (RFC 7661 §4.4.1, RFC 9438 §4.6, RFC 5681
   §4.1, RFC 7661 §4.4.3; see :meth:`NuwaCeilingCongestionControl.on_packets_lost`
   and :meth:`~NuwaCeilingCongestionControl.on_packet_sent`), then continues in
   Cubic's avoidance toward the window before the outage.

3. **Its delay-based slow-start exit reads the receiver's queue as its own.** aioquic ends
   slow start when 5 RTT samples are 25 % over the path's minimum; Nuwa keeps a queue near
   Td (about half a base RTT), so under a grant the ceiling left slow start whenever that
   queue showed, at whatever window it had (76–87 kB in clean-clone CI runs, where the
   grants then asked for 140–350 kB: Nuwa at 0.85 of the link). Here the exit judges only
   the queue this window builds (:meth:`NuwaCeilingCongestionControl.on_rtt_measurement`),
   a packet that met that queue grows nothing, and an exit the receiver's own draining
   shows to be spurious is undone (RFC 9406 §4.2), while a receiver that grants more than
   its queue allows still gets no more than Cubic alone (issue 13's bound).

The Cubic baselines (``--cc cubic``) keep aioquic's Cubic unchanged. Sans-I/O:
every time comes from the packets and ``now`` arguments aioquic passes (s).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from aioquic.quic.congestion.base import (
    K_INITIAL_WINDOW,
    K_MINIMUM_WINDOW,
    register_congestion_control,
)
from aioquic.quic.congestion.cubic import (
    K_CUBIC_LOSS_REDUCTION_FACTOR,
    K_CUBIC_MAX_IDLE_TIME,
    CubicCongestionControl,
)
from aioquic.quic.packet_builder import QuicSentPacket

CEILING_NAME = "nuwa_ceiling"
OUTAGE_LOSS_AGE_S = 1.0
"""A loss declared at least this long (and 8 RTTs) after the packet was sent is an outage's."""

CWND_LIMITED_SLACK_PACKETS = 2
"""A send that leaves bytes in flight within this many max-size packets of the window
counts as cwnd-limited: the server's pump stops before a frame (≤ one packet) that
would not fit, so a window-limited round always ends within one packet of cwnd."""

PIPEACK_MIN_PERIOD_S = 1.0
"""pipeACK sampling period is max(3 RTT, this), s (RFC 7661 §4.2, as its Linux
reference implementation sets it)."""

DELAY_EXIT_SAMPLES = 5
"""Consecutive RTT samples over the threshold, spanning at least one RTT, that end the first
slow start (aioquic's HyStart-like monitor uses 5 samples at least 1 ms apart; the span is
RFC 9406 §4.2's round minimum: see :meth:`NuwaCeilingCongestionControl.on_rtt_measurement`)."""

DELAY_EXIT_INCREASE = 0.25
"""Relative RTT increase that counts toward the delay exit (aioquic's monitor: 25 %)."""

DELAY_EXIT_MIN_INCREASE_S = 0.004
"""The increase is at least this much, s (RFC 9406 §4.3 MIN_RTT_THRESH; on loopback 25 %
of a sub-millisecond RTT is scheduling noise)."""

DELAY_EXIT_GRANULARITY_S = 0.001
"""Samples closer together than this count once (aioquic's K_GRANULARITY)."""

PROBATION_ROUNDS = 5
"""Rounds after the delay exit during which an RTT sample below the exit's baseline
resumes slow start (RFC 9406 §4.2: CSS_ROUNDS = 5)."""

MAX_SPURIOUS_EXITS = 2
"""How many delay exits may be undone this way per connection (each costs a receiver
that wants to exploit it a drained queue, and gains it at most one exit's overshoot)."""

IDLE_SSTHRESH_FRACTION = 0.75
"""After an idle reset ssthresh keeps at least ¾ of the window before (RFC 7661 §4.4.3)."""


def _delay_exit_threshold_s(reference_s: float) -> float:
    """The delay exit's RTT threshold over ``reference_s`` (s): aioquic's 25 %, at least RFC
    9406 §4.3's MIN_RTT_THRESH (4 ms) above; also the baseline an exit's probation compares
    with (RFC 9406 §4.2)."""
    return reference_s + max(DELAY_EXIT_INCREASE * reference_s, DELAY_EXIT_MIN_INCREASE_S)


class NuwaCeilingCongestionControl(CubicCongestionControl):
    """aioquic Cubic that grows only while its window is used and restarts slow start
    toward the flight in use after an outage (module doc).

    Attributes (read-only for callers; counters for logs and tests):
        acks_not_grown: ACKs that did not grow the window because it was not used.
        restarts: outage restarts so far (persistent congestion, outage-age
            losses, idle resets).
        delay_exits: delay-based exits from slow start (:meth:`on_rtt_measurement`).
        spurious_exits: delay exits undone in their probation rounds.
        first_delay_exit_bytes: the window at the first delay exit (None: none yet).
    """

    def __init__(self, max_datagram_size: int) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self._mss_bytes = max_datagram_size
        self._restart_target_bytes: int | None = None
        """ssthresh of an outage restart still in slow start (None: none running)."""
        self._restart_w_max_bytes = 0
        # Rounds (one RTT of sends each, as Linux's cwnd_usage_seq): a round starts at
        # the first send after the previous one closed and closes when a packet sent
        # in it is acknowledged.
        self._round_start_s: float | None = None
        self._round_max_flight_bytes = 0
        self._prev_round_max_flight_bytes = 0
        self._round_cwnd_limited = False
        self._prev_round_cwnd_limited = False
        self._round_held_back = False
        self._prev_round_held_back = False
        self._round_acked_bytes = 0
        self._pipeack_samples: deque[tuple[float, int]] = deque()
        self._last_ack_now_s: float | None = None
        # The first slow start's delay exit (on_rtt_measurement): a binding stretch starts
        # with the first send this window limits; its RTT reference is what the flow had
        # just before (the receiver's operating point).
        self._binding_since_s: float | None = None
        self._binding_ref_rtt_s = 0.0
        self._recent_rtt_s: deque[float] = deque(maxlen=DELAY_EXIT_SAMPLES)
        self._min_rtt_s: float | None = None
        self._delay_exit_count = 0
        self._delay_exit_above_since_s = 0.0
        """When the current run of samples over the delay exit's threshold began, s."""
        self._delay_exit_sample_s = 0.0
        self._probation_rounds = 0
        """Rounds left in which samples back under the exit's threshold resume slow start
        (0: no probation running)."""
        self._probation_reference_s = 0.0
        """The exit's reference RTT, s: its threshold (:func:`_delay_exit_threshold_s`) is the
        baseline, and samples must stay under it this long while the window binds."""
        self._probation_under_since_s: float | None = None
        """When the current run of probation samples under the baseline began (None: none)."""
        self.spurious_exits = 0
        self.delay_exits = 0
        self.first_delay_exit_bytes: int | None = None
        self._loss_flight_bytes = 0
        self._pipeack_at_loss_bytes = 0
        self.acks_not_grown = 0
        self.restarts = 0

    # ------------------------------------------------------------------ window validation

    def on_window_limited(self) -> None:
        """The sender had a frame the grant's window allowed, but the ceiling held it back:
        the pacer had no budget (RFC 9002 §7.8: a window is underutilized only when
        sending is not pacing limited), or the grant rule's own count of outstanding
        bytes (which includes bytes delivered but not yet reported) reached this window
        before the transport's bytes in flight did. Either way the window is what limits
        the sender, so it is in use, provided at least half of it is in flight (RFC 7661
        §4.2's validated phase: pipeACK ≥ ½ cwnd). Without that condition a receiver
        that under-reports what it received would hold the grant count at the window
        with little in flight and grow the window on the ACKs of that little, for a
        burst later. Called by the server's pump."""
        self._round_held_back = True

    def cwnd_limited(self) -> bool:
        """Whether the window is in use, so that an ACK may grow it.

        Linux's ``tcp_is_cwnd_limited`` (RFC 9002 §7.8, RFC 9438 §5.8, and
        draft-ietf-ccwg-ratelimited-increase §3's limit(maxFS) = 2·maxFS in slow
        start): true when, in the current or the previous round, a send left bytes
        in flight within :data:`CWND_LIMITED_SLACK_PACKETS` packets of the window
        or the sender reported being held back by this window
        (:meth:`on_window_limited`) and at least half the window is in flight now
        (checked at each ACK, so the window stops at about twice the flight of a
        sender held back by anything else); in slow start also while the window is
        below twice the largest flight of those rounds.
        """
        if self._window_binding():
            return True
        if self.ssthresh is None or self.congestion_window < self.ssthresh:
            used = max(self._round_max_flight_bytes, self._prev_round_max_flight_bytes)
            return self.congestion_window < 2 * used
        return False

    def _window_binding(self) -> bool:
        """Whether this window, not the grant or the application, limited the sender in
        the current or the previous round: a send left the flight within
        :data:`CWND_LIMITED_SLACK_PACKETS` packets of it, or the pump was held back by it
        (:meth:`on_window_limited`) with at least half of it in flight now (RFC 7661 §4.2)."""
        if self._round_cwnd_limited or self._prev_round_cwnd_limited:
            return True
        held_back = self._round_held_back or self._prev_round_held_back
        return held_back and 2 * self.bytes_in_flight >= self.congestion_window

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        """Cubic's RTT, and the first slow start's delay exit, judged on the queue this
        window builds, not on the queue the receiver keeps.

        aioquic's Cubic ends slow start when 5 samples are 25 % over the path's minimum RTT
        (its HyStart-like monitor). Under a grant that reads the queue Nuwa keeps near Td
        (about half a base RTT) as congestion, whether or not this window limits the sender:
        in clean-clone CI runs the ceiling left slow start at 76–84 kB in the first 0.2 s
        while the grant held the flight at 30–40 kB, then crept up as Cubic for seconds
        while the grants asked for 140–350 kB (Nuwa at 0.85 of the link). Here the same test
        (:data:`DELAY_EXIT_SAMPLES` samples :data:`DELAY_EXIT_INCREASE` over a reference, at
        least :data:`DELAY_EXIT_MIN_INCREASE_S`, 1 ms apart, and, as RFC 9406 §4.2's test of a
        round's minimum RTT, none under it for one reference RTT) counts only samples of packets
        sent while this window limits the sender (the sample's packet left at ``now - rtt``:
        aioquic's latest RTT has no ACK delay taken off), against the larger of the path's
        minimum and the RTT the flow had when the window began to limit it (the least of the
        last :data:`DELAY_EXIT_SAMPLES` samples then). A receiver that grants more than its
        queue allows (a liar) makes this window's own queue grow over that reference and
        ends slow start as Cubic alone's monitor would; an honest receiver lowers its grant
        once the queue passes its Td, and the window stops limiting. RFC 9406 §4.2
        (HyStart++) likewise compares against a recent RTT, not the all-time minimum; RFC
        9438 §4.10 lets a Cubic sender choose its slow-start exit."""
        self.rtt = rtt
        min_rtt_s = rtt if self._min_rtt_s is None else min(self._min_rtt_s, rtt)
        self._min_rtt_s = min_rtt_s
        own = self._binding_since_s is not None and now - rtt >= self._binding_since_s
        if (self.ssthresh is None and own and self._binding_this_round()
                and now >= self._delay_exit_sample_s + DELAY_EXIT_GRANULARITY_S):
            self._delay_exit_sample_s = now
            reference_s = max(min_rtt_s, self._binding_ref_rtt_s)
            threshold_s = _delay_exit_threshold_s(reference_s)
            if rtt >= threshold_s:
                if self._delay_exit_count == 0:
                    self._delay_exit_above_since_s = now
                self._delay_exit_count += 1
                # RFC 9406 §4.2 judges a round's *minimum* RTT: the exit needs every sample
                # of at least one RTT over the threshold, not 5 samples 1 ms apart, which one
                # delivery gap of a cellular link gives (T-Mobile LTE's p99 gap is 14 ms: the
                # ceiling left slow start at 35 kB in one run of three, Nuwa at 0.77 of the
                # link against 0.94). While samples are over, the window does not grow
                # (on_packet_acked), so waiting the round out gives a liar nothing more.
                lasted_s = now - self._delay_exit_above_since_s
                if self._delay_exit_count >= DELAY_EXIT_SAMPLES and lasted_s >= reference_s:
                    self.ssthresh = self.congestion_window  # as aioquic's exit
                    self.delay_exits += 1
                    if self.first_delay_exit_bytes is None:
                        self.first_delay_exit_bytes = self.congestion_window
                    if self.spurious_exits < MAX_SPURIOUS_EXITS:
                        # RFC 9406 §4.2 compares later rounds with the RTT at the exit; here
                        # the RTT must fall back under the exit's own threshold: the queue
                        # that ended slow start has drained
                        self._probation_rounds = PROBATION_ROUNDS
                        self._probation_reference_s = reference_s
                        self._probation_under_since_s = None
                    self._delay_exit_count = 0
            else:
                self._delay_exit_count = 0
        elif self._probation_rounds > 0:
            if rtt >= _delay_exit_threshold_s(self._probation_reference_s):
                self._probation_under_since_s = None
            elif not self._binding_this_round():
                self._resume_slow_start()  # the receiver drained the queue itself
            elif self._probation_under_since_s is None:
                self._probation_under_since_s = now
            elif now - self._probation_under_since_s >= self._probation_reference_s:
                # RFC 9406 §4.2 (CSS): the round's minimum RTT is back under the baseline while
                # this window limits the sender: the queue that ended slow start did not stand
                # (a receiver's stall inflated the samples: a clean-clone CI run exited at 232 kB
                # on a 150 ms stall of the page in its first half second, Nuwa at 0.87 of the
                # link). A liar keeps its queue standing, so its samples stay over.
                self._resume_slow_start()
        if not own:
            self._recent_rtt_s.append(rtt)

    def _resume_slow_start(self) -> None:
        """RFC 9406 §4.2: an RTT below the exit's baseline during conservative slow start
        means the exit was spurious: slow start resumes. Here on one sample when the
        receiver's grant, not this window, limits the sender meanwhile (a queue the receiver
        drained itself, as Nuwa's start-up does after a transient: the clean-clone CI runs),
        and while this window limits the sender only on every sample of one reference RTT
        under the baseline (the round's minimum, as the exit), so that a receiver that keeps
        granting more than the window (a liar, a flood) gets no resume from a lucky sample.
        Unlike RFC 9406's CSS the window does not grow in
        the probation rounds (:meth:`on_packet_acked`), so a receiver that keeps its queue
        high (a liar) is held at the window of the exit."""
        self.ssthresh = None
        self._first_slow_start = True  # aioquic starts Cubic's epoch at the next exit
        self._probation_rounds = 0
        self.spurious_exits += 1

    def _binding_this_round(self) -> bool:
        """Whether this window limits the sender in the round now running (or, between
        rounds, in the one just closed): the delay exit needs the window to be what is
        building the queue now, not a round ago."""
        if self._round_start_s is None:  # no send since the last round closed
            return self._prev_round_cwnd_limited or self._prev_round_held_back
        return self._round_cwnd_limited or (
            self._round_held_back and 2 * self.bytes_in_flight >= self.congestion_window)

    def _update_binding(self, sent_s: float | None) -> None:
        """Start or end a binding stretch at a send (see :meth:`on_rtt_measurement`).
        Before the first RTT sample the initial window is the sender's own (RFC 9002
        §7.2), so the first slow start's stretch starts with the first packet."""
        if not (self._window_binding() or self._min_rtt_s is None):
            self._binding_since_s = None
            self._delay_exit_count = 0
        elif self._binding_since_s is None and sent_s is not None:
            self._binding_since_s = sent_s
            # the least of the last samples: the RTT the flow had before this window
            # limited it (0 before any sample: the path's minimum is the reference then)
            self._binding_ref_rtt_s = min(self._recent_rtt_s, default=0.0)

    def stats(self) -> dict[str, int | None]:
        """Counters for the session summary: outage restarts, ACKs that did not grow the
        unused window, delay exits from slow start and how many were undone (spurious),
        and the window at the first delay exit (bytes; None: none)."""
        return {"restarts": self.restarts, "acks_not_grown": self.acks_not_grown,
                "delay_exits": self.delay_exits, "spurious_exits": self.spurious_exits,
                "first_delay_exit_bytes": self.first_delay_exit_bytes}

    def pipeack_bytes(self, now: float) -> int:
        """RFC 7661 §4.2 pipeACK: the most bytes acknowledged in one round over the last
        max(3 RTT, 1 s); 0 when no round closed in that period."""
        horizon = now - max(3 * self.rtt, PIPEACK_MIN_PERIOD_S)
        samples = self._pipeack_samples
        while samples and samples[0][0] < horizon:
            samples.popleft()
        return max((b for _, b in samples), default=0)

    def _close_round(self, now: float) -> None:
        if self._probation_rounds > 0:
            self._probation_rounds -= 1
        self._pipeack_samples.append((now, self._round_acked_bytes))
        self._round_acked_bytes = 0
        self._prev_round_max_flight_bytes = self._round_max_flight_bytes
        self._prev_round_cwnd_limited = self._round_cwnd_limited
        self._prev_round_held_back = self._round_held_back
        self._round_max_flight_bytes = self.bytes_in_flight
        self._round_cwnd_limited = False
        self._round_held_back = False
        self._round_start_s = None

    # ------------------------------------------------------------------ restarts

    def _restart(self, *, ssthresh_bytes: int, w_max_bytes: int) -> None:
        """Slow start (RFC 9002 §7.3.1) from the current window up to ``ssthresh_bytes``,
        then Cubic's avoidance (RFC 9438 §4.2) toward ``w_max_bytes``. A restart still
        in slow start keeps the larger of its aims (several outage signals in a row)."""
        if self._restart_target_bytes is not None:
            ssthresh_bytes = max(ssthresh_bytes, self._restart_target_bytes)
            w_max_bytes = max(w_max_bytes, self._restart_w_max_bytes)
        self.ssthresh = max(int(ssthresh_bytes), K_MINIMUM_WINDOW * self._mss_bytes)
        self._W_max = max(int(w_max_bytes), self.ssthresh)
        # RFC 9438 §4.2: a new avoidance epoch (t, K from W_max) begins when slow start ends
        self._first_slow_start = False
        self._starting_congestion_avoidance = True
        self._restart_target_bytes = self.ssthresh
        self._restart_w_max_bytes = self._W_max
        self._probation_rounds = 0
        self.restarts += 1

    def on_persistent_congestion(self) -> None:
        """RFC 9002 §7.6.2: window → minimum window; then slow start toward
        β_cubic · max(pipeACK, LossFlightSize) (RFC 9438 §4.6, RFC 7661 §4.4.1)."""
        w_max = self._W_max  # set by the loss that preceded (RFC 9438 §4.6)
        super().on_persistent_congestion()  # cwnd = kMinimumWindow (RFC 9002 §7.6.2)
        self._restart(ssthresh_bytes=self._loss_restart_aim(), w_max_bytes=w_max)

    def _loss_restart_aim(self) -> int:
        # RFC 7661 §4.4.1: the response to a loss measures the flight from
        # max(pipeACK, LossFlightSize), not from a window that was not in use;
        # RFC 9438 §4.6: Cubic's ssthresh = flight × β_cubic (0.7).
        flight = max(self._pipeack_at_loss_bytes, self._loss_flight_bytes)
        return int(flight * K_CUBIC_LOSS_REDUCTION_FACTOR)

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        """Account the send; after aioquic's idle reset restart toward the window before.

        aioquic resets the window to the initial window when a packet goes out 2 s after
        the last ACK (a PTO probe into an outage) and leaves slow start to its delay exit,
        which the outage's late RTT samples end at once (seen on full-capacity Lumos LTE:
        871 → 18 packets, regrowing ~1 packet per RTT). Here: RFC 5681 §4.1 restart
        window min(IW, cwnd), slow start toward ssthresh = max(ssthresh, ¾·cwnd before)
        (RFC 7661 §4.4.3), then Cubic toward the window before the silence.
        """
        sent_s = packet.sent_time
        idle = (
            sent_s is not None
            and self.last_ack != 0.0
            and sent_s - self.last_ack >= K_CUBIC_MAX_IDLE_TIME
        )
        if idle:
            before_bytes = self.congestion_window
            ssthresh_before = self.ssthresh
            super().on_packet_sent(packet=packet)  # aioquic's reset: window = IW
            # RFC 5681 §4.1: restart window RW = min(IW, cwnd)
            self.congestion_window = min(K_INITIAL_WINDOW * self._mss_bytes, before_bytes)
            aim = max(ssthresh_before or 0, int(IDLE_SSTHRESH_FRACTION * before_bytes))
            self._restart(ssthresh_bytes=aim, w_max_bytes=before_bytes)  # RFC 7661 §4.4.3
            # every probe sent while still idle resets again; the aims stay the largest
        else:
            super().on_packet_sent(packet=packet)
        if self._round_start_s is None:
            self._round_start_s = sent_s
        flight = self.bytes_in_flight
        if flight > self._round_max_flight_bytes:
            self._round_max_flight_bytes = flight
        if flight + CWND_LIMITED_SLACK_PACKETS * self._mss_bytes >= self.congestion_window:
            self._round_cwnd_limited = True
        self._update_binding(sent_s)

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        """Grow as Cubic only while :meth:`cwnd_limited`; otherwise only account the ACK
        and stop Cubic's clock (RFC 9438 §5.8: t excludes application-limited time)."""
        self._round_acked_bytes += packet.sent_bytes
        start = self._round_start_s
        if start is not None and packet.sent_time is not None and packet.sent_time >= start:
            self._close_round(now)
        if self.cwnd_limited() and self._probation_rounds == 0:
            limited_by_use = not self._window_binding()
            before = self.congestion_window
            first_slow_start = self.ssthresh is None
            slow_start = self.ssthresh is None or before < self.ssthresh
            since = self._binding_since_s
            sent_before_binding = (since is None or packet.sent_time is None
                                   or packet.sent_time < since)
            super().on_packet_acked(now=now, packet=packet)
            queued = first_slow_start and self._delay_exit_count > 0
            if slow_start and not limited_by_use and (sent_before_binding or queued):
                # a packet sent before this window limited the sender grows it by nothing
                # in slow start: it was already counted by the 2 × flight rule below
                # (RFC 7661 §4.2: only a used window is validated); else a receiver whose
                # grant jumps (a liar) would double the window on the ACKs of its old,
                # smaller flight before the queue it now builds shows in any RTT sample.
                # Nor does any ACK while the last RTT sample was over the delay exit's
                # threshold (on_rtt_measurement): the queue this window built shows, and
                # the four more samples the exit waits for would otherwise add a round of
                # doubling (+158 kB in one obey-then-lie run)
                self.congestion_window = before
            if limited_by_use:
                # slow start while not cwnd-limited: at most 2 × the flight in use
                # (draft-ietf-ccwg-ratelimited-increase §3, Linux tcp_is_cwnd_limited)
                used = max(self._round_max_flight_bytes, self._prev_round_max_flight_bytes)
                self.congestion_window = min(self.congestion_window, max(before, 2 * used))
        else:
            # RFC 9002 §7.8: the window is underutilized, so it SHOULD NOT grow (nor in the
            # probation rounds after a delay exit: on_rtt_measurement)
            self.bytes_in_flight -= packet.sent_bytes
            self.last_ack = packet.sent_time if packet.sent_time is not None else self.last_ack
            self.acks_not_grown += 1
            in_epoch = self.ssthresh is not None and not self._starting_congestion_avoidance
            if in_epoch and self._last_ack_now_s is not None and now > self._last_ack_now_s:
                self._t_epoch += now - self._last_ack_now_s  # RFC 9438 §5.8
        self._last_ack_now_s = now
        target = self._restart_target_bytes
        if target is not None and self.congestion_window >= target:
            self._restart_target_bytes = None  # the restart's slow start is over

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        """Cubic's decrease; a loss found long after sending is an outage's: restart.

        A loss declared at least :data:`OUTAGE_LOSS_AGE_S` (and 8 RTTs) after sending
        means the path was dark, not congested (congestion is found ~1 RTT after
        sending). aioquic's decrease then computed ssthresh from the flight left
        after removing the lost packets (near zero); the restart instead slow starts
        toward β_cubic · max(pipeACK, LossFlightSize) (RFC 7661 §4.4.1, RFC 9438 §4.6).
        Any other loss ends a running restart (Cubic as usual).
        """
        packets = list(packets)
        self._probation_rounds = 0  # a loss is not a transient queue
        sent_last: float = max((p.sent_time for p in packets if p.sent_time is not None),
                               default=now)
        outage = now - sent_last >= max(OUTAGE_LOSS_AGE_S, 8 * self.rtt)
        # RFC 7661 §4.4.1 LossFlightSize: the flight when the loss was found, lost included
        self._loss_flight_bytes = self.bytes_in_flight
        self._pipeack_at_loss_bytes = self.pipeack_bytes(now)
        super().on_packets_lost(now=now, packets=packets)
        if outage:
            self._restart(ssthresh_bytes=self._loss_restart_aim(), w_max_bytes=self._W_max)
        else:
            self._restart_target_bytes = None


register_congestion_control(CEILING_NAME, NuwaCeilingCongestionControl)
