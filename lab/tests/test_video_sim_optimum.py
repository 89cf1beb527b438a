"""The offline optimum of simulated playbacks (video_sim_optimum.py, issue 15)."""

from __future__ import annotations

import json
import math

import pytest
from test_abr_optimum import MPD

from nuwa_lab.video_sim_optimum import add_optimum, ladder_json, opportunities_from, table

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def test_opportunities_from_an_offset_loop_the_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "t.mahi"
    trace.write_text("1\n2\n5\n10\n")  # period 10 ms
    assert opportunities_from(trace, 0, 12) == [1, 2, 5, 10, 11]
    # from 4 ms on: 5 → 1, 10 → 6, then the next loop's 1, 2, 5 → 7, 8, 11
    assert opportunities_from(trace, 4, 12) == [1, 6, 7, 8, 11]
    assert opportunities_from(trace, 14, 12) == opportunities_from(trace, 4, 12)  # offsets wrap
    (tmp_path / "empty.mahi").write_text("")
    with pytest.raises(ValueError):
        opportunities_from(tmp_path / "empty.mahi", 0, 10)


def test_add_optimum_and_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    content = tmp_path / "content"
    content.mkdir()
    (content / "manifest.mpd").write_text(MPD)
    for rid, size in (("0", 75_000), ("1", 187_500), ("2", 24_000)):
        for n in range(1, 12):
            (content / f"seg-{rid}-{n:05d}.m4s").write_bytes(b"x" * size)
    trace = tmp_path / "12mbit.mahi"
    trace.write_text("".join(f"{t}\n" for t in range(1, 1001)))  # one packet per ms: 12 Mbit/s
    def cell(start_ms: int, variant: str, qoe: float, played: int) -> dict:
        return {"trace": "t", "path": str(trace), "start_ms": start_ms, "variant": variant,
                "qoe": qoe, "played_chunks": played, "startup_s": 0.5}

    cells = [cell(s, v, q, 5) for s in (0, 400) for v, q in (("a", 0.75), ("b", 0.3))]
    cells.append(cell(0, "c", float("nan"), 0))
    # the simulator reads the same ladder (video-sim takes it from ladder_json)
    lad = json.loads(ladder_json(content))
    assert lad["bitrates_kbps"] == [300.0, 750.0] and lad["segment_s"] == 2.0
    assert lad["video_bytes"][1][0] == 187_500 and len(lad["audio_bytes"]) == 11
    add_optimum(cells, content)
    # the top rung all along fits a 12 Mbit/s link: the optimum is its bitrate, whatever the offset
    assert all(c["optimum"] == pytest.approx(0.75) for c in cells[:4])
    assert math.isnan(cells[4]["optimum"])
    t = table(cells[:4])
    assert "0.75 / 0.75 / 1.00" in t and "0.30 / 0.75 / 0.40" in t
    assert t.splitlines()[-1].startswith("mean | 0.750 / 0.750 / 1.00 | 0.300 / 0.750 / 0.40")
