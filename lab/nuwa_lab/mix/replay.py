"""Replay the switch rule's early-probe evidence on a recorded ``./nuwa mix`` run (how the
rule's "competitor left" thresholds were chosen, fifteenth session; docs/BENCHMARKS.md).

The run's Nuwa server keeps each session's ``grants.jsonl`` (``logs-nuwa/``): every grant's
arrival time, echo RTT, echoed stamp, window and cumulative count in force. This feeds them
through the server's own ``ConnectionSwitcher.on_grant`` to a
:class:`nuwa_server.switch_policy.RuleSwitchPolicy` of a given :class:`RuleConfig`, follows
the run's real switches (the server's ``controller switch ... t_us=`` lines) and, in each
sender-driven stint, reports the first time :meth:`competitor_left` holds, polled every 50 ms
as the switcher does. A variant that would have probed earlier than the run did cannot be
followed past the run's own switch.

``--first`` replays the first detection instead (fortieth session): when the given rule would
first have moved the flow to sender-driven control, against the run's own first switch; on a
``./nuwa mix`` run (times on the emulator's clock) or, since the forty-sixth session, on any run
whose Nuwa server kept ``server/*/grants.jsonl`` (``./nuwa play``, ``./nuwa bulk``, bench runs;
times from the first grant): a lone flow's run replayed this way says whether a rule variant
would have switched it with no competitor there.

``--probes`` replays the probes instead (session 17, "A probe next to a deep queue" in
``switch_policy.py``): in each probe back to receiver-driven, when the given rule would have
sent the flow back to sender-driven (its verdict or the first detection, polled every 50 ms),
against when the run did. It reads a ``./nuwa mix`` run (``logs-nuwa/``) or a ``./nuwa play
--competitor ... --switch rule`` run (``server/``), the switches from the sessions' own
``events.jsonl``.

Usage: ``python -m nuwa_lab.mix.replay out/mix [--config '{"leave_recent_bins": 2}']``;
``python -m nuwa_lab.mix.replay --first out/mix [--config '{"min_samples": 8}']``;
``python -m nuwa_lab.mix.replay --probes out/play-X [--config '{"probe_fail_min_samples":
null}']``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from nuwa_server.config import SessionConfig
from nuwa_server.grants import GrantDecision
from nuwa_server.protocol import Grant
from nuwa_server.switch_policy import RECEIVER, SENDER, RuleConfig, RuleSwitchPolicy
from nuwa_server.switcher import POLL_INTERVAL_US, ConnectionSwitcher

from .run import switch_logs


def _accepted_grants(files: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """The accepted grants of these ``grants.jsonl`` files as (session, row), by arrival."""
    grants = [(f.parent.name, g) for f in files for line in f.read_text().splitlines()
              if line for g in [json.loads(line)] if g.get("accepted")]
    grants.sort(key=lambda sg: sg[1]["recv_time_us"])
    return grants


def _switcher(grants: list[tuple[str, dict[str, Any]]],
              config: RuleConfig) -> tuple[ConnectionSwitcher, RuleSwitchPolicy]:
    """A switcher with ``config``'s rule, from the first grant's arrival."""
    t0 = int(grants[0][1]["recv_time_us"])
    sw = ConnectionSwitcher(SessionConfig(switch="rule").validate(), t0)
    p = RuleSwitchPolicy(t0, config.validate())
    sw.policy = p
    return sw, p


def _feed(sw: ConnectionSwitcher, sessions: dict[str, SimpleNamespace], name: str,
          g: dict[str, Any]) -> None:
    """One logged grant of session ``name`` through :meth:`ConnectionSwitcher.on_grant`, the
    session's min RTT kept as ``NuwaSession.on_datagram`` keeps it."""
    s = sessions.setdefault(name, SimpleNamespace(name=name, rtt_min_us=None))
    rtt = g.get("rtt_us")
    if rtt is not None and (s.rtt_min_us is None or rtt < s.rtt_min_us):
        s.rtt_min_us = rtt
    grant = Grant(g.get("grant_seq") or 0, g.get("receiver_time_us") or 0,
                  g.get("cum_received_bytes") or 0, g.get("window_bytes") or 0,
                  g.get("echo_send_time_us") or 0, g.get("echo_hold_us") or 0)
    sw.on_grant(s, GrantDecision(True, g.get("reason", "ok"), grant,  # type: ignore[arg-type]
                                 int(g["window_in_force_bytes"]),
                                 int(g["cum_in_force_bytes"]), rtt), int(g["recv_time_us"]))


def read_run(run_dir: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[int, str]],
                                     float]:
    """The accepted grants of the run's Nuwa sessions as (session, row), by arrival; its
    switches (t_us on the server's clock, mode); the emulator's base (ms, same clock). Raises
    FileNotFoundError when the run has no grant logs (runs before the mix kept them) or no
    emulator summary."""
    files = sorted(run_dir.glob("logs-nuwa/**/grants.jsonl"))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no logs-nuwa/**/grants.jsonl")
    grants = _accepted_grants(files)
    switches = sorted((t, m) for log in switch_logs(run_dir, ["nuwa"]).values()
                      for t, m in log if t is not None)
    base_ms = float(json.loads((run_dir / "emulator-summary.json").read_text())
                    ["base_timestamp_ms"])
    return grants, switches, base_ms


def first_evidence(grants: list[tuple[str, dict[str, Any]]], switches: list[tuple[int, str]],
                   config: RuleConfig) -> list[tuple[int, int | None]]:
    """For each sender-driven stint of the run: (its start, the first time the early probe's
    evidence held, or None), µs on the server's clock (module doc). The grants go through
    :meth:`ConnectionSwitcher.on_grant` itself, each session's min RTT kept as
    ``NuwaSession.on_datagram`` keeps it."""
    if not grants:
        return []
    sw, p = _switcher(grants, config)
    sessions: dict[str, SimpleNamespace] = {}
    k, next_poll = 0, 0
    out: list[tuple[int, int | None]] = []
    start: int | None = None
    first: int | None = None
    for name, g in grants:
        t = int(g["recv_time_us"])
        while k < len(switches) and switches[k][0] <= t:
            ts, mode = switches[k]
            if p.mode == SENDER:
                if first is None and p.competitor_left(ts):
                    first = ts
                assert start is not None
                out.append((start, first))
            p.switched(ts, mode)  # type: ignore[arg-type]
            if p.mode == SENDER:
                start, first = ts, None
            k += 1
        _feed(sw, sessions, name, g)
        if t >= next_poll:
            next_poll = t + POLL_INTERVAL_US
            if p.mode == SENDER and first is None and p.competitor_left(t):
                first = t
    if p.mode == SENDER and start is not None:
        out.append((start, first))
    return out


def first_detection(grants: list[tuple[str, dict[str, Any]]],
                    config: RuleConfig) -> tuple[int | None, dict[str, float | int]]:
    """When ``config``'s rule would first have moved the run's flow to sender-driven control
    (the first detection, :meth:`RuleSwitchPolicy.competitor_evidence` after Y and the dwell),
    polled every 50 ms from the first grant as the switcher polls, µs on the server's clock,
    with the rule's evidence then (None and {} when it never would). The grants go through
    :meth:`ConnectionSwitcher.on_grant`; compare it only with the run's own first switch (a
    run is not followed past it)."""
    if not grants:
        return None, {}
    sw, p = _switcher(grants, config)
    sessions: dict[str, SimpleNamespace] = {}
    next_poll = 0
    for name, g in grants:
        t = int(g["recv_time_us"])
        _feed(sw, sessions, name, g)
        if t >= next_poll:
            next_poll = t + POLL_INTERVAL_US
            in_mode = t - p.since_us
            if (p.mode == RECEIVER and in_mode >= max(p.config.hold_us, p.config.min_dwell_us)
                    and p.competitor_evidence(t)):
                return t, p.evidence()
    return None, {}


def read_sessions(run_dir: Path) -> tuple[list[tuple[str, dict[str, Any]]],
                                          list[tuple[int, str]]]:
    """The accepted grants of a run's Nuwa sessions (``logs-nuwa/`` of a mix, ``server/`` of
    a play run) as (session, row) by arrival, and their switches (t_us on the server's
    clock, mode) from the sessions' ``events.jsonl``. Raises FileNotFoundError without grant
    logs."""
    files = sorted([*run_dir.glob("logs-nuwa/*/grants.jsonl"),
                    *run_dir.glob("server/*/grants.jsonl")])
    if not files:
        raise FileNotFoundError(f"{run_dir}: no logs-nuwa/*/grants.jsonl or server/*/grants.jsonl")
    grants = _accepted_grants(files)
    switches = sorted((int(e["t_us"]), str(e["to_mode"])) for f in files
                      if (f.parent / "events.jsonl").exists()
                      for line in (f.parent / "events.jsonl").read_text().splitlines()
                      if line for e in [json.loads(line)] if e.get("event") == "switch")
    return grants, switches


def probe_ends(grants: list[tuple[str, dict[str, Any]]], switches: list[tuple[int, str]],
               config: RuleConfig) -> list[tuple[int, int | None, int | None]]:
    """For each probe back to receiver-driven in the run: (its start, when the run switched
    back to sender-driven or None, when ``config``'s rule would have: its verdict
    (:meth:`RuleSwitchPolicy.probe_failed`) or the first detection, polled every 50 ms, or
    None), µs on the server's clock. The grants go through
    :meth:`ConnectionSwitcher.on_grant`; the run's own switches are followed."""
    out: list[tuple[int, int | None, int | None]] = []
    if not grants:
        return out
    sw, p = _switcher(grants, config)
    sessions: dict[str, SimpleNamespace] = {}
    k, next_poll = 0, 0
    replayed: int | None = None

    def on_probe() -> bool:
        return p.mode == RECEIVER and p._probing_since_us is not None

    def would_end(t: int) -> bool:
        return p.probe_failed(t) or (t - p.since_us >= p.config.hold_us
                                     and p.competitor_evidence(t))

    def follow_switches(until_us: float) -> None:
        nonlocal k, replayed
        while k < len(switches) and switches[k][0] <= until_us:
            ts, mode = switches[k]
            if mode == SENDER and on_probe():
                if replayed is None and would_end(ts):  # the server polls between grants
                    replayed = ts
                out.append((p.since_us, ts, replayed))
            p.switched(ts, mode)  # type: ignore[arg-type]
            replayed = None
            k += 1

    for name, g in grants:
        t = int(g["recv_time_us"])
        follow_switches(t)
        _feed(sw, sessions, name, g)
        if t >= next_poll:
            next_poll = t + POLL_INTERVAL_US
            if on_probe() and replayed is None and would_end(t):
                replayed = t
    follow_switches(float("inf"))  # switches after the last grant
    if on_probe():
        out.append((p.since_us, None, replayed))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print each stint's start and first evidence on the run's clock (s); 2 on bad input."""
    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.mix.replay", description=__doc__)
    ap.add_argument("run_dir", type=Path, help="a ./nuwa mix --out directory (--probes: or a "
                    "./nuwa play --competitor --switch rule --out directory)")
    ap.add_argument("--config", default="{}", help="RuleConfig fields as JSON")
    ap.add_argument("--probes", action="store_true",
                    help="replay each probe back to receiver-driven (module doc)")
    ap.add_argument("--first", action="store_true",
                    help="when the rule would first have switched to sender-driven, against "
                    "the run's own first switch (module doc)")
    a = ap.parse_args(argv)
    try:
        config = RuleConfig(**json.loads(a.config)).validate()
        if a.probes or (a.first and not any(a.run_dir.glob("logs-nuwa/**/grants.jsonl"))):
            grants, switches = read_sessions(a.run_dir)
            base_ms = float(grants[0][1]["recv_time_us"]) / 1e3 if grants else 0.0
        else:
            grants, switches, base_ms = read_run(a.run_dir)
    except (OSError, ValueError, TypeError, KeyError) as e:
        print(f"replay: {e}", file=sys.stderr)
        return 2
    if a.probes:
        t0 = int(grants[0][1]["recv_time_us"]) if grants else 0

        def rel(us: int | None) -> str:
            return "none" if us is None else f"{(us - t0) / 1e6:.1f} s"

        for start, end, replayed in probe_ends(grants, switches, config):
            print(f"probe from {rel(start)}: the run went back at {rel(end)}, this rule at "
                  f"{rel(replayed)}")
        return 0

    def s(us: int | None) -> str:
        return "none" if us is None else f"{us / 1e6 - base_ms / 1e3:.1f} s"

    if a.first:
        at, evidence = first_detection(grants, config)
        run_at = next((t for t, m in switches if m == SENDER), None)
        print(f"first detection: this rule at {s(at)} {evidence}; the run at {s(run_at)}")
        return 0

    for start, first in first_evidence(grants, switches, config):
        print(f"stint from {s(start)}: evidence {s(first)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
