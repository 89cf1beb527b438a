"""Burst variants of traces (nuwa_lab.emulator.burstify): bytes, period, gaps, determinism."""

from __future__ import annotations

import bisect
import statistics
from pathlib import Path

import pytest

from nuwa_lab.emulator import load_trace, parse_trace
from nuwa_lab.emulator.burstify import burst_ends_ms, burstify, main
from nuwa_lab.emulator.trace_stats import distinct_gaps_ms, percentile_linear, trace_stats

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

TRACES = Path(__file__).resolve().parents[2] / "traces"


def _trace(ts: list[int]):
    return parse_trace([f"{t}\n" for t in ts])


def _every_ms(period_ms: int, per_ms: int = 1):
    """One (or ``per_ms``) opportunity per ms, 1..period: a constant-rate trace."""
    return _trace([t for t in range(1, period_ms + 1) for _ in range(per_ms)])


def test_count_period_and_per_opportunity_shift():
    src = _every_ms(10_000)
    out = burstify(src, 20, 100, seed=7)
    assert len(out) == len(src.opportunities_ms)
    assert out == sorted(out) and out[-1] == src.period_ms
    shifts = [b - a for a, b in zip(src.opportunities_ms, out, strict=True)]
    assert min(shifts) == 0 and max(shifts) < 100  # never earlier, at most one burst later


def test_gaps_are_drawn_uniformly_from_the_range():
    out = burstify(_every_ms(120_000), 20, 100, seed=3)
    gaps = sorted(distinct_gaps_ms(out, window_ms=10**9))
    assert len(gaps) > 1000
    assert gaps[0] >= 20 and gaps[-1] <= 100
    assert gaps[0] <= 22 and gaps[-1] >= 98  # both ends reached
    assert statistics.mean(gaps) == pytest.approx(60, abs=3)  # uniform 20..100
    assert percentile_linear(gaps, 90) == pytest.approx(92, abs=4)
    # a narrower range is honoured too, including the clipped last gap
    ends = burst_ends_ms(1_000, 30, 60, seed=1)
    assert ends[-1] == 1_000
    assert all(30 <= b - a <= 60 for a, b in zip([0, *ends], ends, strict=False))


def test_deterministic_for_a_seed():
    src = _every_ms(5_000)
    assert burstify(src, 20, 100, seed=11) == burstify(src, 20, 100, seed=11)
    assert burstify(src, 20, 100, seed=11) != burstify(src, 20, 100, seed=12)


def test_rate_is_conserved_at_the_second_scale():
    """Cumulative deliveries lag the source by at most one burst: in_cum(t - 100) <= out_cum(t)
    <= in_cum(t), so each 10 s window of a 10 Mbit/s trace is within 1 %."""
    src = _every_ms(60_000)  # 1 opportunity / ms: 12 Mbit/s at 1500 B
    out = burstify(src, 20, 100, seed=5)
    ins = list(src.opportunities_ms)

    def cum(xs: list[int], t: int) -> int:
        return bisect.bisect_right(xs, t)

    for t in range(0, 60_001, 250):
        assert cum(ins, t - 100) <= cum(out, t) <= cum(ins, t)
    for w in range(0, 60_000, 10_000):
        n_in = cum(ins, w + 10_000) - cum(ins, w)
        n_out = cum(out, w + 10_000) - cum(out, w)
        assert abs(n_out - n_in) <= 0.01 * n_in


def test_outages_stay_outages():
    ts = [t for t in range(1, 5_001)] + [t for t in range(10_001, 15_001)]  # dark 5..10 s
    out = burstify(_trace(ts), 20, 100, seed=2)
    assert not [t for t in out if 5_100 < t <= 10_000]
    assert len(out) == len(ts)


def test_real_trace_gets_bursty():
    src = load_trace(TRACES / "4G" / "mahimahi-tmobile-lte-short.mahi")
    out = _trace(burstify(src, 20, 100, seed=1))
    before, after = trace_stats(src), trace_stats(out)
    assert before.gap_p99_ms < 25
    assert 80 <= after.gap_p90_ms <= 100 and after.gap_p99_ms >= 100
    assert out.mean_rate_bps == pytest.approx(src.mean_rate_bps)


def test_bad_arguments():
    with pytest.raises(ValueError, match="max >= 2 x min"):
        burst_ends_ms(1_000, 60, 100, seed=1)
    with pytest.raises(ValueError, match="shorter than the minimum gap"):
        burst_ends_ms(10, 20, 100, seed=1)
    with pytest.raises(SystemExit):
        main(["a.mahi", "b.mahi", "--gap-ms", "20-100"])


def test_cli_writes_the_variant(tmp_path, capsys):
    src = tmp_path / "in.mahi"
    src.write_text("".join(f"{t}\n" for t in range(1, 3_001)))
    out = tmp_path / "sub" / "out.mahi"
    assert main([str(src), str(out), "--gap-ms", "20..100", "--seed", "4"]) == 0
    assert [int(x) for x in out.read_text().split()] == burstify(load_trace(src), 20, 100, 4)
    assert "burst: 3000 opportunities, period 3000 ms" in capsys.readouterr().out
    assert main([str(tmp_path / "none.mahi"), str(out)]) == 2
