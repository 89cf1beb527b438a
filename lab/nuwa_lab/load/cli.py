"""Load test (issue 7, item 7): many Nuwa receivers against one server process
through one emulated bottleneck. The command line (:mod:`nuwa_lab.load` module doc)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from .procs import StartError
from .run import orchestrate
from .worker import Worker


def build_parser() -> argparse.ArgumentParser:
    """The CLI (module doc)."""
    p = argparse.ArgumentParser(prog="nuwa load", description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=20, help="concurrent sessions (default 20)")
    p.add_argument("--duration", type=float, default=60.0, help="load duration, s (default 60)")
    p.add_argument("--json", help="write the result here")
    p.add_argument("--out", default="out/load", help="run directory (logs) (default out/load)")
    p.add_argument("--mode", choices=("bulk", "paced"), default="bulk")
    p.add_argument(
        "--rate-mbps",
        type=float,
        default=1.0,
        help="paced: per-session video bitrate, Mbit/s (default 1)",
    )
    p.add_argument("--segment-s", type=float, default=2.0, help="paced: segment duration, s")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--link-mbps",
        type=float,
        help="constant-rate bottleneck, Mbit/s "
        "(default: 1.2 Mbit/s per session in bulk, 1.5 × rate per session paced)",
    )
    g.add_argument("--trace", help="Mahimahi trace for the bottleneck instead")
    p.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay each way (25)")
    p.add_argument("--queue-packets", type=int, default=1000, help="drop-tail limit (1000)")
    p.add_argument("--workers", type=int, default=1, help="load client processes (default 1)")
    p.add_argument(
        "--fair-from-s",
        type=float,
        default=10.0,
        help="goodput and fairness from this time on, s (default 10)",
    )
    p.add_argument("--cc", default="{}", help="controller config JSON for every receiver")
    p.add_argument(
        "--scheme",
        choices=("nuwa", "cubic", "reno", "bbr", "pbq"),
        default="nuwa",
        help="the server's --cc (default nuwa: grants bind; others: the receivers still "
        "grant, the server's sender-side controller governs)",
    )
    p.add_argument("--profile", action="store_true", help="run the server under py-spy")
    p.add_argument(
        "--server-logs",
        action="store_true",
        help="server per-session logs (frames, grants) in OUT/server (costs CPU)",
    )
    # worker mode (internal)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--connect", help=argparse.SUPPRESS)
    p.add_argument("--id-base", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    return p


def validate(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Bad arguments exit 2 with a message naming the option."""
    if a.sessions < 1 or a.sessions > 1000:
        p.error(f"--sessions must be in [1, 1000], got {a.sessions}")
    if not (a.duration > 0) or a.duration > 3600:
        p.error(f"--duration must be in (0, 3600] s, got {a.duration}")
    if not (a.rate_mbps > 0):
        p.error(f"--rate-mbps must be > 0, got {a.rate_mbps}")
    if not (a.segment_s > 0):
        p.error(f"--segment-s must be > 0, got {a.segment_s}")
    if a.link_mbps is not None and not (a.link_mbps > 0):
        p.error(f"--link-mbps must be > 0, got {a.link_mbps}")
    if a.workers < 1 or a.workers > a.sessions:
        p.error(f"--workers must be in [1, --sessions], got {a.workers}")
    if not a.worker and not (0 <= a.fair_from_s < a.duration):
        p.error(f"--fair-from-s must be in [0, --duration), got {a.fair_from_s}")
    try:
        cc = json.loads(a.cc)
    except ValueError as e:
        p.error(f"--cc is not JSON: {e}")
    if not isinstance(cc, dict):
        p.error("--cc must be a JSON object")
    if a.worker and not a.connect:
        p.error("--worker needs --connect")
    if not a.worker and a.link_mbps is None and a.trace is None:
        a.link_mbps = a.sessions * (1.2 if a.mode == "bulk" else 1.5 * a.rate_mbps)


def main(argv: list[str] | None = None) -> int:
    """Entry point (module doc)."""
    p = build_parser()
    a = p.parse_args(argv)
    validate(p, a)
    if a.worker:
        res = asyncio.run(Worker(a).run())
        Path(a.json).write_text(json.dumps(res))
        return 0
    try:
        result = orchestrate(a)
    except StartError as e:
        print(f"load: {e}", file=sys.stderr)
        return 2
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(result, indent=1, default=str))
    g = result["goodput_bps"]
    line = (
        f"load: {result['sessions']} sessions {a.duration:g} s {a.mode}, "
        f"link {result.get('link_bps', 0) / 1e6:.1f} Mbps: "
        f"errors {len(result['errors'])}, goodput {g['total'] / 1e6:.2f} Mbps "
        f"(min/max per session {g['min'] / 1e6:.2f}/{g['max'] / 1e6:.2f}), "
        f"Jain {result['jain_index']:.3f}, "
        f"server peak RSS {(result['server']['peak_rss_kb'] or 0) / 1024:.1f} MiB, "
        f"server CPU {100 * (result['server']['cpu_share_of_one_core'] or 0):.0f}% of a core"
    )
    if a.mode == "paced":
        s = result["segments"]
        line += f", segments late {s['late']}/{s['count']}"
    print(line)
    for err in result["errors"][:10]:
        print(f"  error: {err}")
    return 0 if result["ok"] else 1
