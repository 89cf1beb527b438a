"""Replay the switch rule's early-probe evidence on a recorded ``./nuwa mix`` run (how the
rule's "competitor left" thresholds were chosen, fifteenth session; docs/BENCHMARKS.md).

The run's Nuwa server keeps each session's ``grants.jsonl`` (``logs-nuwa/``): every grant's
arrival time, echo RTT, echoed stamp, window and cumulative count in force. This feeds them to
:class:`nuwa_server.switch_policy.RuleSwitchPolicy` exactly as ``ConnectionSwitcher.on_grant``
does (queuing delay = RTT − the running minimum RTT, delivered = the rise of the cumulative
count), follows the run's real switches (the server's ``controller switch ... t_us=`` lines)
and, in each sender-driven stint, reports the first time :meth:`competitor_left` holds under a
given :class:`RuleConfig`, polled every 50 ms as the switcher does. A variant that would have
probed earlier than the run did cannot be followed past the run's own switch.

Usage: ``python -m nuwa_lab.mix.replay out/mix [--config '{"leave_recent_bins": 2}']``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nuwa_server.switch_policy import SENDER, RuleConfig, RuleSwitchPolicy
from nuwa_server.switcher import POLL_INTERVAL_US

from .run import switch_logs


def read_run(run_dir: Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]], float]:
    """The accepted grants of the run's Nuwa sessions (by arrival), its switches (t_us on the
    server's clock, mode) and the emulator's base (ms, same clock). Raises FileNotFoundError
    when the run has no grant logs (runs before the mix kept them) or no emulator summary."""
    files = sorted(run_dir.glob("logs-nuwa/**/grants.jsonl"))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no logs-nuwa/**/grants.jsonl")
    grants = [g for f in files for line in f.read_text().splitlines() if line
              for g in [json.loads(line)] if g.get("accepted")]
    grants.sort(key=lambda g: g["recv_time_us"])
    switches = sorted((t, m) for log in switch_logs(run_dir, ["nuwa"]).values()
                      for t, m in log if t is not None)
    base_ms = float(json.loads((run_dir / "emulator-summary.json").read_text())
                    ["base_timestamp_ms"])
    return grants, switches, base_ms


def first_evidence(grants: list[dict[str, Any]], switches: list[tuple[int, str]],
                   config: RuleConfig) -> list[tuple[int, int | None]]:
    """For each sender-driven stint of the run: (its start, the first time the early probe's
    evidence held, or None), µs on the server's clock (module doc)."""
    if not grants:
        return []
    p = RuleSwitchPolicy(grants[0]["recv_time_us"], config.validate())
    rtt_min: int | None = None
    last_cum: int | None = None
    k, next_poll = 0, 0
    out: list[tuple[int, int | None]] = []
    start: int | None = None
    first: int | None = None

    def close(t: int) -> None:
        nonlocal first
        if first is None and p.competitor_left(t):
            first = t
        assert start is not None
        out.append((start, first))

    for g in grants:
        t = int(g["recv_time_us"])
        while k < len(switches) and switches[k][0] <= t:
            ts, mode = switches[k]
            if p.mode == SENDER:
                close(ts)
            p.switched(ts, mode)  # type: ignore[arg-type]
            if p.mode == SENDER:
                start, first = ts, None
            k += 1
        qd = echo = None
        if g.get("rtt_us") is not None:
            rtt_min = g["rtt_us"] if rtt_min is None else min(rtt_min, g["rtt_us"])
            qd, echo = g["rtt_us"] - rtt_min, g.get("echo_send_time_us")
        cum = int(g["cum_in_force_bytes"])
        delivered = None if last_cum is None else max(0, cum - last_cum)
        last_cum = cum
        p.observe(t, g.get("window_in_force_bytes"), qd, echo, delivered)
        if t >= next_poll:
            next_poll = t + POLL_INTERVAL_US
            if p.mode == SENDER and first is None and p.competitor_left(t):
                first = t
    if p.mode == SENDER and start is not None:
        out.append((start, first))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print each stint's start and first evidence on the run's clock (s); 2 on bad input."""
    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.mix.replay", description=__doc__)
    ap.add_argument("run_dir", type=Path, help="a ./nuwa mix --out directory")
    ap.add_argument("--config", default="{}", help="RuleConfig fields as JSON")
    a = ap.parse_args(argv)
    try:
        config = RuleConfig(**json.loads(a.config)).validate()
        grants, switches, base_ms = read_run(a.run_dir)
    except (OSError, ValueError, TypeError, KeyError) as e:
        print(f"replay: {e}", file=sys.stderr)
        return 2

    def s(us: int | None) -> str:
        return "none" if us is None else f"{us / 1e6 - base_ms / 1e3:.1f} s"

    for start, first in first_evidence(grants, switches, config):
        print(f"stint from {s(start)}: evidence {s(first)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
