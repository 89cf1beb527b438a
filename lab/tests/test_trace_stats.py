"""Burstiness statistics of traces (nuwa_lab.emulator.trace_stats) on hand-made traces."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from nuwa_lab.emulator import load_trace, parse_trace
from nuwa_lab.emulator.trace_stats import (
    bin_rates_mbps,
    distinct_gaps_ms,
    main,
    percentile_linear,
    trace_stats,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

TRACES = Path(__file__).resolve().parents[2] / "traces"


def test_percentile_is_numpys_linear():
    rng = random.Random(3)
    for n in (1, 2, 7, 100):
        xs = sorted(rng.randint(0, 500) for _ in range(n))
        for p in (0, 5, 50, 90, 99, 100):
            assert percentile_linear(xs, p) == pytest.approx(float(np.percentile(xs, p)))
    with pytest.raises(ValueError):
        percentile_linear([], 50)


def test_gaps_between_distinct_timestamps_in_the_first_60_s():
    # Repeated timestamps make no gap; 60000 is inside the window, 70000 outside.
    ts = [0, 0, 10, 10, 10, 30, 40, 60_000, 70_000]
    assert distinct_gaps_ms(ts) == [10, 20, 10, 59_960]
    s = trace_stats(parse_trace([f"{t}\n" for t in ts[:-2]] + ["100\n"]))
    # gaps 10, 20, 10, 60 -> sorted 10, 10, 20, 60: rank 2.7 -> 20 + 40 * 0.7; rank 2.97
    assert s.gap_p90_ms == pytest.approx(48.0)
    assert s.gap_p99_ms == pytest.approx(58.8)


def test_low_rate_share_bins_are_left_open_right_closed():
    # 0.3 Mbit/s at 1500 B is 25 opportunities per second: 24 is low, 25 is not.
    ts = [0] * 29 + [1000]  # bin 0 = [0, 1 s]: 30
    ts += [1001 + i for i in range(24)]  # bin 1: 24 (low)
    ts += [2001 + i for i in range(25)]  # bin 2: 25
    ts += [4000]  # bin 3: 1 (low); period 4 s
    rates = bin_rates_mbps(parse_trace([f"{t}\n" for t in ts]))
    assert rates == pytest.approx([0.36, 0.288, 0.3, 0.012])
    assert trace_stats(parse_trace([f"{t}\n" for t in ts])).low_rate_share == 0.5


@pytest.mark.parametrize(("period_ms", "tail", "bins", "low"), [
    (3400, 10, 3, 0.0),  # a trailing 0.4 s bin is left out
    (3600, 10, 4, 0.25),  # a 0.6 s bin with 10: 0.2 Mbit/s, low
    (3600, 15, 4, 0.0),  # with 15: 0.3 Mbit/s, not low
])
def test_trailing_partial_bin(period_ms, tail, bins, low):
    ts = [k * 1000 + 1 + i for k in range(3) for i in range(100)]
    ts += [period_ms - i for i in reversed(range(tail))]
    s = trace_stats(parse_trace([f"{t}\n" for t in ts]))
    assert (s.bins, s.low_rate_share) == (bins, low)


def test_cli_fills_the_index_and_keeps_its_fields(tmp_path, capsys):
    (tmp_path / "3G").mkdir()
    (tmp_path / "3G" / "a.mahi").write_text("".join(f"{t}\n" for t in (0, 10, 30, 2000)))
    index = {"set": "dev", "traces": [{"file": "3G/a.mahi", "family": "3G", "mean_mbps": 1.0},
                                      {"file": "5G/absent.mahi", "family": "5G"}]}
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert main(["--index", str(tmp_path / "index.json"), "--write"]) == 0
    out = json.loads((tmp_path / "index.json").read_text())
    a, absent = out["traces"]
    # gaps 10, 20, 1970: p90 at rank 1.8, p99 at rank 1.98; both 1 s bins under 25 opportunities
    assert a == {"file": "3G/a.mahi", "family": "3G", "mean_mbps": 1.0,
                 "gap_p90_ms": 1580.0, "gap_p99_ms": 1931.0, "low_rate_share": 1.0}
    assert absent == {"file": "5G/absent.mahi", "family": "5G"}
    assert "(not found)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--write"])  # --write without --index
    (tmp_path / "bad.mahi").write_text("1\nx\n")
    assert main([str(tmp_path / "bad.mahi")]) == 2


@pytest.mark.skipif(not TRACES.is_dir(), reason="repo traces/ not present")
def test_index_fields_match_the_trace_files():
    """Every trace the repository holds is listed in traces/index.json with its size and the
    statistics of the file (reproducible with the CLI); every entry has the three fields."""
    index = json.loads((TRACES / "index.json").read_text())
    listed = {e["file"]: e for e in index["traces"]}
    held = sorted(str(p.relative_to(TRACES)) for p in TRACES.glob("*/*.mahi"))
    assert len(held) >= 18 and set(held) <= set(listed)
    for e in listed.values():
        assert {"gap_p90_ms", "gap_p99_ms", "low_rate_share"} <= set(e), e["file"]
    for f in held:
        e = listed[f]
        assert e["size_bytes"] == (TRACES / f).stat().st_size, f
        s = trace_stats(load_trace(TRACES / f))
        assert e["gap_p90_ms"] == pytest.approx(s.gap_p90_ms, abs=0.05), f
        assert e["gap_p99_ms"] == pytest.approx(s.gap_p99_ms, abs=0.05), f
        assert e["low_rate_share"] == pytest.approx(s.low_rate_share, abs=1e-4), f
    # The development set's published figures for the UMTS trace: 16/64 ms and 30 %.
    umts = listed["3G/mahimahi-tmobile-umts-driving.mahi"]
    assert (umts["gap_p90_ms"], umts["gap_p99_ms"], umts["low_rate_share"]) == (16.0, 64.0, 0.3)
