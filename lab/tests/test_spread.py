"""Runs that spread (issue 16 item 5): cells as Ray tasks on a local 2-CPU Ray.

The simulator's cells give through Ray exactly the records the serial path gives (one process
running them in turn; the simulator is deterministic), in the cells' order; cells that declare
2 CPUs (end-to-end runs) never run at the same time on 2 CPUs, while 1-CPU cells do."""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nuwa_lab import spread

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

REPO = Path(__file__).resolve().parents[2]
TSX = str(REPO / "node_modules" / ".bin" / "tsx")
TRACE = {"path": "traces/4G/mahimahi-tmobile-lte-short.mahi", "name": "mahimahi-tmobile-lte-short",
         "family": "LTE-Saturator", "mean_mbps": 0}


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One light local Ray with 2 CPUs (this machine's count, whatever the host) for the module."""
    import ray

    spread.init_ray(num_cpus=2)
    yield
    ray.shutdown()


def sim_work(scheme: str, queue: int, cc: dict[str, object]) -> dict[str, object]:
    """A simulator cell (e2e/src/cells.ts CellWork): one 8 s simulated run of T-Mobile LTE."""
    run = {"trace": TRACE, "scheme": scheme, "queue_packets": queue, "duration_s": 8, "cc": cc}
    return {"kind": "sim", "runs": [run]}


def timed_cell(sleep_s: float) -> list[str]:
    """A dummy cell: sleeps, then writes [start, end] (time.time(), s) to its --result PATH."""
    code = (f"import json, sys, time; t = time.time(); time.sleep({sleep_s!r}); "
            "json.dump([t, time.time()], open(sys.argv[2], 'w'))")
    return [sys.executable, "-c", code]


def overlaps(spans: list[list[float]]) -> int:
    """Pairs of [start, end] intervals that overlap."""
    return sum(1 for a, b in itertools.combinations(spans, 2) if a[0] < b[1] and b[0] < a[1])


def test_simulator_cells_through_ray_equal_the_serial_path(local_ray: None, tmp_path: Path) -> None:
    works = [sim_work("nuwa", 1000, {}), sim_work("aimd", 1000, {}),
             sim_work("nuwa", 50, {"target_delay_ms": 40})]
    cells = [spread.Cell(f"sim-{i}", [TSX, "e2e/src/cli-cell.ts", "--cell", json.dumps(w)], 1)
             for i, w in enumerate(works)]
    finished: list[str] = []
    got = spread.run_cells(cells, REPO, on_done=lambda r: finished.append(r.id))
    assert [r.id for r in got] == [c.id for c in cells]  # the cells' order, whatever finished first
    assert sorted(finished) == sorted(c.id for c in cells)
    assert all(r.ok for r in got), [r.error for r in got if not r.ok]

    # the serial path: one process running the same cells one after another
    (tmp_path / "cells.json").write_text(json.dumps({"cells": works}))
    serial = spread.run_cell_here([TSX, "e2e/src/cli-cell.ts", "--cells",
                                   str(tmp_path / "cells.json")], str(REPO))
    assert serial["ok"], serial["error"]

    def strip(records: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in r.items() if k != "cpu_s"} for r in records]  # CPU time varies

    assert [strip(r.result) for r in got] == [strip(s) for s in serial["result"]]
    by = {c.id: r.result[0] for c, r in zip(cells, got, strict=True)}
    assert by["sim-0"]["utilization"] > 0.5 and by["sim-1"]["scheme"] == "aimd"
    assert by["sim-0"]["queuing_delay_ms"] != by["sim-2"]["queuing_delay_ms"]  # the cc arrived


def test_two_cpu_cells_never_overlap_on_two_cpus(local_ray: None) -> None:
    """End-to-end cells reserve 2 CPUs: on 2 they run one at a time; 1-CPU cells run two at once
    (the same dummy work, so the reservation, not the work, serialises them)."""
    wide = [spread.Cell(f"e2e-{i}", timed_cell(0.8), 2) for i in range(3)]
    narrow = [spread.Cell(f"sim-{i}", timed_cell(1.5), 1) for i in range(4)]
    got = spread.run_cells(wide + narrow, REPO)
    assert all(r.ok for r in got), [r.error for r in got if not r.ok]
    wide_spans = [r.result for r in got[:3]]
    narrow_spans = [r.result for r in got[3:]]
    assert overlaps(wide_spans) == 0, wide_spans
    assert overlaps(wide_spans + narrow_spans) == overlaps(narrow_spans)  # none beside an e2e cell
    assert overlaps(narrow_spans) >= 1, narrow_spans


def test_cells_run_at_the_callers_priority(local_ray: None) -> None:
    """Ray starts workers at niceness 15; an end-to-end cell's server then lost the CPU to Chromium
    (nice 0) at 40 Mbit/s (twentieth session: 5G low-band 0.649 utilization). A cell's process runs
    no lower than the caller's priority."""
    code = "import json, os, sys; json.dump(os.nice(0), open(sys.argv[2], 'w'))"
    (got,) = spread.run_cells([spread.Cell("nice", [sys.executable, "-c", code], 1)], REPO)
    assert got.ok, got.error
    assert got.result <= os.nice(0), (got.result, os.nice(0))


def test_failed_cell_and_oversized_request(local_ray: None, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    """A cell that exits non-zero comes back not ok with its stderr; one asking more CPUs than
    any node has runs on all of one node instead of waiting forever; < 1 CPU is refused."""
    bad = spread.Cell("bad", [sys.executable, "-c", "import sys; sys.exit('no such trace')"], 1)
    big = spread.Cell("big", timed_cell(0.1), 64)
    r_bad, r_big = spread.run_cells([bad, big], REPO)
    assert not r_bad.ok and r_bad.result is None and "no such trace" in (r_bad.error or "")
    assert r_big.ok and len(r_big.result) == 2
    assert "asks 64 CPUs, the largest node has 2" in capsys.readouterr().err
    with pytest.raises(ValueError, match="num_cpus"):
        spread.run_cells([spread.Cell("zero", timed_cell(0), 0)], REPO)


def test_cells_protocol_is_checked() -> None:
    cells, cwd = spread.parse_cells({"cells": [{"id": "a", "argv": ["x"], "num_cpus": 2}],
                                     "cwd": "/tmp"})
    assert cells == [spread.Cell("a", ["x"], 2)] and cwd == "/tmp"
    for bad in ({}, {"cells": [{"id": "a", "argv": []}]}, {"cells": [{"argv": ["x"]}]},
                {"cells": [{"id": "a", "argv": ["x"], "num_cpus": 0}]}):
        with pytest.raises(ValueError):
            spread.parse_cells(bad)
