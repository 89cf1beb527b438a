"""Bulk metrics bookkeeping: disconnection gaps and per-session grant obedience (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.bulk_metrics import disconnection_gaps, grant_violations

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def _page(disconnections, ended_us=40_000_000):
    # frames every second from 1 s to 5 s and 16 s to 20 s (server µs); page clock = +7 s
    send = [s * 1_000_000 for s in (1, 2, 3, 4, 5, 16, 17, 18, 19, 20)]
    recv = [x + 7_000_000 + 25_000 for x in send]
    return {"send_us": send, "recv_us": recv, "disconnections": disconnections,
            "ended_us": ended_us, "sessions": 2}


def test_a_resumed_gap_runs_from_the_last_frame_before_to_the_first_after():
    page = _page([{"reason": "session closed during the request: connection lost",
                   "lost_t_us": 12_000_000, "last_send_us": 5_000_000, "resumed_t_us": 23_025_000,
                   "first_send_us": 16_000_000, "sessions_lost": 1}])
    gaps = disconnection_gaps(page, base_timestamp_ms=1000, delay_ms=25.0)
    assert gaps == [{"start_ms": 5000 + 25 - 1000, "end_ms": 16000 + 25 - 1000,
                     "resumed": True, "reason": page["disconnections"][0]["reason"],
                     "sessions_lost": 1}]


def test_an_open_gap_ends_at_the_page_end_on_the_server_clock_and_a_first_loss_at_frame_one():
    page = _page([
        {"reason": "a", "lost_t_us": 1, "last_send_us": None, "resumed_t_us": 8_025_000,
         "first_send_us": 1_000_000, "sessions_lost": 2},
        {"reason": "b", "lost_t_us": 28_000_000, "last_send_us": 20_000_000,
         "resumed_t_us": None, "first_send_us": None, "sessions_lost": 1},
    ], ended_us=37_025_000)
    gaps = disconnection_gaps(page, base_timestamp_ms=0, delay_ms=25.0)
    assert [g["resumed"] for g in gaps] == [True, False]
    assert gaps[0]["start_ms"] == gaps[0]["end_ms"] == 1025.0
    # page end 37.025 s − offset 7.025 s = 30 s on the server clock, + 25 ms to the queue
    assert gaps[1]["start_ms"] == 20_025.0
    assert gaps[1]["end_ms"] == pytest.approx(30_025.0)
    assert disconnection_gaps({"send_us": [], "disconnections": []}, 0, 25.0) == []


def _session(d: Path, cc: str, frames, grants) -> None:
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"cc": cc}))
    (d / "frames.jsonl").write_text("".join(json.dumps(f) + "\n" for f in frames))
    (d / "grants.jsonl").write_text("".join(json.dumps(g) + "\n" for g in grants))


def _frames(t0_us: int, n: int, outstanding=None, window=None):
    return [{"seq": i, "bytes": 1220, "send_time_us": t0_us + i,
             "outstanding_bytes": (outstanding or (lambda i: 0))(i),
             "grant_window_bytes": window} for i in range(n)]


def test_grant_obedience_is_per_session_after_a_reconnect(tmp_path):
    """Each session's grants count its own bytes: a second session's cum restarts at 0."""
    for k, t0 in enumerate((1_000, 10_000_000)):
        grants = [{"accepted": True, "recv_time_us": t0 + 10 * j,
                   "cum_received_bytes": 1220 * 10 * j, "window_bytes": 12_200}
                  for j in range(1, 11)]
        _session(tmp_path / f"s{k}", "nuwa", _frames(t0 + 5, 100), grants)
    got = grant_violations(tmp_path)
    assert got == {"violations": 0, "frames": 200, "max_excess_bytes": 0}


def test_oracle_sessions_are_checked_against_the_oracle_window_not_grants(tmp_path):
    # grants that would flag every frame (window 1200, nothing received) are not the oracle's
    grants = [{"accepted": True, "recv_time_us": 1, "cum_received_bytes": 0, "window_bytes": 1200}]
    _session(tmp_path / "ok", "oracle", _frames(10, 50, lambda i: 1220 * (i % 10 + 1), 12_200),
             grants)
    assert grant_violations(tmp_path)["violations"] == 0
    _session(tmp_path / "bad", "oracle", _frames(10, 5, lambda i: 40_000, 12_200), grants)
    got = grant_violations(tmp_path)
    assert got["violations"] == 5 and got["max_excess_bytes"] == 40_000 - 12_200


def test_a_frame_sent_in_the_grant_timeout_fallback_is_checked_as_the_server_falls_back(tmp_path):
    """The server's documented fallback (grants.py): n ≥ 1 grant timeouts after the last grant
    the window is max(initial window, last >> n) over QUIC's bytes in flight. A frame the
    fallback allowed is no violation (the CI outage run's frame: sent 1.002 s after a 1200-byte
    grant, 2720 bytes in flight); one over the fallback window still is."""
    def session(name: str, in_flight: int) -> None:
        d = tmp_path / name
        grants = [{"accepted": True, "recv_time_us": 1_000, "cum_received_bytes": 0,
                   "window_bytes": 1200}]
        frames = [{"seq": i, "bytes": 1220, "send_time_us": 1_003_000 + i, "outstanding_bytes": 0,
                   "grant_window_bytes": 12_000, "bytes_in_flight": in_flight + 1220 * i}
                  for i in range(3)]  # 3660 bytes written over a 1200-byte grant
        _session(d, "nuwa", frames, grants)
        (d / "events.jsonl").write_text(json.dumps(
            {"event": "config", "grant_timeout_us": 1_000_000}) + "\n")
    session("ok", 2720)
    assert grant_violations(tmp_path)["violations"] == 0
    session("over", 40_000)
    got = grant_violations(tmp_path)
    assert got["violations"] == 3 and got["max_excess_bytes"] == 40_000 + 3 * 1220 - 12_000
    # without the session's config the same frames are judged on the last grant (as before)
    (tmp_path / "ok" / "events.jsonl").unlink()
    assert grant_violations(tmp_path)["violations"] == 3 + 2  # its 2nd and 3rd frames
