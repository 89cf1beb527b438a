"""QoE over played chunks and paired estimate error (play_metrics), on synthetic page logs."""

from __future__ import annotations

import math

import pytest

from nuwa_lab.play_metrics import estimate_error, qoe

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def page_with_redownload() -> dict:
    """Positions 0..3 of 2 s each; position 2 fetched at 1 Mbit/s, then again at 3 Mbit/s
    (fast switching), position 3 fetched but never played (playback stopped at 5.5 s);
    one stall of 0.5 s; one abandoned request."""
    chunks = [
        {"t_us": 1e6, "bitrate_kbps": 1000, "index": 0, "start_s": 0.0, "bytes": 250_000},
        {"t_us": 2e6, "bitrate_kbps": 2000, "index": 1, "start_s": 2.0, "bytes": 500_000},
        {"t_us": 3e6, "bitrate_kbps": 1000, "index": 2, "start_s": 4.0, "bytes": 250_000},
        {"t_us": 4e6, "bitrate_kbps": 3000, "index": 2, "start_s": 4.0, "bytes": 750_000},
        {"t_us": 5e6, "bitrate_kbps": 3000, "index": 3, "start_s": 6.0, "bytes": 750_000},
    ]
    return {
        "chunks": chunks,
        "abandoned": [{"t_us": 4.5e6, "bitrate_kbps": 3000, "index": 3, "start_s": 6.0,
                       "bytes": 100_000}],
        "stalls": [{"start_us": 2.0e6, "end_us": 2.5e6}],
        "samples": [{"t_us": 1e6, "media_s": 0.5}, {"t_us": 6e6, "media_s": 5.5}],
    }


def test_qoe_counts_each_played_position_once_with_its_last_download():
    q = qoe(page_with_redownload())
    # played: positions 0, 1, 2 (2 as re-downloaded at 3 Mbit/s); position 3 was never reached
    assert q["chunks"] == 3
    rates = [1.0, 2.0, 3.0]
    expected = (sum(rates) - 4.3 * 0.5 - (1.0 + 1.0)) / 3
    assert q["qoe_per_chunk"] == pytest.approx(expected)  # 0.617 (old: 0.77 over 5 downloads)
    assert q["bitrate_kbps_mean"] == pytest.approx(2000.0)
    assert q["switches"] == 2
    assert q["rebuffer_s"] == pytest.approx(0.5)
    assert q["chunks_downloaded"] == 5
    assert q["redownloaded_chunks"] == 1
    assert q["redownloaded_bytes"] == 250_000  # the superseded 1 Mbit/s copy of position 2
    assert q["abandoned_requests"] == 1
    assert q["abandoned_bytes"] == 100_000


def test_qoe_without_chunks_is_none():
    q = qoe({"chunks": [], "stalls": [], "samples": []})
    assert q["chunks"] == 0 and q["qoe_per_chunk"] is None and q["bitrate_kbps_mean"] is None


def test_estimate_error_pairs_both_estimates_on_the_same_bins():
    nan = float("nan")
    s = lambda n, d: {"nuwa_bps": n, "dashjs_bps": d}  # noqa: E731
    bins = [
        ([s(9e6, 5e6), s(11e6, 5e6)], 10e6, True),  # both: Nuwa 0%, dash.js 50%
        ([s(10e6, nan), s(10e6, None)], 10e6, True),  # dash.js has no figure yet: not scored
        ([s(4e6, 2e6)], 2e6, True),  # Nuwa 100%, dash.js 0%
        ([s(5e6, 5e6)], 5e6, False),  # idle bin: not scored
        ([s(1e6, 1e6)], 0.0, True),  # no capacity: not scored
        ([s(3e6, 6e6)], 4e6, True),  # Nuwa 25%, dash.js 50%
    ]
    e, means = estimate_error(bins)
    assert e["bins"] == 3
    assert e["nuwa"] == pytest.approx(0.25)  # median of 0, 1, 0.25
    assert e["dashjs"] == pytest.approx(0.5)  # median of 0.5, 0, 0.5
    assert means[0] == (pytest.approx(10e6), pytest.approx(5e6))
    assert means[1] == (None, None)
    assert not any(x is not None and math.isnan(x) for m in means for x in m)
