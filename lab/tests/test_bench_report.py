"""Target verdicts of the benchmark report, on synthetic run records."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.bench_report import Cells, Run, compute_targets, fmt, main, throughput_mbps

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def rec(kind: str, trace: str, family: str, scheme: str, q: int, *, valid: bool = True,
        **m: object) -> Run:
    metrics = {
        "utilization": m.get("util", 0.95),
        "queuing_delay_ms": {"mean": 1.0, "p50": 1.0, "p95": m.get("p95", 10.0)},
        "loss_rate": m.get("loss", 0.0),
        "delivered_bytes": m.get("delivered", 1_000_000),
        "window_s": [2.0, 62.0],
        "qd_error_ms": {"median": m.get("qd_med", 1.0), "p95": m.get("qd_p95", 5.0)},
        "emulator": {"valid": valid},
        "qoe_per_chunk": m.get("qoe"),
        "rebuffer_s": m.get("rebuf_s"),
        "media_played_s": 60.0,
        "estimate_error": {"nuwa": m.get("err_nuwa"), "dashjs": m.get("err_dashjs")},
    }
    r = {"id": f"{kind}-{trace}-{scheme}-q{q}", "kind": kind, "scheme": scheme,
         "queue_packets": q, "trace": {"name": trace, "family": family}, "valid": valid,
         "metrics": metrics, "invalid_reasons": [] if valid else ["lateness"]}
    return Run(r, Path("/nonexistent"))


def by_name(targets, prefix):
    return next(t for t in targets if t.name.startswith(prefix))


def test_deep_queue_targets_met_and_missed():
    runs = [
        rec("bulk", "norway-hsdpa-bus-1", "3G", "nuwa", 1000, util=0.97, p95=30),
        rec("bulk", "norway-hsdpa-bus-1", "3G", "cubic", 1000, util=1.0, p95=3000),
        rec("bulk", "mahimahi-tmobile-lte-short", "LTE-Saturator", "nuwa", 1000, util=0.92,
            p95=120),
        rec("bulk", "mahimahi-tmobile-lte-short", "LTE-Saturator", "cubic", 1000, util=0.95,
            p95=900),
        rec("bulk", "mahimahi-tmobile-lte-short", "LTE-Saturator", "oracle", 1000, util=0.8,
            p95=80),
        # an invalid run must not count, however good it looks
        rec("bulk", "lumos-vzw-lte-driving-50087", "LTE-Lumos", "nuwa", 1000, util=1.0, p95=1,
            valid=False),
    ]
    t = compute_targets(Cells(runs), {"config": {"target_delay_ms": 20}}, [])
    vs_cubic = by_name(t, "Deep queue vs cubic")
    assert vs_cubic.figure.startswith("1/2") and vs_cubic.met is False  # 900/120 < 10×
    assert by_name(t, "Deep queue, every trace").met is True
    assert by_name(t, "Deep queue: p95 queuing delay ≤ 50 ms").met is True  # Lumos run invalid
    oracle = by_name(t, "Deep queue: p95 ≤ 1.3× oracle")
    assert oracle.met is False and "1.50×" in oracle.figure
    assert by_name(t, "No ratchet").met is None


def test_shallow_video_and_ratchet_targets():
    five = ["mahimahi-tmobile-lte-short", "mahimahi-verizon-lte-short", "norway-hsdpa-bus-1",
            "mnwild-tmobile-5g-sa-lowband-walking-r20061", "lumos-vzw-lte-driving-50087"]
    runs = []
    for i, t in enumerate(five):
        runs.append(rec("bulk", t, "x", "nuwa", 50, delivered=1_000_000 + (i < 3) * 10,
                        loss=0.01))
        runs.append(rec("bulk", t, "x", "cubic", 50, delivered=1_000_000 - (i >= 3) * -10))
        runs.append(rec("play", t, "x", "nuwa", 1000, qoe=1.2, rebuf_s=0.0, err_nuwa=0.10))
        runs.append(rec("play", t, "x", "dashjs", 1000, qoe=1.0, rebuf_s=1.0, err_dashjs=0.30))
    ratchet = [rec("ratchet", "constant-10mbps", "constant", "nuwa", 1000, p95=31.0)]
    ratchet[0].rec.update(duration_s=120, warmup_s=60)
    t = compute_targets(Cells(runs), {"config": {"target_delay_ms": 20}}, ratchet)
    assert by_name(t, "Shallow queue: loss").met is True
    thr = by_name(t, "Shallow queue: throughput")
    assert thr.figure.startswith("3/5") and thr.met is True
    # With runs missing, the verdict is decided only once they could not change it.
    def shallow_thr(keep: list[str], nuwa_wins: set[str]) -> bool | None:
        rs = []
        for t in keep:
            won = t in nuwa_wins
            rs.append(rec("bulk", t, "x", "nuwa", 50, delivered=1_000_010 if won else 999_990))
            rs.append(rec("bulk", t, "x", "cubic", 50, delivered=1_000_000))
        targets = compute_targets(Cells(rs), {"config": {}}, [])
        return by_name(targets, "Shallow queue: throughput").met
    assert shallow_thr(five[:4], set()) is False  # 0 of 4, the fifth cannot make it 3
    assert shallow_thr(five[:4], set(five[:2])) is None  # 2 of 4: the fifth decides
    assert shallow_thr(five[:3], set(five[:3])) is True  # 3 already
    assert shallow_thr(five[:2], set()) is None  # 0 of 2, three unmeasured could still make 3
    assert by_name(t, "No ratchet").met is False  # 31 > 20 + 10
    assert by_name(t, "Video: Nuwa's estimate median error").met is True
    assert by_name(t, "Video: Nuwa's estimate error ≤ half").met is True  # 10% ≤ 15%
    assert by_name(t, "Video: mean QoE").met is True  # 1.2 ≥ 1.1
    assert by_name(t, "Video: rebuffer").met is True
    assert by_name(t, "Qd estimate").met is True


def test_helpers_and_cli_error(tmp_path):
    assert throughput_mbps({"window_s": [0.0, 10.0], "delivered_bytes": 12_500_000}) == 10.0
    assert throughput_mbps({"window_s": [5.0, 5.0], "delivered_bytes": 1}) is None
    assert fmt(None) == "–" and fmt(0.1234, 1, pct=True) == "12.3%"
    with pytest.raises(SystemExit, match="bench-index.json"):
        main(["--bench-dir", str(tmp_path)])


def test_td_series_from_the_page_log_and_its_plot(tmp_path):
    import json

    from nuwa_lab.bench_report import plot_td, td_series

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "page.json").write_text(json.dumps(
        {"recv_us": [1_000_000, 1_001_000],
         "target_delay_ms": [[1_000_000, 25.0], [3_500_000, 61.5]]}))
    r = Run({"id": "x"}, run_dir)
    assert td_series(r) == ([0.0, 2.5], [25.0, 61.5])
    assert td_series(Run({"id": "y"}, tmp_path / "missing")) is None
    (run_dir / "page.json").write_text(json.dumps({"recv_us": [1], "target_delay_ms": []}))
    assert td_series(r) is None  # an old page log, or a pinned Td, has nothing to plot
    out = tmp_path / "td.png"
    plot_td([("4G", "t", ([0.0, 2.5], [25.0, 61.5]))], out)
    assert out.stat().st_size > 1000


def test_signal_series_bins_raw_and_rule_qd_per_second_and_plots(tmp_path):
    import json

    from nuwa_lab.bench_report import plot_signal, signal_series

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # second 0: 20 frames, raw 0..19 ms, rule 0; second 1: 20 frames, raw 100 ms, rule 40 ms
    recv = [1_000_000 + i * 50_000 for i in range(40)]
    raw = [float(i) for i in range(20)] + [100.0] * 20
    rule = [0.0] * 20 + [40.0] * 20
    (run_dir / "page.json").write_text(json.dumps(
        {"recv_us": recv, "raw_qd_ms": raw, "rule_qd_ms": rule,
         "target_delay_ms": [[1_000_000, 25.0], [2_200_000, 30.0]]}))
    ser = signal_series(Run({"id": "x"}, run_dir))
    assert ser == {"t_s": [0.0, 1.0], "raw_p95_ms": [18.0, 100.0], "rule_p95_ms": [0.0, 40.0],
                   "td_ms": [25.0, 25.0]}
    # a page log from before rule_qd_ms was logged has nothing to plot
    (run_dir / "page.json").write_text(json.dumps({"recv_us": recv, "raw_qd_ms": raw}))
    assert signal_series(Run({"id": "x"}, run_dir)) is None
    out = tmp_path / "sig.png"
    plot_signal([("4G", "t", {"t_s": [0.0, 1.0], "raw_p95_ms": [18.0, 100.0],
                              "rule_p95_ms": [0.0, 40.0], "td_ms": [25.0, 25.0]})], out)
    assert out.stat().st_size > 1000
