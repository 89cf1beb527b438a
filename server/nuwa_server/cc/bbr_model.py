"""BBR's constants, states and filters (draft-ietf-ccwg-bbr, v3), shared by :mod:`.bbr`.

Names in the docstrings are the draft's (its constants and pseudocode functions), so a
line can be found in the draft by name. Values are the draft's, as ngtcp2's
``lib/ngtcp2_bbr.c`` and Linux's BBRv3 set them. Sizes are bytes, times s, rates bytes/s.
"""

from __future__ import annotations

from collections import deque
from enum import Enum

INF = float("inf")
"""An unset bound (the draft's Infinity), in the unit of what it bounds."""

STARTUP_PACING_GAIN = 2.77
"""BBRStartupPacingGain = 4·ln 2: doubles the sending rate each round."""
STARTUP_CWND_GAIN = 2.0
"""BBRStartupCwndGain."""
DRAIN_PACING_GAIN = 0.35
"""BBRDrainPacingGain (< 1 / 2.77: drains Startup's queue in about one round)."""
DEFAULT_CWND_GAIN = 2.0
"""BBRDefaultCwndGain: cwnd = 2 BDP tolerates delayed and stretched ACKs."""
PROBE_BW_DOWN_PACING_GAIN = 0.90
"""ProbeBW_DOWN pacing gain."""
PROBE_BW_CRUISE_PACING_GAIN = 1.0
PROBE_BW_REFILL_PACING_GAIN = 1.0
PROBE_BW_UP_PACING_GAIN = 1.25
"""ProbeBW_UP pacing gain."""
PROBE_BW_UP_CWND_GAIN = 2.25
"""ProbeBW_UP cwnd gain (ngtcp2: 225 %)."""
PROBE_RTT_CWND_GAIN = 0.5
"""BBRProbeRTTCwndGain: ProbeRTT's window is half a BDP."""

LOSS_THRESH = 0.02
"""BBRLossThresh: more than 2 % of a round's flight lost means inflight was too high."""
BETA = 0.7
"""BBRBeta: multiplicative decrease of the lower bounds and inflight_hi on loss."""
HEADROOM = 0.15
"""BBRHeadroom: ProbeBW_CRUISE leaves 15 % of inflight_hi for other flows."""
STARTUP_FULL_BW_THRESH = 1.25
"""BBRCheckFullBWReached: Startup's bandwidth must grow 25 % per round to continue."""
STARTUP_FULL_BW_ROUNDS = 3
"""BBRCheckFullBWReached: three rounds without that growth mean the pipe is full."""
STARTUP_FULL_LOSS_COUNT = 6
"""BBRStartupFullLossCnt: loss events in a round that can end Startup."""
PACING_MARGIN = 0.01
"""BBRPacingMarginPercent: pace 1 % below the model's bandwidth."""
MAX_BW_FILTER_CYCLES = 2
"""MaxBwFilterLen: the max-bandwidth filter spans two ProbeBW cycles."""
EXTRA_ACKED_FILTER_ROUNDS = 10
"""BBRExtraAckedFilterLen, rounds."""
MIN_RTT_FILTER_S = 10.0
"""MinRTTFilterLen, s."""
PROBE_RTT_INTERVAL_S = 5.0
"""ProbeRTTInterval: ProbeRTT at most this long after the last min-RTT probe, s."""
OUTAGE_MIN_RTTS = 4.0
"""A packet waited through an outage when its RTT is at least this many times the lowest RTT
the connection has measured and the link delivered less than OUTAGE_RATE_FRACTION of the
max-bandwidth filter while it was in flight (a dark or trickling link, not a standing queue,
which delivers at the link's rate; not a longer path, whose samples come at the usual rate).
Such samples do not refresh an expired min-RTT filter (BBRUpdateMinRTT; our rule, not the
draft's): where TCP would have timed out, retransmitted and (Karn, RFC 6298 §3) taken no RTT
sample from those packets, QUIC's unique packet numbers let the late ACKs through; Linux's BBR
likewise keeps suspect samples (delayed ACKs, tcp_bbr.c bbr_update_min_rtt) out of an expired
filter."""
OUTAGE_RATE_FRACTION = 0.25
"""The delivery rate over a packet's flight, as a fraction of BBR.max_bw, below which a long
RTT sample is an outage's (OUTAGE_MIN_RTTS)."""
PROBE_RTT_DURATION_S = 0.2
"""ProbeRTTDuration: time at the ProbeRTT window, s (plus one round)."""
PROBE_BW_WAIT_BASE_S = 2.0
"""BBRPickProbeWait: wall-clock wait before probing, 2–3 s."""
RENO_ROUNDS_MAX = 63
"""BBRIsRenoCoexistenceProbeTime: probe at least every 63 rounds."""
MIN_PIPE_CWND_PACKETS = 4
"""BBRMinPipeCwnd = 4 · SMSS."""
SEND_QUANTUM_MAX_BYTES = 64 * 1024
"""BBRSetSendQuantum: at most 64 KB per burst."""
SEND_QUANTUM_INTERVAL_S = 0.001
"""BBRSetSendQuantum: a burst is at most 1 ms at the pacing rate."""


class BbrState(Enum):
    """The states of the draft's state machine ("State Machine Overview")."""

    STARTUP = "Startup"
    DRAIN = "Drain"
    PROBE_BW_DOWN = "ProbeBW_DOWN"
    PROBE_BW_CRUISE = "ProbeBW_CRUISE"
    PROBE_BW_REFILL = "ProbeBW_REFILL"
    PROBE_BW_UP = "ProbeBW_UP"
    PROBE_RTT = "ProbeRTT"


PROBE_BW_STATES = frozenset({BbrState.PROBE_BW_DOWN, BbrState.PROBE_BW_CRUISE,
                             BbrState.PROBE_BW_REFILL, BbrState.PROBE_BW_UP})


class AckPhase(Enum):
    """BBR.ack_phase: where the ACKs of a bandwidth probe stand."""

    INIT = 0
    PROBE_STARTING = 1
    PROBE_FEEDBACK = 2
    PROBE_STOPPING = 3
    REFILLING = 4


class MaxBwFilter:
    """BBRUpdateMaxBw: the max delivery rate over the last :data:`MAX_BW_FILTER_CYCLES` ProbeBW
    cycles, indexed by cycle count (two slots, as Linux BBRv3's ``bw_hi[2]``)."""

    def __init__(self) -> None:
        self._slots_bytes_per_s = [0.0, 0.0]

    def update(self, rate_bytes_per_s: float) -> None:
        """Offer a sample to the current cycle's slot."""
        self._slots_bytes_per_s[1] = max(self._slots_bytes_per_s[1], rate_bytes_per_s)

    def advance(self) -> None:
        """A new cycle starts (BBRAdvanceMaxBwFilter): the oldest slot expires."""
        self._slots_bytes_per_s = [self._slots_bytes_per_s[1], 0.0]

    @property
    def best_bytes_per_s(self) -> float:
        """The filter's maximum, bytes/s."""
        return max(self._slots_bytes_per_s)


class WindowedMax:
    """Sliding-window maximum over an integer clock (rounds): ``update(t, v)`` then
    ``best``; entries older than ``window`` ticks expire (the extra_acked filter)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._entries: deque[tuple[int, float]] = deque()

    def update(self, t: int, value: float) -> None:
        """Add ``value`` at tick ``t`` (ticks never decrease)."""
        entries = self._entries
        while entries and entries[-1][1] <= value:
            entries.pop()
        entries.append((t, value))
        while entries and entries[0][0] <= t - self.window:
            entries.popleft()

    @property
    def best(self) -> float:
        """The maximum of the window (0 when empty)."""
        return self._entries[0][1] if self._entries else 0.0


def inflight_hi_from_lost_packet(*, tx_in_flight_bytes: int, lost_bytes: int,
                                 size_bytes: int) -> float:
    """BBRInflightHiFromLostPacket: the flight at which the loss rate crossed
    :data:`LOSS_THRESH`, interpolated within the lost packet, bytes.

    ``tx_in_flight_bytes``: flight when the lost packet was sent (it included); ``lost_bytes``:
    bytes lost since then (it included); ``size_bytes``: its size."""
    inflight_prev = tx_in_flight_bytes - size_bytes
    lost_prev = lost_bytes - size_bytes
    if LOSS_THRESH * inflight_prev < lost_prev:
        return float(max(inflight_prev, 0))
    lost_prefix = (LOSS_THRESH * inflight_prev - lost_prev) / (1 - LOSS_THRESH)
    return inflight_prev + lost_prefix
