"""Repeated video runs and the ladder section of the benchmark report (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.bench_report import (
    Cells,
    Run,
    ladder_section,
    spread,
    step,
    step_verdict,
    video_family,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def play(trace: str, family: str, scheme: str, rep: int, *, qoe: float, rebuf_s: float = 0.0,
         err_nuwa: float = 0.1, err_dashjs: float = 0.3, p95: float = 50.0) -> Run:
    m = {"qoe_per_chunk": qoe, "rebuffer_s": rebuf_s, "media_played_s": 60.0,
         "estimate_error": {"nuwa": err_nuwa, "dashjs": err_dashjs},
         "queuing_delay_ms": {"p50": 10.0, "p95": p95, "mean": 10.0},
         "emulator": {"valid": True}}
    r = {"id": f"play-{trace}-{scheme}-q1000-s1-r{rep}", "kind": "play", "scheme": scheme,
         "queue_packets": 1000, "trace": {"name": trace, "family": family}, "valid": True,
         "metrics": m, "invalid_reasons": []}
    return Run(r, Path("/nonexistent"))


def test_spread_and_step_verdicts():
    sp = spread([1.0, 1.2, 1.4])
    assert sp is not None and (sp.mean, sp.lo, sp.hi, sp.n) == (pytest.approx(1.2), 1.0, 1.4, 3)
    assert spread([]) is None
    # ranges overlap: the difference is inside the spread
    st = step([([1.0, 1.2, 1.4], [1.3, 1.5, 1.6])])
    assert st is not None and st.delta == pytest.approx(0.2667, abs=1e-3)
    assert st.lo == pytest.approx(-0.1) and st.hi == pytest.approx(0.6)
    assert step_verdict(st, True).startswith("no difference")
    # ranges apart: a gain when higher is better, a cost when lower is better
    st2 = step([([1.0, 1.1, 1.2], [1.5, 1.6, 1.7])])
    assert step_verdict(st2, True).startswith("gain: Δ +0.50")
    assert step_verdict(st2, False).startswith("cost")
    # one run each on one trace: no spread to judge by
    assert "spread unknown" in step_verdict(step([([1.0], [2.0])]), True)
    # several traces with one run each: the per-trace differences disagree in sign
    assert step_verdict(step([([1.0], [1.5]), ([1.0], [0.8])]), True).startswith("no difference")
    assert step([([], [1.0])]) is None
    # one side with a single run: a difference outside B's spread is not claimed as a gain
    one_side = step_verdict(step([([1.0], [1.5, 1.6, 1.7])]), True)
    assert "spread unknown" in one_side and "gain" not in one_side


def test_ladder_section_per_family_and_headline():
    runs = []
    # 3G: grants help dash.js clearly (runs apart), Nuwa's ABR adds nothing beyond the noise
    for rep, (d, g, e, n, c) in enumerate([(0.5, 1.0, 1.1, 1.2, 0.9), (0.6, 1.1, 1.3, 1.1, 0.8),
                                           (0.55, 1.05, 1.2, 1.3, 0.85)], start=1):
        for scheme, q in (("dashjs", d), ("dashjs_grants", g), ("dashjs_nuwa_estimate", e),
                          ("nuwa", n), ("observe", c)):  # old name of nuwa_cubic
            runs.append(play("norway-hsdpa-bus-1", "3G", scheme, rep, qoe=q,
                             p95=40.0 if scheme in ("dashjs_grants", "dashjs_nuwa_estimate",
                                                    "nuwa") else 900.0))
    runs.append(play("mahimahi-verizon-lte-short", "LTE-Saturator", "dashjs", 1, qoe=1.0))
    runs.append(play("mahimahi-verizon-lte-short", "LTE-Saturator", "nuwa", 1, qoe=1.4))
    cells = Cells(runs)
    assert cells.schemes("play") == ["dashjs", "dashjs_grants", "dashjs_nuwa_estimate", "nuwa",
                                     "nuwa_cubic"]
    assert cells.values("play", "norway-hsdpa-bus-1", "dashjs", 1000, "err_used") == [0.3] * 3
    assert cells.values("play", "norway-hsdpa-bus-1", "nuwa", 1000, "err_used") == [0.1] * 3
    md = "\n".join(ladder_section(cells, 1000))
    assert "### Nuwa against dash.js's default" in md
    assert "1.200 (1.100–1.300, 3 runs)" in md  # nuwa's QoE on 3G: mean (min–max, runs)
    assert "0.550 (0.500–0.600, 3 runs)" in md
    grants = md.split("**dashjs → dashjs_grants**")[1].split("**")[0]
    row_3g = next(line for line in grants.splitlines() if line.startswith("| 3G"))
    assert "gain: Δ +0.500" in row_3g  # QoE
    assert "gain: Δ −860" in row_3g  # p95 queuing delay fell from 900 to 40 ms
    abr = md.split("**dashjs_nuwa_estimate → nuwa**")[1].split("**")[0]  # 3 runs each
    assert "| 3G | no difference" in abr
    cubic = md.split("**nuwa → nuwa_cubic**")[1].split("**")[0]
    assert "cost" in next(line for line in cubic.splitlines() if line.startswith("| 3G"))
    assert "| 4G |" not in grants  # no dashjs_grants run on the 4G trace: that family is skipped
    assert video_family("LTE-Lumos") == "4G" and video_family("5G-lowband") == "5G"


def test_video_qoe_target_not_met_inside_the_spread():
    from nuwa_lab.bench_report import compute_targets

    def target(nuwa: list[float], dashjs: list[float]):
        runs = [play("norway-hsdpa-bus-1", "3G", "nuwa", i, qoe=x) for i, x in enumerate(nuwa)]
        runs += [play("norway-hsdpa-bus-1", "3G", "dashjs", i, qoe=x)
                 for i, x in enumerate(dashjs)]
        t = compute_targets(Cells(runs), {"config": {}}, [])
        return next(x for x in t if x.name.startswith("Video: mean QoE"))

    noisy = target([0.65, 0.9, 1.06], [0.5, 0.58, 0.81])  # the smoke run's cell: means 0.87 / 0.63
    assert noisy.met is False and "no difference" in noisy.figure
    clear = target([1.2, 1.3, 1.25], [0.5, 0.6, 0.55])
    assert clear.met is True
