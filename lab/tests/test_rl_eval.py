"""rl_eval.py: the training environment's reward per 200 ms interval, from an emulator log."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.rl_eval import interval_rewards, load_agent

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def _log(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "emulator.log"
    p.write_text("# base timestamp: 1000\n" + "".join(f"{ln}\n" for ln in lines))
    return p


def test_rewards_follow_agent_reward_with_known_throughput_delay_and_loss(tmp_path: Path) -> None:
    agent = load_agent()
    lines: list[str] = []
    # Interval 0 [0, 200): one 1500-byte packet per ms, 10 ms queuing delay each.
    for t in range(0, 200):
        lines += [f"{t} + 1500", f"{t + 10} # 1500", f"{t + 10} - 1500 10"]
    # Interval 1 [200, 400): 100 arrivals of which 20 are refused, nothing leaves.
    for t in range(200, 300):
        lines.append(f"{t} + 1500")
        if t % 5 == 0:
            lines.append(f"{t} d 1500")
    lines.sort(key=lambda ln: int(ln.split()[0]))
    r = interval_rewards(_log(tmp_path, lines), 0, 400, agent)
    assert len(r) == 2
    # 190 departures fall in [10, 200) of interval 0 and 10 in interval 1 (depart 200..209).
    assert r[0] == pytest.approx(agent.reward(190 * 1500 * 8 / 0.2 / 1e6, 10.0, 0.0))
    assert r[1] == pytest.approx(agent.reward(10 * 1500 * 8 / 0.2 / 1e6, 10.0, 100.0 * 20 / 100))


def test_empty_range_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty range"):
        interval_rewards(_log(tmp_path, ["0 # 1500"]), 100, 100)
