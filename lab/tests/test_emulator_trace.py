"""Trace parsing, validation and the looped schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.emulator import TraceError, constant_rate_trace, load_trace, parse_trace

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

TRACES = Path(__file__).resolve().parents[2] / "traces"


def test_parse_and_period():
    tr = parse_trace(["0\n", "0\n", "\n", "3\n", "7\n"], "x")
    assert tr.opportunities_ms == (0, 0, 3, 7)
    assert tr.period_ms == 7
    assert tr.mean_rate_bps == pytest.approx(4 * 1504 * 8 * 1000 / 7)
    it = tr.iter_opportunities_ms()
    assert [next(it) for _ in range(9)] == [0, 0, 3, 7, 7, 7, 10, 14, 14]


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([], "empty trace"),
        (["\n", "  \n"], "empty trace"),
        (["1\n", "abc\n"], r"x:2: malformed line 'abc'"),
        (["1.5\n"], "malformed line"),
        (["-1\n"], "negative"),
        (["5\n", "3\n"], "smaller than previous"),
        (["0\n", "0\n"], "last timestamp must be > 0"),
    ],
)
def test_bad_traces(lines, match):
    with pytest.raises(TraceError, match=match):
        parse_trace(lines, "x")


def test_load_errors(tmp_path):
    with pytest.raises(TraceError, match="not found"):
        load_trace(tmp_path / "nope.mahi")
    with pytest.raises(TraceError, match="directory"):
        load_trace(tmp_path)
    p = tmp_path / "bin.mahi"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError):
        load_trace(p)


@pytest.mark.parametrize("rate_bps", [1e6, 5e6, 12.03e6, 20e6, 100e6])
def test_constant_rate_trace(rate_bps):
    tr = constant_rate_trace(rate_bps)
    assert tr.period_ms == 1000
    assert tr.mean_rate_bps == pytest.approx(rate_bps, rel=0.01, abs=12032)
    per_100ms = [len(tr.opportunities_between_ms(k * 100 + 1, (k + 1) * 100 + 1)) for k in range(9)]
    assert max(per_100ms) - min(per_100ms) <= 1  # evenly spread


@pytest.mark.skipif(not TRACES.is_dir(), reason="repo traces/ not present")
def test_repo_traces_load():
    tr = load_trace(TRACES / "4G" / "mahimahi-verizon-lte-short.mahi")
    assert tr.period_ms == 140_000 or tr.period_ms > 100_000
    assert 4e6 < tr.mean_rate_bps < 6e6
