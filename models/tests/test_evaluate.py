"""The evaluation table's summary (evaluate.family_table) on hand-made rows."""

from nuwa_rl.evaluate import FIXED_KS, family_table


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
