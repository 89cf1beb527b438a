"""Issue 14's targets in the benchmark report (lab/nuwa_lab/bench_report/issue14.py), on small
fake bench directories: the counts, the 0.85× floor, the low-rate traces' 500 ms and the
shallow queue's loss, with and without cubic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.bench_report.issue14 import issue14_section, issue14_targets, low_rate_traces
from nuwa_lab.bench_report.metrics import Cells
from nuwa_lab.bench_report.runs import load_bench

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

# (trace, scheme, queue, utilization, p95 ms, loss)
RUNS = [
    ("a-3g", "nuwa", 1000, 0.93, 600.0, 0.0), ("a-3g", "cubic", 1000, 0.99, 8000.0, 0.0),
    ("b-lte", "nuwa", 1000, 0.70, 40.0, 0.0), ("b-lte", "cubic", 1000, 0.97, 2000.0, 0.0),
    ("c-5g", "nuwa", 1000, 0.99, 60.0, 0.0), ("c-5g", "cubic", 1000, 1.0, 300.0, 0.0),
    ("a-3g", "nuwa", 50, 0.90, 30.0, 0.05), ("b-lte", "nuwa", 50, 0.80, 20.0, 0.01),
]


def make_bench(d: Path, runs: list[tuple[str, str, int, float, float, float]]) -> Cells:
    ids = []
    for trace, scheme, q, util, p95, loss in runs:
        rid = f"bulk-{trace}-{scheme}-q{q}-s1"
        ids.append(rid)
        rd = d / "runs" / rid
        rd.mkdir(parents=True)
        (rd / "bench.json").write_text(json.dumps({
            "id": rid, "kind": "bulk", "scheme": scheme, "queue_packets": q,
            "trace": {"name": trace, "family": "x"}, "valid": True, "invalid_reasons": [],
            "seed": 1, "duration_s": 60, "warmup_s": 2,
            "metrics": {"utilization": util, "loss_rate": loss,
                        "queuing_delay_ms": {"mean": p95 / 2, "p50": p95 / 2, "p95": p95}}}))
    (d / "bench-index.json").write_text(json.dumps({"runs": ids, "options": {}, "config": {}}))
    _, loaded = load_bench(d)
    return Cells(loaded)


def test_issue14_targets_count_each_trace_against_cubic(tmp_path: Path) -> None:
    cells = make_bench(tmp_path, RUNS)
    rows = {t.name.split(": ", 1)[1]: t for t in issue14_targets(cells, "nuwa", {"a-3g"})}
    util95 = rows["utilization ≥ 0.95× cubic's on ≥ 90 % of traces"]
    assert util95.figure == "1/3" and util95.met is False  # a-3g 0.94×, b-lte 0.72×
    util85 = rows["utilization ≥ 0.85× cubic's on every trace"]
    assert util85.met is False and "b-lte 0.72×" in util85.figure
    p95 = rows["p95 ≤ max(50 ms, 0.1× cubic's) on ≥ 90 % of traces"]
    assert p95.figure.startswith("2/3") and "c-5g" in p95.figure and p95.met is False
    low = rows["traces below 0.3 Mbit/s, p95 ≤ 500 ms"]
    assert low.met is False and "a-3g 600 ms" in low.figure
    shallow = rows["shallow queue (50 packets), loss ≤ 3 % on every trace"]
    assert shallow.met is False and "a-3g 5.0%" in shallow.figure


def test_issue14_targets_met_and_not_measured(tmp_path: Path) -> None:
    cubic = {t: u for t, s, q, u, _, _ in RUNS if s == "cubic"}
    good = [(t, s, q, cubic[t] * (0.99 if s == "nuwa" else 1.0), 40.0 if s == "nuwa" else p, 0.0)
            for t, s, q, _, p, _ in RUNS if q == 1000]
    cells = make_bench(tmp_path, good)
    targets = issue14_targets(cells, "nuwa", set())
    verdicts = {t.name.split(": ", 1)[1]: t.met for t in targets}
    assert verdicts["utilization ≥ 0.95× cubic's on ≥ 90 % of traces"] is True
    assert verdicts["p95 ≤ max(50 ms, 0.1× cubic's) on ≥ 90 % of traces"] is True
    assert verdicts["traces below 0.3 Mbit/s, p95 ≤ 500 ms"] is None  # none run
    assert verdicts["shallow queue, loss ≤ 3 %"] is None  # no shallow runs


def test_issue14_section_needs_cubic(tmp_path: Path) -> None:
    cells = make_bench(tmp_path, [r for r in RUNS if r[1] != "cubic"])
    assert issue14_section(cells) == []


def test_low_rate_traces_from_the_repository_index() -> None:
    low = low_rate_traces()
    assert "mahimahi-tmobile-umts-driving" in low  # 30 % of its seconds under 0.3 Mbit/s
    assert "mahimahi-tmobile-lte-short" not in low
