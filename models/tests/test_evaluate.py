"""The evaluation table's summary (evaluate.family_table) on hand-made rows."""

from nuwa_rl.evaluate import FIXED_KS, eval_traces, family_table


def _row(family: str, rewards: dict[str, float]) -> dict[str, object]:
    def pol(r: float) -> dict[str, float]:
        return {"reward": r, "utilization": 0.9, "qd_mean_ms": 20.0, "qd_p95_ms": 30.0, "loss_pct": 0.0}
    return {"family": family, **{p: pol(r) for p, r in rewards.items()}}


def test_family_summary_gives_best_worst_hindsight_and_the_target_lines() -> None:
    ks = [f"k={k:g}" for k in FIXED_KS]
    # Two traces: k=1 best on the first, the largest k on the second; the agent matches k=1.
    a = {k: 2.0 - 0.1 * i for i, k in enumerate(ks)} | {"rl": 2.0}
    b = {k: 1.0 + 0.1 * i for i, k in enumerate(ks)} | {"rl": 1.0}
    md = family_table({"rows": [_row("4G", a), _row("4G", b)]})
    # Per-k family means are all 1.5 (ties: the first k is both best and worst).
    assert "| 4G | +0.000 (k=1) | +0.000 (k=1) | +0.0 |" in md
    # Hindsight picks k=1 on trace a (2.0) and the last k on trace b: mean above 1.5.
    hindsight = (2.0 + 1.0 + 0.1 * (len(ks) - 1)) / 2
    assert f"{100 * (hindsight - 1.5) / 1.5:+.1f} |" in md
    assert "Within 5 % of the best fixed k on every family: yes" in md
    assert "| 4G (2) | k=7 | 1.500 |" in md


def test_eval_traces_include_the_new_york_recordings(monkeypatch) -> None:
    """Issue 14: the ten New York City recordings are in the evaluation's trace list."""
    monkeypatch.delenv("NUWA_TRACE_DIRS", raising=False)
    names = {(family, p.name) for family, p in eval_traces()}
    nyc = {n for n in names if n[1].startswith("nyc20")}
    assert len(nyc) == 10 and len(names) >= 18
    assert ("3G", "nyc2018-unknownop-3g-subway-cross.mahi") in nyc
    assert ("4G", "nyc2019-unknownop-lte-walking-3201711.mahi") in nyc


def test_evaluation_through_ray_equals_the_serial_run() -> None:
    """Issue 16 item 5: each trace's episodes are one Ray task; the rows (every fixed k and the
    shipped agent, 30 intervals on two traces) equal those of one episode running them in turn
    in this process, in the traces' order, with a changed controller setting carried to the
    workers (train.py --cc changes sim.ENV_CC_CONFIG in the caller only)."""
    import ray

    from nuwa_rl import evaluate, sim

    traces = [t for t in eval_traces() if t[1].name in (
        "mahimahi-tmobile-lte-short.mahi", "norway-hsdpa-bus-1.mahi")]
    assert len(traces) == 2
    model = sim.REPO_ROOT / "models" / "nuwa-rl.onnx"
    saved = dict(sim.ENV_CC_CONFIG)
    sim.ENV_CC_CONFIG["sensitivity_ms"] = 40
    try:
        evaluate.init_ray(num_cpus=2)
        try:
            spread = evaluate.evaluate(model, steps=30, traces=traces)
        finally:
            ray.shutdown()
        serial = evaluate.evaluate(model, steps=30, traces=traces, serial=True)
        sim.ENV_CC_CONFIG.clear()
        sim.ENV_CC_CONFIG.update(saved)
        default = evaluate.evaluate(None, steps=30, traces=traces[:1], serial=True)
    finally:
        sim.ENV_CC_CONFIG.clear()
        sim.ENV_CC_CONFIG.update(saved)
    assert [r["trace"] for r in spread["rows"]] == [t[1].name for t in traces]
    assert spread == serial
    assert {"rl", "k=1", "k=9"} <= set(spread["rows"][0])
    assert spread["rows"][0]["k=5"] != default["rows"][0]["k=5"]  # the setting reached the workers
