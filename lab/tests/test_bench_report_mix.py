"""The report's mixed-flow section (lab/nuwa_lab/bench_report/mix.py) on a small fake bench
directory: a run's figures from its ``./nuwa mix`` JSON, its plot copied, a failed run and an
unreadable one listed with why, and the whole report built from a bench of mixed runs only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.bench_report.mix import mix_section
from nuwa_lab.bench_report.report import build_report

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def spec(run_id: str, switch: str, link: dict) -> dict:
    return {"id": run_id, "flows": ["nuwa", "cubic"], "switch": switch, "link": link,
            "queue_packets": 1000, "duration_s": 60, "start_gap_s": 5, "delay_ms": 25, "cc": {}}


def write_run(d: Path, run_id: str, nuwa_share: float, jain: float) -> dict:
    rd = d / "mix" / run_id
    rd.mkdir(parents=True)
    (rd / "result.json").write_text(json.dumps({
        "flows": [
            {"scheme": "nuwa", "share": nuwa_share, "queuing_delay_ms": {"p95": 41.5},
             "switches": 2, "starved_s": 0},
            {"scheme": "cubic", "share": 1 - nuwa_share, "queuing_delay_ms": {"p95": 1002.0},
             "switches": 0, "starved_s": 3}],
        "jain_index": jain, "utilization": 0.983, "emulator": {"valid": True}}))
    (rd / "result.png").write_bytes(b"\x89PNG fake")
    return {"spec": spec(run_id, "rule", {"mbps": 10}), "json": f"mix/{run_id}/result.json",
            "plot": f"mix/{run_id}/result.png", "error": None, "wall_s": 70.0}


def records(d: Path) -> list[dict]:
    ok = write_run(d, "mix-nuwa+cubic-10mbps-q1000-rule", 0.43, 0.963)
    failed = {"spec": spec("mix-nuwa+cubic-10mbps-q1000-none", "none", {"mbps": 10}),
              "json": "mix/x/result.json", "plot": None, "error": "exit 1: emulator died",
              "wall_s": 3.0}
    (d / "mix" / "bad").mkdir(parents=True)
    (d / "mix" / "bad" / "result.json").write_text("{not json")
    unreadable = {"spec": spec("mix-nuwa+cubic-lte-q1000-rule", "rule",
                               {"trace": "traces/4G/x.mahi", "name": "x-lte"}),
                  "json": "mix/bad/result.json", "plot": None, "error": None, "wall_s": 70.0}
    return [ok, failed, unreadable]


def test_mix_section_rows_plots_and_failures(tmp_path: Path) -> None:
    plots_dir = tmp_path / "plots"
    plots_dir.mkdir()
    md, plots = mix_section(records(tmp_path), tmp_path, plots_dir, "plots/")
    text = "\n".join(md)
    ok_row = next(line for line in md if line.startswith("| mix-nuwa+cubic-10mbps-q1000-rule"))
    assert "constant 10 Mbit/s" in ok_row and "| rule |" in ok_row
    assert "nuwa 0.43 / 42 ms / 2 sw / 0 s; cubic 0.57 / 1002 ms / 0 sw / 3 s" in ok_row
    assert "| 0.963 | 0.983 | yes |" in ok_row
    assert "FAILED: exit 1: emulator died" in text
    bad_row = next(line for line in md if line.startswith("| mix-nuwa+cubic-lte-q1000-rule"))
    assert "x-lte" in bad_row and "FAILED: result unreadable" in bad_row
    assert plots == [plots_dir / "mix-nuwa+cubic-10mbps-q1000-rule.png"]
    assert plots[0].read_bytes() == b"\x89PNG fake"
    assert "](plots/mix-nuwa+cubic-10mbps-q1000-rule.png)" in text
    assert mix_section([], tmp_path, plots_dir, "plots/") == ([], [])


def test_a_bench_of_mixed_runs_only_makes_a_report(tmp_path: Path) -> None:
    (tmp_path / "bench-index.json").write_text(json.dumps({
        "command": "./nuwa bench --mix nuwa:cubic (test)", "options": {"delay_ms": 25},
        "config": {}, "runs": [], "mix": records(tmp_path)}))
    md, plots = build_report(tmp_path)
    assert "## Sharing a bottleneck" in md and "0.963" in md
    assert [p.name for p in plots] == ["mix-nuwa+cubic-10mbps-q1000-rule.png"]
