"""Grant state and enforcement for one session: pure, the caller passes ``now_us``.

The receiver grants the server a window of application bytes it may have
outstanding (written but not yet reported received); the server writes a
frame only while ``outstanding + frame ≤ min(window, ceiling)`` (docs/DESIGN.md
step 5, PROTOCOL.md "Grants"). This module holds that state, decides which
grants to accept, and answers "may I write this frame now?"; it never reads
a clock and never does I/O (docs/DESIGN.md §10 habit 1).

Words: ``bytes_written`` = frame bytes (headers + payloads) handed to QUIC on
this session; ``cum_received_bytes`` = what the newest accepted grant says
the receiver got; ``outstanding_bytes = bytes_written − cum_received_bytes``;
``ceiling_bytes`` = the connection's own congestion window (cubic cwnd,
RFC 9002 §7 / RFC 9438), which the server never exceeds whatever the grant.

Grant pacing (nuwa mode only, :meth:`GrantState.pace_wait_us`): frames the window
allows leave at ``GRANT_PACING_GAIN`` × min(window in force, ceiling) ÷ RTT, where the
RTT is min(smoothed, latest) of the grants' echo samples (RFC 9002 §7.7: rate = N ×
cwnd ÷ smoothed_rtt; §5.3 smoothing), from a bucket of at most
max(2 frames, ``GRANT_PACING_CREDIT_US`` of the rate). Without it a window's frames
left as fast as the grants released them, and aioquic's pacer (ceiling ÷ sRTT, a
bucket of up to 16 packets that releases a packet whenever it is above zero) let them
go in clumps: flows sharing a queue then sat in it as contiguous runs, each one's
service delay read only its own run, and the shared queue grew with the number of
flows (docs/DESIGN.md §4 "Grant pacing"). Nothing is held while nothing is
outstanding (the liveness rule below), and nothing is paced before the first RTT
sample.

Grant timeout (nuwa mode only): when no grant has been accepted for
``grant_timeout_us`` (since the session started, if none ever was), the
receiver's report of what it received is stale, so the server falls back to
its own view: outstanding becomes QUIC's ``bytes_in_flight`` (what the
transport has not seen acknowledged, RFC 9002 §2) and the window in force
becomes ``max(initial_window_bytes, last_window_bytes >> n)`` after ``n``
timeouts, i.e. it halves each timeout down to the initial window, still
capped by the ceiling. The next accepted grant ends the fallback.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .protocol import Grant, ProtocolError, decode_grant, serial_newer

INITIAL_WINDOW_BYTES = 10 * 1200
"""Window before the first grant: RFC 9002 §7.2 initial window, 10 × 1200 bytes."""

MIN_WINDOW_BYTES = 1200
"""Smallest window a grant can set (PROTOCOL.md "Grants": clamp to [1200, 64 MiB])."""

MAX_WINDOW_BYTES = 64 * 1024 * 1024
"""Largest window a grant can set, bytes (64 MiB)."""

DEFAULT_GRANT_TIMEOUT_US = 1_000_000
"""Fallback after this long without an accepted grant, µs (1 s)."""

FLOOD_RATE_PER_S = 2000
"""Grant flood guard: sustained datagrams per second a session may send (token
bucket refill rate). Twice the player's ceiling of 1 kHz
(``GrantPolicyConfig.min_interval_us`` = 1000 in packages/player/src/grants.ts)."""

FLOOD_BURST = 500
"""Grant flood guard: bucket depth, datagrams (a burst of 500 back-to-back
datagrams, e.g. bunched by the network, is tolerated)."""

GRANT_PACING_GAIN = 2.0
"""Grant pacing rate = this × min(window, ceiling) ÷ RTT (dimensionless). 2, as the
simulator's sender (packages/cc/src/sim/pacing.ts) and Linux's slow-start pacing ratio
(``tcp_pacing_ss_ratio`` = 200 %): a window that doubles per RTT in start-up is not held
back. Simulated (12 flows on 6 Mbit/s, 25 ms each way): gain 1.25 p50 47 ms, 1.5 56, 2
73, against 200 unpaced; single flows (18 dev traces) mean utilization 0.939, 0.943,
0.944, against 0.944 unpaced (docs/BENCHMARKS.md, thirty-eighth session)."""

GRANT_PACING_CREDIT_US = 5_000
"""The grant pacer's bucket holds this much time at its rate (or two frames, whichever is
more), µs: the send loop's wake-ups come from asyncio timers that fire late by a ms or
more, and the credit lets a late wake catch up (the same allowance as
:data:`.cc.pacing.WAKEUP_CREDIT_S` gives BBR's pacer)."""

REASON_OK = "ok"
REASON_REPLAY = "replay"
REASON_WINDOW_LOW = "window_clamped_low"
REASON_WINDOW_HIGH = "window_clamped_high"
REASON_CUM_BEYOND_WRITTEN = "cum_clamped_to_written"
REASON_CUM_BACKWARDS = "cum_backwards"


@dataclass(frozen=True, slots=True)
class GrantConfig:
    """Typed grant-enforcement config; :meth:`validate` raises ValueError on nonsense.

    Attributes:
        enforce: True in ``--cc nuwa`` (grants limit the sender); False in
            ``cubic``/``reno`` (grants parsed and logged, not obeyed).
        initial_window_bytes: window before the first grant (12000 bytes).
        min_window_bytes / max_window_bytes: clamp of a grant's window.
        grant_timeout_us: no-grant time before the fallback, µs.
        window_from_grants: True: a grant's window is the window (``nuwa``);
            False (``oracle``): grants are logged but move nothing; the
            window is set by :meth:`GrantState.set_window` and outstanding
            bytes by :meth:`GrantState.set_oracle_outstanding`, both from the
            emulator (issue 13 item 3, :mod:`.oracle_sender`); no grant
            timeout fallback.
    """

    enforce: bool = True
    initial_window_bytes: int = INITIAL_WINDOW_BYTES
    min_window_bytes: int = MIN_WINDOW_BYTES
    max_window_bytes: int = MAX_WINDOW_BYTES
    grant_timeout_us: int = DEFAULT_GRANT_TIMEOUT_US
    window_from_grants: bool = True

    def validate(self) -> GrantConfig:
        """Return self, or raise ValueError if a bound is out of order or ≤ 0."""
        if not 0 < self.min_window_bytes <= self.initial_window_bytes <= self.max_window_bytes:
            raise ValueError(
                "need 0 < min_window_bytes <= initial_window_bytes <= max_window_bytes, got "
                f"{self.min_window_bytes}, {self.initial_window_bytes}, {self.max_window_bytes}"
            )
        if self.grant_timeout_us <= 0:
            raise ValueError(f"grant_timeout_us must be > 0, got {self.grant_timeout_us}")
        return self


@dataclass(slots=True)
class FloodGuard:
    """Token bucket over every datagram a session receives (grants, replays, garbage).

    Starts full (``burst`` tokens), refills at ``rate_per_s``; each datagram
    takes one token. A datagram that finds the bucket empty means the client
    sent more than ``burst`` datagrams beyond a sustained ``rate_per_s``: a
    flood (:meth:`take` returns False), and the session is closed for it
    (PROTOCOL.md "Grants"). At 10 kHz the default guard trips after about
    500 / (10000 − 2000) s ≈ 62 ms; at 1 kHz it never does.

    Raises:
        ValueError: ``rate_per_s`` or ``burst`` ≤ 0.
    """

    rate_per_s: int = FLOOD_RATE_PER_S
    burst: int = FLOOD_BURST
    tokens_e6: int = -1
    """Tokens × 10^6 (integer arithmetic: rate × elapsed_us is exact)."""
    last_us: int | None = None
    datagrams: int = 0

    def __post_init__(self) -> None:
        if self.rate_per_s <= 0 or self.burst <= 0:
            raise ValueError(f"flood guard needs rate_per_s > 0 and burst > 0, got "
                             f"{self.rate_per_s}, {self.burst}")
        if self.tokens_e6 < 0:
            self.tokens_e6 = self.burst * 1_000_000

    def take(self, now_us: int) -> bool:
        """Count one datagram at ``now_us``; False when it exceeds the bucket (a flood)."""
        self.datagrams += 1
        if self.last_us is not None and now_us > self.last_us:
            self.tokens_e6 = min(self.burst * 1_000_000,
                                 self.tokens_e6 + (now_us - self.last_us) * self.rate_per_s)
        if self.last_us is None or now_us > self.last_us:
            self.last_us = now_us
        if self.tokens_e6 < 1_000_000:
            return False
        self.tokens_e6 -= 1_000_000
        return True


@dataclass(frozen=True, slots=True)
class GrantDecision:
    """What happened to one received grant datagram (a ``grants.jsonl`` row).

    ``reason`` is ``"ok"``, or for an accepted grant the ``+``-joined clamps
    applied (``window_clamped_low``, ``window_clamped_high``,
    ``cum_clamped_to_written``, ``cum_backwards``), or for a dropped one
    ``replay`` or a malformed kind (``grant_length``, ``grant_version``,
    ``grant_type``, ``grant_flags``). ``window_bytes``/``cum_received_bytes`` are the values
    in force after the decision; ``rtt_us`` is now − echo_send_time_us −
    echo_hold_us (PROTOCOL.md "Grants"), None when the echo is absent or
    implausible.
    """

    accepted: bool
    reason: str
    grant: Grant | None
    window_bytes: int
    cum_received_bytes: int
    rtt_us: int | None


@dataclass(frozen=True, slots=True)
class WriteBudget:
    """The limits in force at one instant (a ``frames.jsonl`` row's inputs).

    ``window_bytes`` is None when grants are not enforced. ``outstanding_bytes``
    is counted per the mode (grant-driven or fallback, see module doc).
    """

    window_bytes: int | None
    outstanding_bytes: int
    fallback_level: int

    def allows(self, frame_bytes: int, ceiling_bytes: int) -> bool:
        """May a frame of ``frame_bytes`` be written now?

        Rule (PROTOCOL.md "Grants"): outstanding + frame ≤ min(window,
        ceiling); plus liveness: one frame may always go when nothing is
        outstanding (a window smaller than one frame would otherwise stall
        the session for ever). Unenforced: always True (the transport's own
        congestion window still gates, outside this module).
        """
        if self.window_bytes is None:
            return True
        if self.outstanding_bytes <= 0:
            return True
        return self.outstanding_bytes + frame_bytes <= min(self.window_bytes, ceiling_bytes)


@dataclass(slots=True)
class GrantState:
    """Grant state of one session. Create with the session start time, µs.

    Invariants (asserted): ``cum_received_bytes ≤ bytes_written``;
    ``min_window_bytes ≤ window_bytes ≤ max_window_bytes``.
    """

    config: GrantConfig
    start_time_us: int
    bytes_written: int = 0
    cum_received_bytes: int = 0
    window_bytes: int = 0
    last_grant_seq: int | None = None
    last_grant_time_us: int | None = None
    grants_accepted: int = 0
    grants_dropped: Counter[str] = field(default_factory=Counter)
    grants_clamped: Counter[str] = field(default_factory=Counter)
    grant_violations: int = 0
    frames_written: int = 0
    fallback_entries: int = 0
    _fallback_level: int = 0
    srtt_us: float | None = None
    """Smoothed RTT of the grants' echo samples, µs (RFC 9002 §5.3; None before the first)."""
    latest_rtt_us: int | None = None
    """The latest echo RTT sample, µs (None before the first)."""
    frames_paced: int = 0
    """Times the grant pacer held a frame the window allowed (a frame held and asked again
    counts again); in ``summary.json``."""
    train_frames: int = 0
    """Frames a packet train sent past the window (:mod:`.packet_train`); in
    ``summary.json``."""
    _pace_tokens_bytes: float = 0.0
    _pace_time_us: int | None = None

    def __post_init__(self) -> None:
        self.config.validate()
        if self.window_bytes == 0:
            self.window_bytes = self.config.initial_window_bytes

    # ------------------------------------------------------------------ grants in

    def on_datagram(self, data: bytes, now_us: int) -> GrantDecision:
        """Decode and apply one datagram payload; never raises on peer input.

        Malformed datagrams are dropped and counted under their
        :class:`~nuwa_server.protocol.ErrorKind` value.
        """
        try:
            grant = decode_grant(data)
        except ProtocolError as exc:
            self.grants_dropped[exc.kind.value] += 1
            return GrantDecision(
                False, exc.kind.value, None, self.window_bytes, self.cum_received_bytes, None
            )
        return self.on_grant(grant, now_us)

    def on_grant(self, grant: Grant, now_us: int) -> GrantDecision:
        """Apply a decoded grant (PROTOCOL.md "Server rules").

        Latest wins by RFC 1982 serial arithmetic on ``grant_seq``; a grant
        not newer than the last accepted one is dropped as ``replay``. The
        window is clamped to [min, max]; ``cum_received_bytes`` is clamped
        to ``bytes_written`` and never moves backwards.
        """
        if self.last_grant_seq is not None and not serial_newer(
            grant.grant_seq, self.last_grant_seq
        ):
            self.grants_dropped[REASON_REPLAY] += 1
            return GrantDecision(
                False, REASON_REPLAY, grant, self.window_bytes, self.cum_received_bytes, None
            )
        reasons: list[str] = []
        window = grant.window_bytes if self.config.window_from_grants else self.window_bytes
        if window < self.config.min_window_bytes:
            window = self.config.min_window_bytes
            reasons.append(REASON_WINDOW_LOW)
        elif window > self.config.max_window_bytes:
            window = self.config.max_window_bytes
            reasons.append(REASON_WINDOW_HIGH)
        # oracle: outstanding is on the emulator's delivered-bytes clock, not the page's
        cum = grant.cum_received_bytes if self.config.window_from_grants else (
            self.cum_received_bytes)
        if cum > self.bytes_written:
            cum = self.bytes_written
            reasons.append(REASON_CUM_BEYOND_WRITTEN)
        if cum < self.cum_received_bytes:
            cum = self.cum_received_bytes
            reasons.append(REASON_CUM_BACKWARDS)
        self.window_bytes = window
        self.cum_received_bytes = cum
        self.last_grant_seq = grant.grant_seq
        self.last_grant_time_us = now_us
        self._fallback_level = 0
        self.grants_accepted += 1
        for reason in reasons:
            self.grants_clamped[reason] += 1
        assert self.cum_received_bytes <= self.bytes_written
        assert self.config.min_window_bytes <= self.window_bytes <= self.config.max_window_bytes
        rtt_us = self.rtt_sample_us(grant, now_us)
        if rtt_us is not None:
            self.latest_rtt_us = rtt_us
            # RFC 9002 §5.3: smoothed_rtt = 7/8 smoothed_rtt + 1/8 latest_rtt (first: the sample)
            self.srtt_us = float(rtt_us) if self.srtt_us is None else (
                0.875 * self.srtt_us + 0.125 * rtt_us)
        return GrantDecision(
            True,
            "+".join(reasons) if reasons else REASON_OK,
            grant,
            window,
            cum,
            rtt_us,
        )

    def set_window(self, window_bytes: int) -> int:
        """Set the window from a source other than grants (the oracle); returns it clamped.

        Clamped to [min_window_bytes, max_window_bytes]. Raises ValueError if
        this state takes its window from grants (``window_from_grants``).
        """
        if self.config.window_from_grants:
            raise ValueError("set_window: this session takes its window from grants")
        self.window_bytes = min(max(int(window_bytes), self.config.min_window_bytes),
                                self.config.max_window_bytes)
        return self.window_bytes

    def set_oracle_outstanding(self, outstanding_bytes: int) -> int:
        """Set outstanding bytes from the emulator's delivered-bytes clock (the oracle).

        ``outstanding_bytes`` (frame bytes): what the emulator's report says is
        still in the network (:func:`.oracle_sender.oracle_outstanding_wire_bytes`),
        clamped to [0, bytes_written]; frames written later add to it. Stored as
        ``cum_received_bytes = bytes_written − outstanding`` (which may move
        back when retransmissions put bytes on the wire). Returns the clamped
        value. Raises ValueError unless ``window_from_grants`` is False.
        """
        if self.config.window_from_grants:
            raise ValueError("set_oracle_outstanding: this session takes grants")
        outstanding = min(max(int(outstanding_bytes), 0), self.bytes_written)
        self.cum_received_bytes = self.bytes_written - outstanding
        return outstanding

    def rtt_sample_us(self, grant: Grant, now_us: int) -> int | None:
        """RTT sample from the echo: now − echo_send_time_us − echo_hold_us, µs.

        None when nothing is echoed (0), the echo predates the session or
        lies in the future, or the hold time exceeds the elapsed time.
        """
        echo = grant.echo_send_time_us
        if echo == 0 or echo < self.start_time_us or echo > now_us:
            return None
        rtt_us = now_us - echo - grant.echo_hold_us
        return rtt_us if rtt_us >= 0 else None

    # ------------------------------------------------------------------ frames out

    def pacing_rtt_us(self) -> float | None:
        """The RTT the grant pacer divides by, µs: min(smoothed, latest) of the echo samples
        (the latest falls as soon as a queue drains; the smoothed one lags about 8 samples
        behind it, which after an outage held a returning link at a crawl in the simulator).
        None before the first sample."""
        if self.srtt_us is None or self.latest_rtt_us is None:
            return None
        return max(1.0, min(self.srtt_us, float(self.latest_rtt_us)))

    def pacing_rate_bytes_per_s(self, budget: WriteBudget, ceiling_bytes: int) -> float | None:
        """The grant pacer's rate under ``budget``, bytes/s: :data:`GRANT_PACING_GAIN` ×
        min(window in force, ``ceiling_bytes``) ÷ :meth:`pacing_rtt_us` (RFC 9002 §7.7).
        None when nothing is paced: grants not enforced or not the window's source
        (``cubic``, ``reno``, ``oracle``), or no RTT sample yet."""
        if not self.config.enforce or not self.config.window_from_grants:
            return None
        rtt_us = self.pacing_rtt_us()
        if rtt_us is None or budget.window_bytes is None:
            return None
        in_force = min(budget.window_bytes, ceiling_bytes)
        return GRANT_PACING_GAIN * in_force * 1e6 / rtt_us

    def pace_wait_us(self, now_us: int, frame_bytes: int, budget: WriteBudget,
                     ceiling_bytes: int) -> int | None:
        """When a frame of ``frame_bytes`` that ``budget`` allows may leave: None for now,
        else the CLOCK_MONOTONIC µs at which the bucket holds it (module doc, "Grant
        pacing"). Never holds a frame while nothing is outstanding (the liveness rule), nor
        when :meth:`pacing_rate_bytes_per_s` is None. Refills the bucket up to ``now_us``;
        :meth:`on_frame_written` charges it."""
        rate = self.pacing_rate_bytes_per_s(budget, ceiling_bytes)
        if rate is None or rate <= 0:
            self._pace_time_us = None
            return None
        bucket_max = max(2.0 * frame_bytes, rate * GRANT_PACING_CREDIT_US / 1e6)
        if self._pace_time_us is None:
            self._pace_tokens_bytes = bucket_max  # the first paced frame: a full bucket
        else:
            elapsed_us = max(0, now_us - self._pace_time_us)
            self._pace_tokens_bytes = min(bucket_max,
                                          self._pace_tokens_bytes + rate * elapsed_us / 1e6)
        self._pace_time_us = now_us
        # a frame within one µs of credit goes: times are whole µs, and a wake-up read a µs
        # early (a clock read as a float, then floored) must not ask for another one-µs wait
        if (budget.outstanding_bytes <= 0
                or self._pace_tokens_bytes + rate * 1e-6 >= frame_bytes):
            return None
        self.frames_paced += 1
        short_bytes = frame_bytes - self._pace_tokens_bytes
        return now_us + max(1, int(short_bytes * 1e6 / rate + 0.999))

    def fallback_level(self, now_us: int) -> int:
        """Number of whole grant timeouts since the last accepted grant (0 = none)."""
        if not self.config.enforce or not self.config.window_from_grants:
            return 0
        since = self.last_grant_time_us if self.last_grant_time_us is not None else (
            self.start_time_us
        )
        return max(0, (now_us - since) // self.config.grant_timeout_us)

    def budget(self, now_us: int, bytes_in_flight: int) -> WriteBudget:
        """Window in force and outstanding bytes at ``now_us``.

        ``bytes_in_flight`` is QUIC's (RFC 9002 §2), used only in fallback.
        """
        if not self.config.enforce:
            return WriteBudget(None, self.bytes_written - self.cum_received_bytes, 0)
        level = self.fallback_level(now_us)
        if level == 0:
            return WriteBudget(self.window_bytes, self.bytes_written - self.cum_received_bytes, 0)
        window = max(self.config.initial_window_bytes, self.window_bytes >> level)
        return WriteBudget(window, bytes_in_flight, level)

    def poll_fallback(self, now_us: int) -> int | None:
        """Return the new fallback level when it changed since the last poll, else None.

        For logging fallback entries and each halving; counts entries.
        """
        level = self.fallback_level(now_us)
        if level == self._fallback_level:
            return None
        if self._fallback_level == 0 and level > 0:
            self.fallback_entries += 1
        self._fallback_level = level
        return level

    def on_frame_written(self, frame_bytes: int, budget: WriteBudget,
                         train_frame: bool = False) -> int:
        """Account a frame of ``frame_bytes`` written under ``budget``.

        Returns the outstanding bytes after writing. Counts a grant violation
        when that exceeds the window in force plus this one frame, unless it is a packet
        train's frame (``train_frame``, :mod:`.packet_train`: sent past the window on
        purpose, counted in ``train_frames``).
        """
        self.bytes_written += frame_bytes
        self.frames_written += 1
        if train_frame:
            self.train_frames += 1
        if self._pace_time_us is not None:  # the grant pacer's charge (pace_wait_us refilled it)
            self._pace_tokens_bytes = max(-float(frame_bytes),
                                          self._pace_tokens_bytes - frame_bytes)
        outstanding_after = budget.outstanding_bytes + frame_bytes
        if not train_frame and budget.window_bytes is not None and outstanding_after > (
            budget.window_bytes + frame_bytes
        ):
            self.grant_violations += 1
        return outstanding_after
