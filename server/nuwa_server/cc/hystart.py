"""Cubic with HyStart++ slow start (RFC 9406) as an aioquic congestion controller
(``cubic_hystart``): an opt-in controller of a Nuwa connection while it is sender-driven
(``--sender-cc cubic_hystart``, :mod:`..switcher`); the default stays aioquic's Cubic
(end of this doc).

Why a Nuwa flow does not simply become aioquic's Cubic. The switch rule moves a flow to
sender-driven control when a queue it did not build stands above X for Y
(:mod:`..switch_policy`); the new controller inherits the ceiling's window and, when
nothing was lost yet, no ssthresh, so it slow starts. aioquic's Cubic ends slow start
when five samples are 25 % over the least RTT its monitor has seen (its HyStart-like
``QuicRttMonitor``), and the monitor of a controller created at the switch has seen only
the competitor's standing queue: the flow's own first round of growth passes 25 % and slow
start ends within one round. Simulated (``python -m nuwa_lab.sendersim``'s engine,
10 Mbit/s, 1,000 packets, a Cubic download 2 s after the Nuwa flow): the switched flow
left slow start at 312 kB next to a Cubic at 167 kB whose own monitor had stopped it at
138 kB; Cubic's growth, a function of the time since each flow's epoch, then kept the
earlier epoch ahead, and the flows held 0.40 / 0.60 of the link until the run ended
(docs/BENCHMARKS.md, fortieth session). A delay rise at a slow start's first rounds
is as often noise or another flow's queue as it is congestion, which is why RFC 9406
answers it with Conservative Slow Start rather than an exit: growth at a quarter of slow
start's for ``CSS_ROUNDS`` rounds, back to slow start if the round's minimum RTT falls
under the baseline again, then congestion avoidance; a loss ends either at once.

RFC 9438 §4.10 lets a Cubic sender choose its slow start and names HyStart++; past slow
start this is aioquic's Cubic unchanged. The Cubic baselines (``--cc cubic``, a
competitor in ``./nuwa mix``) keep aioquic's Cubic at its defaults.

**Why it is not the default (measured end to end, fortieth session).** Through the real
emulator the switched flow now overshoots the other way: next to a Cubic download
(``./nuwa mix --flows nuwa,cubic --switch rule``) Nuwa's share was 0.61-0.62 at 15 Mbit/s
(aioquic's Cubic: 0.40-0.41) and 0.68-0.72 in CI's 10 Mbit/s form (0.39-0.47), Jain over
the last 20 s 0.87-0.96 against 0.93-0.99; and with the larger window the flow fills the
queue alone once the download leaves, so the rule's early probe (a rate rise of 1.5× at a
queue fallen to 0.75×, :mod:`..switch_policy`) never fired and the queue stood until the
20 s timed probe (p95 853-877 ms from 5 s after the leave, against 45 ms). The simulator
showed neither (its pair ended near fair). Sans-I/O: times come
from the packets and the ``now`` aioquic passes (s), RTTs are aioquic's latest samples
(s), sizes bytes.
"""

from __future__ import annotations

import math

from aioquic.quic.congestion.base import register_congestion_control
from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.packet_builder import QuicSentPacket

HYSTART_CC_NAME = "cubic_hystart"
"""aioquic congestion-control name of :class:`HyStartCubicCongestionControl`."""

MIN_RTT_THRESH_S = 0.004
"""RFC 9406 §4.3 MIN_RTT_THRESH: the least RTT rise that ends slow start, s."""
MAX_RTT_THRESH_S = 0.016
"""RFC 9406 §4.3 MAX_RTT_THRESH: the largest RTT rise slow start waits for, s."""
MIN_RTT_DIVISOR = 8
"""RFC 9406 §4.3 MIN_RTT_DIVISOR: RttThresh = lastRoundMinRTT / this, clamped."""
N_RTT_SAMPLE = 8
"""RFC 9406 §4.3 N_RTT_SAMPLE: RTT samples a round needs before it is judged."""
CSS_GROWTH_DIVISOR = 4
"""RFC 9406 §4.3 CSS_GROWTH_DIVISOR: Conservative Slow Start grows at 1/this of slow start."""
CSS_ROUNDS = 5
"""RFC 9406 §4.3 CSS_ROUNDS: rounds of Conservative Slow Start before congestion avoidance."""


class HyStartCubicCongestionControl(CubicCongestionControl):
    """aioquic's Cubic whose slow start is RFC 9406's HyStart++ (module doc).

    Rounds follow packet numbers (RFC 9406 §4.2: a round ends when a packet sent after
    its start is acknowledged; QUIC numbers packets in send order). The RFC's limit L on
    the window's growth per ACK is infinite here: aioquic paces (RFC 9406 §4.3).

    Attributes:
        css_baseline_min_rtt_s: RFC 9406's cssBaselineMinRtt, s; None outside
            Conservative Slow Start.
        css_entries: times slow start entered Conservative Slow Start (logs, tests).
    """

    def __init__(self, max_datagram_size: int) -> None:
        # before super().__init__: Cubic's constructor calls reset(), which clears these
        self._hs_window_end_pn: int | None = None
        self._hs_largest_sent_pn = -1
        self._hs_last_round_min_rtt_s = math.inf
        self._hs_current_round_min_rtt_s = math.inf
        self._hs_rtt_samples = 0
        self._hs_css_rounds = 0
        self.css_baseline_min_rtt_s: float | None = None
        self.css_entries = 0
        super().__init__(max_datagram_size=max_datagram_size)

    def reset(self) -> None:
        """Cubic's reset (idle restart, persistent congestion: slow start again), with
        HyStart++'s round state cleared (RFC 9406 §4.2 starts from no rounds)."""
        super().reset()
        self._hs_window_end_pn = None
        self._hs_last_round_min_rtt_s = math.inf
        self._hs_current_round_min_rtt_s = math.inf
        self._hs_rtt_samples = 0
        self._hs_css_rounds = 0
        self.css_baseline_min_rtt_s = None

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        """Cubic's, and the largest packet number sent (the next round's end)."""
        super().on_packet_sent(packet=packet)
        self._hs_largest_sent_pn = max(self._hs_largest_sent_pn, packet.packet_number)

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        """One acknowledged packet: a new round when it was sent at or after the current
        round's end (RFC 9406 §4.2 "At the start of each round"), then slow start's,
        Conservative Slow Start's or Cubic's growth."""
        if self.ssthresh is None:
            if self._hs_window_end_pn is None or packet.packet_number >= self._hs_window_end_pn:
                self._start_round()
            if self.ssthresh is None and self.css_baseline_min_rtt_s is not None:
                # RFC 9406 §4.2 CSS: cwnd += min(N, L * SMSS) / CSS_GROWTH_DIVISOR (L infinite)
                self.bytes_in_flight -= packet.sent_bytes
                if packet.sent_time is not None:  # set when sent (aioquic's recovery)
                    self.last_ack = packet.sent_time  # as Cubic's ACK does (its idle reset)
                self.congestion_window += packet.sent_bytes // CSS_GROWTH_DIVISOR
                return
        super().on_packet_acked(now=now, packet=packet)

    def _start_round(self) -> None:
        """RFC 9406 §4.2 at a round's start: lastRoundMinRTT = currentRoundMinRTT,
        currentRoundMinRTT = infinity, rttSampleCount = 0, the round's end at the packet
        sent last; in Conservative Slow Start, one more round counted and, after
        CSS_ROUNDS, congestion avoidance (ssthresh = cwnd)."""
        self._hs_last_round_min_rtt_s = self._hs_current_round_min_rtt_s
        self._hs_current_round_min_rtt_s = math.inf
        self._hs_rtt_samples = 0
        self._hs_window_end_pn = self._hs_largest_sent_pn + 1
        if self.css_baseline_min_rtt_s is not None:
            self._hs_css_rounds += 1
            if self._hs_css_rounds >= CSS_ROUNDS:
                self.ssthresh = self.congestion_window  # RFC 9406 §4.2: enter congestion avoidance
                self.css_baseline_min_rtt_s = None

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        """Cubic's RTT, and HyStart++'s test of the round (RFC 9406 §4.2), in place of
        aioquic's delay monitor: in slow start, once the round has ``N_RTT_SAMPLE``
        samples, its minimum at least the last round's + clamp(last / 8, 4 ms, 16 ms)
        enters Conservative Slow Start; in it, a round's minimum under the baseline
        resumes slow start."""
        self.rtt = rtt
        if self.ssthresh is not None:
            return
        self._hs_current_round_min_rtt_s = min(self._hs_current_round_min_rtt_s, rtt)
        self._hs_rtt_samples += 1
        if self._hs_rtt_samples < N_RTT_SAMPLE:
            return
        current = self._hs_current_round_min_rtt_s
        if self.css_baseline_min_rtt_s is None:
            last = self._hs_last_round_min_rtt_s
            if math.isinf(last):
                return
            # RFC 9406 §4.2: RttThresh = max(MIN_RTT_THRESH,
            #                     min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))
            thresh_s = max(MIN_RTT_THRESH_S, min(last / MIN_RTT_DIVISOR, MAX_RTT_THRESH_S))
            if current >= last + thresh_s:
                self.css_baseline_min_rtt_s = current  # RFC 9406 §4.2: enter CSS
                self._hs_css_rounds = 0
                self.css_entries += 1
        elif current < self.css_baseline_min_rtt_s:
            self.css_baseline_min_rtt_s = None  # RFC 9406 §4.2: the rise was spurious; slow start


register_congestion_control(HYSTART_CC_NAME, HyStartCubicCongestionControl)
