"""Unit tests of the load test's pure parts (lab/nuwa_lab/load/); the run
itself is e2e/load.e2e.test.ts (5 sessions) and ``./nuwa load`` (the long one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.load import (
    build_parser,
    jain_index,
    server_session_summaries,
    summarize_profile,
    validate,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def test_jain_index_bounds_and_known_values() -> None:
    assert jain_index([3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)  # 1/n: one takes all
    # (1+2)^2 / (2 * (1+4)) = 0.9
    assert jain_index([1.0, 2.0]) == pytest.approx(0.9)


@pytest.mark.parametrize("bad", [[], [0.0, 0.0], [-1.0, 2.0], [float("nan")], [float("inf")]])
def test_jain_index_refuses_bad_input(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="jain_index"):
        jain_index(bad)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sessions", "0"], "--sessions"),
        (["--duration", "-1"], "--duration"),
        (["--cc", "{nope"], "--cc is not JSON"),
        (["--cc", "[1]"], "JSON object"),
        (["--workers", "3", "--sessions", "2"], "--workers"),
        (["--duration", "5", "--fair-from-s", "5"], "--fair-from-s"),
        (["--link-mbps", "0"], "--link-mbps"),
    ],
)
def test_bad_arguments_exit_2_naming_the_option(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = build_parser()
    with pytest.raises(SystemExit) as exc:
        validate(p, p.parse_args(argv))
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_scheme_is_the_servers_cc(capsys: pytest.CaptureFixture[str]) -> None:
    """--scheme picks the server's controller (issue 17: 20 PBQ sessions against Cubic)."""
    p = build_parser()
    assert p.parse_args([]).scheme == "nuwa"
    assert p.parse_args(["--scheme", "pbq"]).scheme == "pbq"
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--scheme", "vegas"])
    assert exc.value.code == 2 and "--scheme" in capsys.readouterr().err


def test_default_link_rate_scales_with_sessions() -> None:
    p = build_parser()
    a = p.parse_args(["--sessions", "20"])
    validate(p, a)
    assert a.link_mbps == pytest.approx(24.0)
    a = p.parse_args(["--sessions", "10", "--mode", "paced", "--rate-mbps", "2"])
    validate(p, a)
    assert a.link_mbps == pytest.approx(30.0)


def test_profile_summary_self_time_and_areas(tmp_path: Path) -> None:
    raw = tmp_path / "p.txt"
    raw.write_text(
        "main (a.py:1);transmit (nuwa_server/session.py:9);encrypt (aioquic/_crypto.py:50) 30\n"
        "main (a.py:1);_pump (nuwa_server/session.py:99) 50\n"
        "main (a.py:1);select (selectors.py:468) 20\n"
    )
    s = summarize_profile(raw)
    assert s["samples"] == 100
    assert s["self"][0] == {"frame": "_pump (nuwa_server/session.py:99)", "share": 0.5}
    assert s["by_area"] == {"nuwa_server": 0.5, "aioquic crypto": 0.3, "asyncio/sockets": 0.2}


def test_server_session_summaries_from_stderr(tmp_path: Path) -> None:
    summ = {"grant_violations": 1, "fallback_entries": 2, "grants_accepted": 10, "frames": 5,
            "bytes_sent": 6100, "close_reason": "server_shutdown", "grants_dropped": {"replay": 3},
            "departure": {"transmits_with_unsent_new_bytes": 4}}
    err = tmp_path / "server.stderr"
    err.write_text(
        "x INFO nuwa_server.session: session s1 closed (server_shutdown): " + json.dumps(summ)
        + "\nnoise line\n"
        + "x INFO nuwa_server.session: session s2 closed (server_shutdown): " + json.dumps(summ)
        + "\n"
    )
    t = server_session_summaries(err)
    assert t["sessions"] == 2
    assert t["grant_violations"] == 2 and t["fallback_entries"] == 4 and t["bytes_sent"] == 12200
    assert t["grants_dropped"] == {"replay": 6}
    assert t["transmits_with_unsent_new_bytes"] == 8


def test_instrument_check_voids_a_run_whose_load_clients_lagged() -> None:
    from nuwa_lab.load.common import MAX_BRIDGE_LAG_P50_US, instrument_check

    ok = instrument_check([{"p50": 1700.0, "p99": 14000.0, "max": 30000, "batches": 29000}])
    assert ok == {"valid": True, "bridge_lag_p50_us": 1700.0, "invalid_reasons": []}
    # the clean-clone CI run that used 0.64 of the link: lag p50 9.3 ms
    bad = instrument_check([{"p50": 1000.0, "batches": 9}, {"p50": 9320.0, "batches": 8101}])
    assert not bad["valid"] and bad["bridge_lag_p50_us"] == 9320.0
    assert "bridge lag p50 9.3 ms > 4.0 ms" in bad["invalid_reasons"][0]
    assert instrument_check([{"p50": MAX_BRIDGE_LAG_P50_US}])["valid"]  # the bound itself passes
    assert not instrument_check([{"p50": None, "batches": 0}])["valid"]
    assert not instrument_check([])["valid"]


def test_flush_skips_a_receiver_whose_data_held_no_whole_frame() -> None:
    """A stream chunk without a whole frame (a frame split by a repair) left an empty list
    in the pending batch, and _flush raised IndexError until that receiver's next frame
    (seen in every mixed run with Cubic's losses): now it is skipped."""
    import argparse
    from types import SimpleNamespace

    from nuwa_lab.load.worker import Worker

    w = Worker(argparse.Namespace())
    sent: list[dict] = []
    w.bridge = SimpleNamespace(request=lambda obj, cb=None: sent.append(obj))  # type: ignore[assignment]
    w.pending = {0: [], 1: [10, 20, 1212]}
    w._flush()
    assert [s for s, _ in sent[0]["s"]] == [1] and w.pending == {}
    w.pending = {0: []}
    w._flush()
    assert len(sent) == 1 and w.pending == {}
