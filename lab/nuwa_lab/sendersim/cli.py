"""``python -m nuwa_lab.sendersim``: run the sender-side simulator and write its JSON.

Example: ``python -m nuwa_lab.sendersim --flows cubic,reno --start-gap-s 5 --trace
traces/4G/mahimahi-tmobile-lte-short.mahi --duration 60 --json out/sim.json``. Prints one line
per flow and the link's figures; the JSON is :func:`.run.simulate`'s dict (docs/SENDERSIM.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from nuwa_lab.emulator import TraceError, constant_rate_trace, load_trace

from .run import SimConfig, simulate
from .schemes import schemes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line (``--help`` lists the options with units)."""
    p = argparse.ArgumentParser(prog="python -m nuwa_lab.sendersim", description=__doc__)
    p.add_argument("--flows", required=True,
                   help=f"comma-separated schemes, one per flow (known: {', '.join(schemes())})")
    link = p.add_mutually_exclusive_group(required=True)
    link.add_argument("--trace", type=Path, help="Mahimahi trace file (looped)")
    link.add_argument("--link-mbps", type=float, help="constant link rate, Mbit/s")
    p.add_argument("--start-gap-s", type=float, default=0.0, help="flow i starts at i × this, s")
    p.add_argument("--queue-packets", type=int, default=1000, help="drop-tail limit, packets")
    p.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay each way, ms")
    p.add_argument("--ack-every", type=int, default=2, help="receiver ACKs every N packets")
    p.add_argument("--duration", type=float, required=True, help="simulated time, s")
    p.add_argument("--loss", type=float, default=0.0,
                   help="random loss before the queue, probability per packet (0.01 = 1 %%)")
    p.add_argument("--pbq-model", help="pbq flows' ONNX model (default: models/pbq.onnx)")
    p.add_argument("--seed", type=int, default=1, help="seed of the start jitter")
    p.add_argument("--first-start-s", type=float, default=0.0,
                   help="the first flow starts this far into the trace, s")
    p.add_argument("--warmup-s", type=float, default=0.0,
                   help="utilization and queuing delay leave out this much after it, s")
    p.add_argument("--json", type=Path, required=True, help="write the result here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 on a usage error)."""
    a = parse_args(argv)
    names = [s.strip() for s in a.flows.split(",") if s.strip()]
    try:
        trace = load_trace(a.trace) if a.trace else constant_rate_trace(a.link_mbps * 1e6)
        cfg = SimConfig(one_way_delay_ms=a.delay_ms, queue_packets=a.queue_packets,
                        ack_every=a.ack_every, start_gap_s=a.start_gap_s,
                        duration_s=a.duration, seed=a.seed, first_start_s=a.first_start_s,
                        warmup_s=a.warmup_s, loss_rate=a.loss, pbq_model=a.pbq_model)
        t0 = time.process_time()
        out = simulate(names, trace, cfg)
    except (TraceError, ValueError) as exc:
        print(f"sendersim: {exc}", file=sys.stderr)
        return 2
    cpu_s = time.process_time() - t0
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(out, indent=1) + "\n")
    for i, f in enumerate(out["flows"]):
        print(f"flow {i} {f['scheme']}: {f['goodput_bps'] / 1e6:.2f} Mbit/s, share "
              f"{f['share']:.2f}, p95 queuing {f['queuing_delay_ms']['p95']} ms, starved "
              f"{f['starved_s']} s")
    print(f"utilization {out['utilization']:.3f}, Jain {out['jain_index']:.3f} (last 20 s), "
          f"{cpu_s:.1f} s CPU (this process) → {a.json}")
    return 0
