"""Grant state and enforcement (nuwa_server.grants), driven with explicit times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nuwa_server.grants import (
    GRANT_PACING_CREDIT_US,
    GRANT_PACING_GAIN,
    INITIAL_WINDOW_BYTES,
    MAX_WINDOW_BYTES,
    MIN_WINDOW_BYTES,
    GrantConfig,
    GrantState,
    WriteBudget,
)
from nuwa_server.protocol import Grant, encode_grant

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "spec" / "protocol_v1_vectors.json").read_text()
)
FRAME = 1220
T0 = 1_000_000_000  # session start, µs


def state(**config: Any) -> GrantState:
    return GrantState(GrantConfig(**config), T0)


def write_until_blocked(g: GrantState, now_us: int, ceiling: int = 10**9) -> int:
    """Write FRAME-byte frames while allowed (bytes in flight = outstanding); return count."""
    n = 0
    while True:
        b = g.budget(now_us, g.bytes_written - g.cum_received_bytes)
        if not b.allows(FRAME, ceiling):
            return n
        g.on_frame_written(FRAME, b)
        n += 1
        assert n < 100_000


def test_initial_window_is_rfc9002_ten_packets() -> None:
    """Before any grant: 12000 bytes (RFC 9002 §7.2: 10 × 1200)."""
    g = state()
    assert g.window_bytes == INITIAL_WINDOW_BYTES == 12000
    n = write_until_blocked(g, T0)
    assert n == 12000 // FRAME  # 9 frames = 10980 bytes; a 10th would exceed
    assert g.bytes_written == 9 * FRAME


def test_grant_sequence_vector() -> None:
    """The server-rule walk-through in the shared vectors, step by step."""
    seq = VECTORS["grant_sequence"]
    g = state(initial_window_bytes=seq["initial_window_bytes"])
    for i, step in enumerate(seq["steps"]):
        g.bytes_written = step["bytes_written"]
        grant = step["grant"]
        decision = g.on_grant(
            Grant(grant["grant_seq"], 0, grant["cum_received_bytes"], grant["window_bytes"]),
            T0 + i,
        )
        assert decision.accepted is step["accepted"], step
        assert decision.reason == step["reason"], step
        assert g.window_bytes == step["window_bytes"] == decision.window_bytes
        assert g.cum_received_bytes == step["cum_received_bytes"]


def test_window_limits_outstanding_and_cum_releases() -> None:
    """outstanding + frame ≤ window; a grant reporting receipt lets more go."""
    g = state()
    write_until_blocked(g, T0)
    g.on_grant(Grant(1, 0, g.bytes_written, 50_000), T0 + 10)
    n = write_until_blocked(g, T0 + 10)
    assert n == 50_000 // FRAME
    assert g.bytes_written - g.cum_received_bytes <= 50_000
    g.on_grant(Grant(2, 0, g.bytes_written - 10 * FRAME, 50_000), T0 + 20)
    assert write_until_blocked(g, T0 + 20) == 50_000 // FRAME - 10
    assert g.grant_violations == 0


def test_ceiling_caps_the_grant() -> None:
    """min(window, ceiling): a big grant does not lift the cubic ceiling."""
    g = state()
    g.on_grant(Grant(1, 0, 0, MAX_WINDOW_BYTES), T0)
    assert write_until_blocked(g, T0, ceiling=30_000) == 30_000 // FRAME


def test_tiny_window_still_lets_one_frame_when_nothing_outstanding() -> None:
    """Window 1200 < one 1220-byte frame: one frame at a time, no violation counted."""
    g = state()
    g.on_grant(Grant(1, 0, 0, 0), T0)
    assert g.window_bytes == MIN_WINDOW_BYTES
    assert write_until_blocked(g, T0) == 1
    g.on_grant(Grant(2, 0, g.bytes_written, 0), T0 + 1)
    assert write_until_blocked(g, T0 + 1) == 1
    assert g.grant_violations == 0


@pytest.mark.parametrize(
    ("window", "expected", "reason"),
    [(0, 1200, "window_clamped_low"), (1199, 1200, "window_clamped_low"), (1200, 1200, "ok"),
     (64 << 20, 64 << 20, "ok"), ((64 << 20) + 1, 64 << 20, "window_clamped_high"),
     (1 << 63, 64 << 20, "window_clamped_high"), ((1 << 64) - 1, 64 << 20, "window_clamped_high")],
)
def test_window_clamp(window: int, expected: int, reason: str) -> None:
    """window_bytes is clamped to [1200, 64 MiB] (0, 2^63, 2^64−1 included)."""
    g = state()
    decision = g.on_grant(Grant(1, 0, 0, window), T0)
    assert decision.accepted and decision.window_bytes == expected and decision.reason == reason


@pytest.mark.parametrize("cum", [1, 1 << 63, (1 << 64) - 1])
def test_cum_never_beyond_written(cum: int) -> None:
    """cum_received_bytes beyond what was written is clamped (2^63, 2^64−1 included)."""
    g = state()
    decision = g.on_grant(Grant(1, 0, cum, 5000), T0)
    assert g.cum_received_bytes == 0 and decision.reason == "cum_clamped_to_written"


def test_replay_and_reorder_dropped_and_counted() -> None:
    """Not newer by RFC 1982 → dropped as replay; state unchanged."""
    g = state()
    g.bytes_written = 100_000
    assert g.on_grant(Grant(10, 0, 5000, 20_000), T0).accepted
    for seq in (10, 9, 0, 10 + 2**31):
        d = g.on_grant(Grant(seq, 0, 90_000, 90_000), T0 + 1)
        assert not d.accepted and d.reason == "replay"
    assert g.grants_dropped["replay"] == 4 and g.window_bytes == 20_000
    assert g.cum_received_bytes == 5000
    assert g.on_grant(Grant(11, 0, 6000, 30_000), T0 + 2).accepted
    # wrap-around: 2^32−1 then 0 is newer
    g2 = state()
    assert g2.on_grant(Grant(2**32 - 1, 0, 0, 5000), T0).accepted
    assert g2.on_grant(Grant(0, 0, 0, 6000), T0).accepted


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"", "grant_length"), (bytes(43), "grant_length"), (bytes(45), "grant_length"),
     (b"\x02" + encode_grant(Grant(1, 0, 0, 0))[1:], "grant_version"),
     (b"\x01\x11" + encode_grant(Grant(1, 0, 0, 0))[2:], "grant_type"),
     (b"\x01\x10\x00\x01" + encode_grant(Grant(1, 0, 0, 0))[4:], "grant_flags")],
)
def test_malformed_datagrams_dropped(data: bytes, reason: str) -> None:
    """Wrong length/version/type: dropped and counted by kind, never raised."""
    g = state()
    d = g.on_datagram(data, T0)
    assert not d.accepted and d.reason == reason and d.grant is None
    assert g.grants_dropped[reason] == 1 and g.grants_accepted == 0


def test_rtt_sample_from_echo() -> None:
    """RTT = now − echo_send_time_us − echo_hold_us; None without a plausible echo."""
    g = state()
    g.bytes_written = 10_000
    d = g.on_grant(Grant(1, 0, 0, 5000, echo_send_time_us=T0 + 1000, echo_hold_us=300), T0 + 50_000)
    assert d.rtt_us == 50_000 - 1000 - 300
    assert g.on_grant(Grant(2, 0, 0, 5000, 0, 0), T0 + 60_000).rtt_us is None
    assert g.on_grant(Grant(3, 0, 0, 5000, T0 + 70_000, 0), T0 + 60_000).rtt_us is None
    assert g.on_grant(Grant(4, 0, 0, 5000, T0 - 1, 0), T0 + 60_000).rtt_us is None
    assert g.on_grant(Grant(5, 0, 0, 5000, T0 + 1, 2**32 - 1), T0 + 60_000).rtt_us is None


def paced_frames(g: GrantState, start_us: int, end_us: int, ceiling: int = 10**9) -> list[int]:
    """Write FRAME-byte frames from ``start_us`` to ``end_us`` as the send loop does (budget,
    then the grant pacer, waking at the time it names); return their send times, µs."""
    sent: list[int] = []
    t = start_us
    while t < end_us:
        b = g.budget(t, 0)
        if not b.allows(FRAME, ceiling):
            return sent
        wake = g.pace_wait_us(t, FRAME, b, ceiling)
        if wake is not None:
            assert wake > t
            t = wake
            continue
        g.on_frame_written(FRAME, b)
        sent.append(t)
    return sent


def test_grant_pacer_spreads_a_window_over_half_the_measured_rtt() -> None:
    """2 × window ÷ min(sRTT, latest RTT): a 100 kB window on a 200 ms RTT (a 50 ms path
    behind 150 ms of others' queue) leaves at 1 MB/s, not as one run (RFC 9002 §7.7)."""
    g = state()
    g.bytes_written = 1
    echo = T0 + 1000
    g.on_grant(Grant(1, 0, 1, 100_000, echo_send_time_us=echo, echo_hold_us=0), echo + 200_000)
    assert g.latest_rtt_us == 200_000 and g.srtt_us == 200_000.0
    now = echo + 200_000
    sent = paced_frames(g, now, now + 1_000_000)
    assert len(sent) == 100_000 // FRAME  # the whole window, then the window binds
    rate = GRANT_PACING_GAIN * 100_000 / 0.2  # bytes/s
    burst = int(max(2 * FRAME, rate * GRANT_PACING_CREDIT_US / 1e6) // FRAME)
    # a full bucket goes at once, the rest at the rate: the window takes ~ RTT / 2
    assert sent[burst] - sent[0] < 2_000
    span_s = (sent[-1] - sent[0]) / 1e6
    assert span_s == pytest.approx((len(sent) - burst) * FRAME / rate, rel=0.05)
    assert 0.08 < span_s < 0.1
    assert g.frames_paced > 0 and g.grant_violations == 0
    # a held frame goes at the wake it was given, and a µs before it (a clock read floored)
    g.on_grant(Grant(2, 0, g.bytes_written, 200_000, echo_send_time_us=echo, echo_hold_us=0),
               echo + 200_000)
    t = sent[-1] + 1
    while (wake := g.pace_wait_us(t, FRAME, g.budget(t, 0), 10**9)) is None:
        g.on_frame_written(FRAME, g.budget(t, 0))
    assert g.pace_wait_us(wake - 1, FRAME, g.budget(wake - 1, 0), 10**9) is None


def test_grant_pacer_holds_nothing_without_rtt_or_outstanding_or_enforcement() -> None:
    """No RTT sample yet, nothing outstanding (the liveness rule), ``cubic``/``reno`` and
    ``oracle`` (the window is not the grants'): the pacer never holds a frame."""
    g = state()
    b = g.budget(T0, 0)
    assert g.pacing_rate_bytes_per_s(b, 10**9) is None
    assert g.pace_wait_us(T0, FRAME, b, 10**9) is None
    assert len(paced_frames(g, T0, T0 + 1)) == INITIAL_WINDOW_BYTES // FRAME  # no sample: unpaced
    # an RTT sample, a one-frame window on a 10 s RTT: a frame goes when nothing is outstanding
    g2 = state()
    g2.bytes_written = 1
    g2.on_grant(Grant(1, 0, 1, 1200, echo_send_time_us=T0 + 1, echo_hold_us=0), T0 + 10_000_001)
    b2 = g2.budget(T0 + 10_000_001, 0)
    assert b2.outstanding_bytes == 0
    assert g2.pace_wait_us(T0 + 10_000_001, FRAME, b2, 10**9) is None
    for config in ({"enforce": False}, {"window_from_grants": False}):
        g3 = state(**config)
        g3.bytes_written = 1
        g3.on_grant(Grant(1, 0, 1, 50_000, echo_send_time_us=T0 + 1, echo_hold_us=0), T0 + 100_001)
        b3 = g3.budget(T0 + 100_001, 0)
        assert g3.pacing_rate_bytes_per_s(b3, 10**9) is None


def test_grant_pacer_rate_follows_the_latest_rtt_down_and_the_ceiling() -> None:
    """After an outage the smoothed RTT lags the latest sample by about 8 grants: the pacer
    divides by the smaller, so a drained queue is paced at once at its new RTT; and the
    window in force is min(grant, ceiling)."""
    g = state()
    g.bytes_written = 10
    t = T0 + 1000
    g.on_grant(Grant(1, 0, 1, 60_000, echo_send_time_us=t, echo_hold_us=0), t + 2_000_000)
    t2 = t + 2_000_100
    g.on_grant(Grant(2, 0, 2, 60_000, echo_send_time_us=t2, echo_hold_us=0), t2 + 50_000)
    assert g.srtt_us == pytest.approx(0.875 * 2_000_000 + 0.125 * 50_000)
    assert g.pacing_rtt_us() == 50_000
    b = g.budget(t2 + 50_000, 0)
    assert g.pacing_rate_bytes_per_s(b, 10**9) == pytest.approx(2 * 60_000 / 0.05)
    assert g.pacing_rate_bytes_per_s(b, 30_000) == pytest.approx(2 * 30_000 / 0.05)


def test_grant_pacer_lying_echo_only_slows_its_own_session() -> None:
    """An echo that claims an old send time (a huge RTT) slows only the liar's frames, and a
    frame still goes whenever nothing is outstanding; an echo from the future or before the
    session is not a sample (rtt_sample_us), so it cannot make the pacer divide by zero."""
    g = state()
    g.bytes_written = 10
    g.on_grant(Grant(1, 0, 10, 50_000, echo_send_time_us=T0 + 1, echo_hold_us=0), T0 + 600_000_001)
    now = T0 + 600_000_001
    sent = paced_frames(g, now, now + 1_000_000)
    assert len(sent) >= 2  # the bucket's two frames, then the crawl it asked for
    g.on_grant(Grant(2, 0, 10, 50_000, echo_send_time_us=now + 10**9, echo_hold_us=0), now + 2)
    g.on_grant(Grant(3, 0, 10, 50_000, echo_send_time_us=T0 - 5, echo_hold_us=0), now + 3)
    assert g.latest_rtt_us == 600_000_000
    assert (g.pacing_rtt_us() or 0) >= 1.0


def test_fallback_halves_to_initial_window() -> None:
    """No grant for the timeout: window halves per timeout, floored at the initial window,
    and outstanding is counted from QUIC bytes in flight."""
    timeout = 1_000_000
    g = state(grant_timeout_us=timeout)
    g.bytes_written = 500_000
    g.on_grant(Grant(1, 0, 100_000, 100_000), T0)
    assert g.budget(T0 + timeout - 1, 0) == WriteBudget(100_000, 400_000, 0)
    assert g.poll_fallback(T0 + timeout - 1) is None
    assert g.budget(T0 + timeout, 7000) == WriteBudget(50_000, 7000, 1)
    assert g.poll_fallback(T0 + timeout) == 1 and g.fallback_entries == 1
    assert g.budget(T0 + 2 * timeout, 0).window_bytes == 25_000
    assert g.budget(T0 + 3 * timeout, 0).window_bytes == 12_500
    assert g.budget(T0 + 4 * timeout, 0).window_bytes == INITIAL_WINDOW_BYTES
    assert g.budget(T0 + 40 * timeout, 0).window_bytes == INITIAL_WINDOW_BYTES
    assert g.poll_fallback(T0 + 4 * timeout) == 4 and g.fallback_entries == 1
    g.on_grant(Grant(2, 0, 200_000, 80_000), T0 + 4 * timeout + 5)
    assert g.budget(T0 + 4 * timeout + 6, 0) == WriteBudget(80_000, 300_000, 0)
    assert g.poll_fallback(T0 + 4 * timeout + 6) is None
    # timeout counts from the session start when no grant ever came
    g2 = state(grant_timeout_us=timeout)
    assert g2.budget(T0 + timeout, 0).fallback_level == 1


def test_unenforced_mode_allows_everything_but_tracks_grants() -> None:
    """cubic/reno: grants accepted and logged, budget has no window, no fallback."""
    g = state(enforce=False)
    g.on_grant(Grant(1, 0, 0, 0), T0)
    b = g.budget(T0 + 10**9, 0)
    assert b.window_bytes is None and b.allows(10**6, 1)
    assert write_until_blocked.__name__  # (no limit: don't loop)
    g.on_frame_written(10**6, b)
    assert g.grant_violations == 0 and g.fallback_level(T0 + 10**9) == 0


def test_violation_counter_counts_excess_writes() -> None:
    """A write beyond window + one frame counts as a violation (the check the logs use)."""
    g = state()
    b = WriteBudget(window_bytes=12000, outstanding_bytes=12000, fallback_level=0)
    g.on_frame_written(FRAME, b)  # 13220 ≤ 12000 + 1220: not counted
    assert g.grant_violations == 0
    g.on_frame_written(FRAME, WriteBudget(12000, 12001, 0))
    assert g.grant_violations == 1


def test_config_validation() -> None:
    """Nonsense bounds raise ValueError."""
    with pytest.raises(ValueError):
        state(min_window_bytes=0)
    with pytest.raises(ValueError):
        state(initial_window_bytes=100)
    with pytest.raises(ValueError):
        state(grant_timeout_us=0)


_grant_st = st.builds(
    Grant,
    grant_seq=st.integers(0, 2**32 - 1),
    receiver_time_us=st.integers(0, 2**64 - 1),
    cum_received_bytes=st.one_of(st.integers(0, 10**6), st.integers(0, 2**64 - 1)),
    window_bytes=st.one_of(st.integers(0, 10**6), st.integers(0, 2**64 - 1)),
    echo_send_time_us=st.integers(0, 2**64 - 1),
    echo_hold_us=st.integers(0, 2**32 - 1),
)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("grant"), _grant_st),
        st.tuples(st.just("raw"), st.binary(max_size=60)),
        st.tuples(st.just("write"), st.integers(20, 65556)),
        st.tuples(st.just("wait"), st.integers(0, 3_000_000)),
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_ops)
def test_fuzz_grant_state_invariants_500(ops: list[tuple[str, Any]]) -> None:
    """500 random sequences of grants, raw datagrams, writes and waits: no exception, and
    cum ≤ written, window within [1200, 64 MiB], no violation when writes obey the budget."""
    g = state()
    now = T0
    for kind, arg in ops:
        if kind == "grant":
            g.on_grant(arg, now)
        elif kind == "raw":
            g.on_datagram(arg, now)
        elif kind == "write":
            b = g.budget(now, g.bytes_written - g.cum_received_bytes)
            if b.allows(arg, 10**9):
                g.on_frame_written(arg, b)
        else:
            now += arg
            g.poll_fallback(now)
        assert 0 <= g.cum_received_bytes <= g.bytes_written
        assert MIN_WINDOW_BYTES <= g.window_bytes <= MAX_WINDOW_BYTES
    assert g.grant_violations == 0
