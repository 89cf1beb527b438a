"""Issue 15's video targets in the report (video_report.py), on synthetic run records."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.bench_report import Cells, Run
from nuwa_lab.video_report import issue15_section, issue15_targets

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def play(trace: str, family: str, scheme: str, qoe: float, opt: float, **m: object) -> Run:
    metrics = {"qoe_per_chunk": qoe, "qoe_optimum": opt, "qoe_fraction": qoe / opt,
               "rebuffer_s": m.get("rebuf_s", 0.0), "media_played_s": 60.0,
               "switches": m.get("switches", 2), "startup_s": 0.5, "bitrate_kbps_mean": 2000.0,
               "redownloaded_bytes": m.get("redl", 0), "abandoned_bytes": 0,
               "redownloaded_lower_chunks": m.get("lower", 0),
               "queuing_delay_ms": {"p95": m.get("p95", 40.0)}, "emulator": {"valid": True}}
    r = {"id": f"play-{trace}-{scheme}", "kind": "play", "scheme": scheme, "queue_packets": 1000,
         "trace": {"name": trace, "family": family}, "valid": True, "metrics": metrics}
    return Run(r, Path("/nonexistent"))


def verdicts(runs: list[Run], oracle: dict[str, float] | None = None) -> dict[str, str]:
    return {row[0]: row[2] for row in issue15_targets(Cells(runs), 1000, oracle)}


def test_targets_met() -> None:
    runs = []
    for t, fam in (("a3g", "3G"), ("b4g", "LTE-Saturator"), ("c5g", "5G-lowband")):
        runs += [play(t, fam, "nuwa", 2.4, 2.6), play(t, fam, "dashjs", 2.0, 2.6, rebuf_s=1.0),
                 play(t, fam, "dashjs_grants", 1.5, 2.6, lower=3),
                 play(t, fam, "dashjs_nuwa_estimate", 1.6, 2.6)]
    v = verdicts(runs)
    assert v["Mean QoE ≥ 1.15× dash.js default's"] == "met"  # 2.4 / 2.0 = 1.2
    assert v["No trace below 0.95× dash.js default's QoE"] == "met"
    assert v["Mean QoE ≥ 0.85× the offline optimum"] == "met"  # 2.4 / 2.6 = 0.92
    assert v["Rebuffer ratio and switches ≤ dash.js's on every family"] == "met"
    assert v["dash.js's rules fed Nuwa's estimate ≥ the same rules on their own estimate"] == "met"
    assert v["Queuing delay while streaming p95 ≤ max(50 ms, 1.2× oracle's bulk)"] == "met"
    md = "\n".join(issue15_section(Cells(runs), 1000))
    assert "| a3g | nuwa | 2.40 | 2.60 | 92% |" in md
    assert "| lower | Qd p95 ms |" in md
    assert "| a3g | dashjs_grants | 1.50 |" in md
    assert "| 2000 | 0.00 | 3.0 | 40 |" in md  # dashjs_grants' 3 lower re-downloads a run


def test_targets_missed() -> None:
    runs = [play("a3g", "3G", "nuwa", 1.0, 2.0, switches=5, p95=80.0),
            play("a3g", "3G", "dashjs", 1.2, 2.0, switches=3),
            play("b4g", "LTE-Saturator", "nuwa", 3.0, 4.0),
            play("b4g", "LTE-Saturator", "dashjs", 2.0, 4.0),
            play("a3g", "3G", "dashjs_grants", 1.5, 2.0),
            play("a3g", "3G", "dashjs_nuwa_estimate", 1.4, 2.0)]
    v = verdicts(runs, {"a3g": 60.0})
    assert v["Mean QoE ≥ 1.15× dash.js default's"] == "met"  # 2.0 vs 1.6: 1.25
    assert v["No trace below 0.95× dash.js default's QoE"] == "**missed**"  # a3g 0.83×
    assert v["Mean QoE ≥ 0.85× the offline optimum"] == "**missed**"  # 2.0 / 3.0
    assert v["Rebuffer ratio and switches ≤ dash.js's on every family"] == "**missed**"
    fed = "dash.js's rules fed Nuwa's estimate ≥ the same rules on their own estimate"
    assert v[fed] == "**missed**"
    # 80 ms > max(50, 1.2 × 60 = 72)
    assert v["Queuing delay while streaming p95 ≤ max(50 ms, 1.2× oracle's bulk)"] == "**missed**"


def test_a_trace_where_dashjs_qoe_is_negative_compares_values_not_ratios() -> None:
    runs = [play("u3g", "3G", "nuwa", 0.5, 1.0), play("u3g", "3G", "dashjs", -4.0, 1.0),
            play("b4g", "LTE-Saturator", "nuwa", 3.0, 4.0),
            play("b4g", "LTE-Saturator", "dashjs", 2.0, 4.0)]
    assert verdicts(runs)["No trace below 0.95× dash.js default's QoE"] == "met"
    runs[0] = play("u3g", "3G", "nuwa", -5.0, 1.0)
    assert verdicts(runs)["No trace below 0.95× dash.js default's QoE"] == "**missed**"
