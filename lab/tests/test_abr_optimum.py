"""The offline optimum's DP against brute force (issue 15)."""

from __future__ import annotations

import random

import pytest

from nuwa_lab.abr_optimum import (
    Capacity,
    Ladder,
    brute_force_qoe,
    load_ladder,
    optimum_qoe,
    qoe_of_sequence,
    run_optimum,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def _ladder(rng: random.Random, rungs: int, chunks: int) -> Ladder:
    rates = sorted(rng.sample([300, 750, 1200, 1850, 2850, 4300, 6000, 8000], rungs))
    vb = tuple(tuple(int(r * 1000 / 8 * 2 * rng.uniform(0.7, 1.3)) for _ in range(chunks))
               for r in rates)
    return Ladder(tuple(float(r) for r in rates), vb, tuple(12_000 for _ in range(chunks)), 2.0)


def _capacity(rng: random.Random, seconds: int) -> Capacity:
    opps: list[int] = []
    for sec in range(seconds):
        per_ms = rng.choice([0.05, 0.2, 0.5, 1.0, 2.0])  # packets per ms: 0.6–24 Mbit/s
        for ms in range(1000):
            t = sec * 1000 + ms
            for _ in range(int(per_ms) + (1 if rng.random() < per_ms % 1 else 0)):
                opps.append(t)
    return Capacity(opps)


@pytest.mark.parametrize("seed", range(12))
def test_dp_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    ladder = _ladder(rng, rungs=rng.choice([2, 3, 4]), chunks=5)
    cap = _capacity(rng, 20)
    startup = rng.choice([0.3, 1.0, 2.5])
    n = rng.choice([3, 4, 5])
    got, path = optimum_qoe(cap, ladder, n, startup, 25.0)
    want, _ = brute_force_qoe(cap, ladder, n, startup, 25.0)
    assert got == pytest.approx(want, abs=1e-9)
    assert qoe_of_sequence(cap, ladder, path, startup, 25.0) == pytest.approx(got, abs=1e-9)


def test_stall_is_charged_when_even_the_lowest_rung_is_too_big() -> None:
    # 1 packet per 10 ms = 1.2 Mbit/s; the lowest rung's chunk (300 kB) takes ~2 s: stalls.
    cap = Capacity(list(range(0, 100_000, 10)))
    ladder = Ladder((1200.0, 2400.0), ((300_000,) * 3, (600_000,) * 3), (0, 0, 0), 2.0)
    q, path = optimum_qoe(cap, ladder, 3, 0.5, 25.0)
    assert path == [0, 0, 0]
    assert q < 1.2  # stalls cost something
    assert q == pytest.approx(brute_force_qoe(cap, ladder, 3, 0.5, 25.0)[0])


def test_capacity_loops_and_rejects_nothing() -> None:
    cap = Capacity([0, 5, 9])
    assert cap.finish_ms(0, 1504 * 3) == 9
    assert cap.finish_ms(1, 1504 * 3) == 10  # 5, 9, then 0 + period 10
    with pytest.raises(ValueError):
        Capacity([])


@pytest.mark.parametrize("seed", range(6))
def test_coarse_dp_is_a_close_lower_bound(seed: int) -> None:
    rng = random.Random(100 + seed)
    ladder = _ladder(rng, rungs=4, chunks=6)
    cap = _capacity(rng, 30)
    exact, _ = optimum_qoe(cap, ladder, 6, 1.0, 25.0)
    coarse, path = optimum_qoe(cap, ladder, 6, 1.0, 25.0, resolution_ms=100.0)
    assert coarse <= exact + 1e-9
    assert coarse >= exact - 0.25
    assert qoe_of_sequence(cap, ladder, path, 1.0, 25.0) == pytest.approx(coarse, abs=1e-9)


MPD = """<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
 <Period id="0">
  <AdaptationSet id="0" contentType="video">
   <Representation id="1" bandwidth="750000"><SegmentTemplate timescale="1000" duration="2000"
    initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number%05d$.m4s"
    startNumber="1"/></Representation>
   <Representation id="0" bandwidth="300000"><SegmentTemplate timescale="1000" duration="2000"
    initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number%05d$.m4s"
    startNumber="1"/></Representation>
  </AdaptationSet>
  <AdaptationSet id="1" contentType="audio">
   <Representation id="2" bandwidth="96000"><SegmentTemplate timescale="1000" duration="2000"
    initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number%05d$.m4s"
    startNumber="1"/></Representation>
  </AdaptationSet>
 </Period>
</MPD>
"""


def test_load_ladder_and_run_optimum(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "manifest.mpd").write_text(MPD)
    for rid, size in (("0", 75_000), ("1", 187_500), ("2", 24_000)):
        for n in range(1, 12):  # 11 > 9: sorted by number, not by name
            (tmp_path / f"seg-{rid}-{n:05d}.m4s").write_bytes(b"x" * (size + n))
    ladder = load_ladder(tmp_path)
    assert ladder.bitrates_kbps == (300.0, 750.0)  # ascending, whatever the MPD's order
    assert ladder.segment_s == 2.0
    assert ladder.video_bytes[1][10] == 187_511 and ladder.audio_bytes[0] == 24_001
    # 12 Mbit/s (one packet per ms) in log time from 1000 ms; the run starts at log 1000 ms
    o = run_optimum(list(range(1000, 80_000)), 1000.0, tmp_path, 5, 0.5, 25.0)
    assert o["path_kbps"] == [750.0] * 5
    assert o["qoe_per_chunk"] == pytest.approx(0.75)
