"""``./nuwa mix``: flows of several schemes through one emulated bottleneck (:mod:`nuwa_lab.mix`).

Example: ``./nuwa mix --flows nuwa,cubic --start-gap-s 5 --link-mbps 20 --queue-packets 1000
--duration 40 --json out/mix.json`` (end to end: real servers, emulator and receivers), or the
same with ``--sim`` (the sender-side simulator, :mod:`nuwa_lab.sendersim`, simulated time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from nuwa_server.config import SENDER_CCS

from ..emulator import TraceError, constant_rate_trace, load_trace
from ..load.procs import StartError

SWITCH_MODES = ("none", "rule", "dqn")
"""``--switch``: no switching, the rule-based policy (``nuwa_server.switch_policy``) or the
DQN (``nuwa_server.switch_dqn``, the rule its fallback)."""
MAX_TOTAL_MBPS = 20.0
"""End to end, the link (or the trace's mean rate) may not exceed this: the receivers,
servers and emulator must fit two cores."""


def build_parser() -> argparse.ArgumentParser:
    """The CLI (module doc); ``--help`` lists the options with units."""
    p = argparse.ArgumentParser(prog="nuwa mix", description=__doc__.split("\n")[0])
    p.add_argument("--flows", required=True,
                   help="comma-separated schemes, one per flow, in start order "
                   "(nuwa, nuwa_bbr, cubic, reno, bbr)")
    p.add_argument("--start-gap-s", type=float, default=0.0, help="flow i starts at i × this, s")
    p.add_argument("--stop-s", default=None,
                   help="comma-separated stop time per flow, s from the run's start (0: the "
                   "run's end), e.g. 0,30: the second flow leaves at 30 s; the JSON's "
                   "after_leave then gives the others' queuing delay after it (end to end only)")
    p.add_argument("--switch", choices=SWITCH_MODES, default="none",
                   help="controller switching for the Nuwa flows (default none)")
    p.add_argument("--switch-model", default=None,
                   help="--switch dqn: the Q-network's ONNX file (default: the checkout's "
                   "models/switch-dqn.onnx; unusable: the rule, logged)")
    p.add_argument("--switch-mode", choices=("unrestricted", "limited"),
                   default="unrestricted",
                   help="how a switch carries controller state (the server's --switch-mode; "
                   "unrestricted: window, RTT, min RTT and rate state; limited: connection-"
                   "level state only; end to end only)")
    p.add_argument("--switch-rule", default=None, metavar="JSON",
                   help="the switch rule's thresholds changed from their defaults (the "
                   "server's --switch-rule: a JSON object of RuleConfig fields, "
                   "server/nuwa_server/switch_policy.py), e.g. "
                   "'{\"probe_fail_min_samples\": null}'")
    p.add_argument("--sender-cc", choices=SENDER_CCS, default=SENDER_CCS[0],
                   help="the Nuwa flows' controller while sender-driven (the server's "
                   "--sender-cc; default cubic: aioquic's as shipped; cubic_hystart: Cubic with "
                   "RFC 9406's slow start)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trace", help="Mahimahi trace of the bottleneck")
    g.add_argument("--link-mbps", type=float, help="constant-rate bottleneck, Mbit/s")
    p.add_argument("--queue-packets", type=int, default=1000, help="drop-tail limit (1000)")
    p.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay each way (25)")
    p.add_argument("--loss", type=float, default=0.0,
                   help="random loss probability of each data packet at the bottleneck, in "
                   "[0, 0.5] (default 0; PBQ's Fig. 9-10 setting: 0.01 and 0.025); the "
                   "emulator's --loss, seeded with --seed; the simulator's loss_rate")
    p.add_argument("--duration", type=float, required=True, help="run length, s")
    p.add_argument("--json", required=True, help="write the result here")
    p.add_argument("--out", default="out/mix", help="run directory (logs) (default out/mix)")
    p.add_argument("--plot", default=None,
                   help="the figure (PNG): throughput per flow over time with the switches "
                   "marked, Jain's index over time (default: the --json path with .png)")
    p.add_argument("--sim", action="store_true",
                   help="the sender-side simulator instead of the emulator (simulated time)")
    p.add_argument("--seed", type=int, default=1,
                   help="--sim: seed of the start jitter; both: seed of the random loss")
    p.add_argument("--cc", default="{}", help="controller config JSON for the Nuwa receivers")
    # worker mode (internal)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--flow-schemes", help=argparse.SUPPRESS)
    p.add_argument("--flow-ports", help=argparse.SUPPRESS)
    p.add_argument("--flow-starts", help=argparse.SUPPRESS)
    p.add_argument("--flow-stops", help=argparse.SUPPRESS)
    return p


def validate(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Bad arguments exit 2 with a message naming the option."""
    from .run import SCHEME_SERVER_ARGS

    a.flow_list = [s.strip() for s in a.flows.split(",") if s.strip()]
    if not a.flow_list:
        p.error("--flows: no flows")
    if a.worker:
        return
    if a.trace is None and a.link_mbps is None:
        p.error("one of the arguments --trace --link-mbps is required")
    if not a.sim:
        bad = [s for s in a.flow_list if s not in SCHEME_SERVER_ARGS]
        if bad:
            p.error(f"--flows: unknown scheme(s) {', '.join(bad)}; known: "
                    f"{', '.join(SCHEME_SERVER_ARGS)}")
    if not (0 < a.duration <= 3600):
        p.error(f"--duration must be in (0, 3600] s, got {a.duration}")
    if a.start_gap_s < 0 or (len(a.flow_list) - 1) * a.start_gap_s >= a.duration:
        p.error("--start-gap-s must be >= 0 and start every flow before --duration")
    if a.switch_rule is not None:
        from nuwa_server.config import SessionConfig

        if a.switch == "none":
            p.error("--switch-rule needs --switch rule or dqn")
        try:
            SessionConfig(switch=a.switch, switch_rule=a.switch_rule).validate()
        except ValueError as exc:
            p.error(f"--switch-rule: {exc}")
    if a.sim and a.switch_mode != "unrestricted":
        p.error("--switch-mode: end to end only (the simulator switches unrestricted)")
    a.stop_list = [0.0] * len(a.flow_list)
    if a.stop_s is not None:
        if a.sim:
            p.error("--stop-s: end to end only (the simulator runs every flow to the end)")
        try:
            a.stop_list = [float(x) if x.strip() else 0.0 for x in a.stop_s.split(",")]
        except ValueError:
            p.error(f"--stop-s: not numbers: {a.stop_s!r}")
        if len(a.stop_list) != len(a.flow_list):
            p.error(f"--stop-s: {len(a.stop_list)} values for {len(a.flow_list)} flows")
        for i, stop in enumerate(a.stop_list):
            if stop != 0 and not (i * a.start_gap_s < stop < a.duration):
                p.error(f"--stop-s: flow {i} must stop after its start ({i * a.start_gap_s:g} "
                        f"s) and before --duration, or be 0; got {stop:g}")
    if a.link_mbps is not None and not (0 < a.link_mbps):
        p.error(f"--link-mbps must be > 0, got {a.link_mbps}")
    if a.queue_packets < 1:
        p.error(f"--queue-packets must be >= 1, got {a.queue_packets}")
    if not 0 <= a.loss <= 0.5:
        p.error(f"--loss must be in [0, 0.5], got {a.loss}")
    try:
        cc = json.loads(a.cc)
    except ValueError as e:
        p.error(f"--cc is not JSON: {e}")
    if not isinstance(cc, dict):
        p.error("--cc must be a JSON object")


def run_sim(a: argparse.Namespace) -> dict[str, Any]:
    """The same report from the sender-side simulator (``--sim``): its
    :func:`~nuwa_lab.sendersim.run.simulate` dict plus ``mode``/``switch``."""
    from ..sendersim.run import SimConfig, simulate

    trace = load_trace(a.trace) if a.trace else constant_rate_trace(a.link_mbps * 1e6)
    cfg = SimConfig(one_way_delay_ms=a.delay_ms, queue_packets=a.queue_packets,
                    start_gap_s=a.start_gap_s, duration_s=a.duration, seed=a.seed,
                    switch_model=a.switch_model, switch_rule=a.switch_rule,
                    sender_cc=a.sender_cc, loss_rate=a.loss)
    out = simulate(a.flow_list, trace, cfg, switch=a.switch)
    out.update({"mode": "sim", "switch": a.switch, "switch_rule": a.switch_rule,
                "sender_cc": a.sender_cc, "loss": a.loss,
                "duration_s": a.duration,
                "start_gap_s": a.start_gap_s, "queue_packets": a.queue_packets,
                "trace": str(a.trace) if a.trace else f"constant {a.link_mbps} Mbps",
                "errors": []})
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point: 0 on a valid run, 3 when the emulator could not keep time, 2 on bad
    arguments or a part that failed, 1 when a flow reported errors."""
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)
    if a.worker:
        from .worker import MixWorker

        asyncio.run(MixWorker(a).run())  # writes --json itself (MixWorker.run)
        return 0
    t0 = time.monotonic()
    try:
        if a.sim:
            result = run_sim(a)
        else:
            from ..emulator.trace import load_trace as _lt

            mean_mbps = (_lt(a.trace).mean_rate_bps / 1e6) if a.trace else a.link_mbps
            if mean_mbps > MAX_TOTAL_MBPS:
                p.error(f"the link's mean rate {mean_mbps:.1f} Mbit/s is over "
                        f"{MAX_TOTAL_MBPS:g} (two cores)")
            from .run import orchestrate

            result = orchestrate(a)
    except (StartError, TraceError, ValueError, KeyError) as e:
        print(f"mix: {e}", file=sys.stderr)
        return 2
    result["wall_s"] = round(time.monotonic() - t0, 1)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(result, indent=1, default=str) + "\n")
    from .plot import plot_mix

    try:
        figure = plot_mix(result, Path(a.plot) if a.plot else Path(a.json).with_suffix(".png"))
    except (OSError, ValueError) as e:  # the JSON is written; the figure is extra
        print(f"mix: no figure: {e}", file=sys.stderr)
    else:
        print(f"figure: {figure}")
    for i, f in enumerate(result["flows"]):
        print(f"flow {i} {f['scheme']}: {f['goodput_bps'] / 1e6:.2f} Mbit/s, share "
              f"{f['share']:.2f}, p95 queuing {f['queuing_delay_ms']['p95']} ms, starved "
              f"{f['starved_s']} s, switches {f.get('switches', 0)}")
    for left in result.get("after_leave", []):
        print(f"flow {left['i']} {left['scheme']} left at {left['leave_s']} s: " + "; ".join(
            f"flow {o['i']} {o['scheme']} p95 queuing {o['p95_ms_first_5s']} ms in the 5 s "
            f"after, {o['p95_ms_after_5s']} ms from then ({o['after_5s_s']} s)"
            for o in left["flows"]))
    emu = result.get("emulator") or {}
    print(f"utilization {result['utilization']:.3f}, Jain {result['jain_index']:.3f} "
          f"(last 20 s), {result['mode']}"
          + ("" if a.sim else f", emulator valid {emu.get('valid')}") + f" → {a.json}")
    if not a.sim and not emu.get("valid"):
        return 3
    return 1 if result["errors"] else 0
