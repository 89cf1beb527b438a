"""Replaying recorded switch-rule inputs (``data/switch-inputs-*.txt``: per accepted grant,
µs since the session's first grant: time, granted window bytes, queuing delay µs, echo µs;
``None`` where absent) through a fresh :class:`RuleSwitchPolicy`, asked every 50 ms as the
server's switcher asks it. Shared by test_monitor.py and test_packet_train.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nuwa_server.switch_policy import RuleConfig, RuleSwitchPolicy

POLL_US = 50_000


def read_switch_inputs(path: Path) -> list[tuple[int, int | None, int | None, int | None]]:
    """The recording's rows (time, window, queuing delay, echo); comments and blanks skipped."""
    rows: list[tuple[int, int | None, int | None, int | None]] = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        t, w, qd, echo = (None if x == "None" else int(x) for x in line.split())
        assert t is not None
        rows.append((t, w, qd, echo))
    return rows


def replay_switch_inputs(path: Path, config: RuleConfig | None = None,
                         answer: Callable[[int], tuple[int, float]] | None = None,
                         ) -> tuple[list[tuple[int, str]], int]:
    """Feed the recording to a fresh rule, polling every 50 ms; returns (the switches as
    (t µs, mode), the packet trains asked for). ``answer``: None replays the rule without
    trains (as ``nuwa_lab.mix.replay`` does); else the rule takes trains as the server's
    switcher does, and when it asks for one at t, ``answer(t)`` gives (the answer's time,
    its packets of others)."""
    rows = read_switch_inputs(path)
    p = RuleSwitchPolicy(rows[0][0], config)
    p.takes_trains = answer is not None  # as the server's switcher: the condition waits
    out: list[tuple[int, str]] = []
    due: list[tuple[int, float]] = []
    poll, asked = rows[0][0], 0
    for t, w, qd, echo in rows:
        while poll <= t:
            while due and due[0][0] <= poll:
                p.observe_train(*due.pop(0))
            if (d := p.decide(poll)) is not None:
                p.switched(poll, d)
                out.append((poll, d))
            elif answer is not None and p.train_due(poll):
                asked += 1
                due.append(answer(poll))
            poll += POLL_US
        p.observe(t, w, qd, echo)
    return out, asked
