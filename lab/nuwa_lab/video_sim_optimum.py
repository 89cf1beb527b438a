"""The offline optimum of each simulated playback (issue 15), for ``./nuwa video-sim --json``.

Each cell of the simulator's JSON (e2e/src/cli-video-sim.ts) names its trace, the offset it
started at (ms into the trace), the chunks that began playing and the start-up. The optimum
is abr_optimum's DP on the same capacity: the trace's delivery opportunities from that offset
on (looped, as Mahimahi and the simulator's link do), the same content, start-up and one-way
delay. Cells with the same (trace, offset, chunks, start-up) share one DP.

Prints, per trace and variant, the mean QoE, the mean optimum and QoE ÷ optimum (of the
means), then the same over all traces; with ``--out`` writes the cells with ``optimum``
added. SIMULATED: the capacity is the trace, not an emulator's log.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from .abr_optimum import RUN_RESOLUTION_MS, load_ladder, run_optimum

REPO = Path(__file__).resolve().parents[2]


def opportunities_from(trace_path: Path, start_ms: int, span_ms: int) -> list[int]:
    """Delivery opportunities (ms after ``start_ms``) over ``span_ms``, the trace looped.

    Raises ValueError on an empty trace.
    """
    ts = [int(x) for x in trace_path.read_text().split()]
    if not ts or ts[-1] <= 0:
        raise ValueError(f"{trace_path}: empty trace")
    period = ts[-1]
    s = start_ms % period
    out: list[int] = []
    loop = 0
    while loop * period - s < span_ms:
        out.extend(loop * period + t - s for t in ts if 0 <= loop * period + t - s < span_ms)
        loop += 1
    return sorted(out)


def add_optimum(cells: list[dict], content_dir: Path, delay_ms: float = 25.0,
                resolution_ms: float = RUN_RESOLUTION_MS) -> list[dict]:
    """Each cell with ``optimum`` (QoE per chunk) added; cells without played chunks get NaN."""
    memo: dict[tuple, float] = {}
    for c in cells:
        key = (c["path"], c["start_ms"], c["played_chunks"], round(c["startup_s"], 3))
        if c["played_chunks"] < 1:
            c["optimum"] = float("nan")
            continue
        if key not in memo:
            path = Path(c["path"]) if Path(c["path"]).is_absolute() else REPO / c["path"]
            # the capacity over the played chunks' span plus slack for the last downloads
            span_ms = int(1000 * (c["startup_s"] + 2 * c["played_chunks"] + 60))
            opps = opportunities_from(path, int(c["start_ms"]), span_ms)
            o = run_optimum(opps, 0, content_dir, c["played_chunks"], c["startup_s"], delay_ms,
                            resolution_ms)
            q = o["qoe_per_chunk"]
            assert isinstance(q, float)
            memo[key] = q
        c["optimum"] = memo[key]
    return cells


def table(cells: list[dict]) -> str:
    """Per trace and variant: mean QoE, mean optimum, their ratio; then the means over traces."""
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for c in cells:
        by[(c["variant"], c["trace"])].append(c)
    variants = list(dict.fromkeys(c["variant"] for c in cells))
    traces = list(dict.fromkeys(c["trace"] for c in cells))
    lines = ["trace | " + " | ".join(f"{v}: QoE / optimum / ratio" for v in variants)]
    sums = {v: [0.0, 0.0] for v in variants}
    for t in traces:
        row = [t]
        for v in variants:
            cs = by[(v, t)]
            q = sum(c["qoe"] for c in cs) / len(cs)
            o = sum(c["optimum"] for c in cs) / len(cs)
            sums[v][0] += q / len(traces)
            sums[v][1] += o / len(traces)
            row.append(f"{q:.2f} / {o:.2f} / {q / o:.2f}" if o > 0 else f"{q:.2f} / {o:.2f} / -")
        lines.append(" | ".join(row))
    means = (f"{q:.3f} / {o:.3f} / {q / o:.2f}" for q, o in sums.values())
    lines.append("mean | " + " | ".join(means))
    return "\n".join(lines)


def ladder_json(content_dir: Path) -> str:
    """The content's ladder (``abr_optimum.load_ladder``) as the simulator's VideoLadder JSON."""
    lad = load_ladder(content_dir)
    return json.dumps({"bitrates_kbps": lad.bitrates_kbps, "video_bytes": lad.video_bytes,
                       "audio_bytes": lad.audio_bytes, "segment_s": lad.segment_s})


def main(argv: list[str] | None = None) -> None:
    """``python -m nuwa_lab.video_sim_optimum --json SIM.json [--out OUT.json]``, or
    ``--ladder CONTENT_DIR``: print the content's ladder for ``./nuwa video-sim``."""
    p = argparse.ArgumentParser(
        description="offline optimum of each simulated playback (SIMULATED)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--json", help="./nuwa video-sim --json output")
    g.add_argument("--ladder", help="print this content directory's ladder as JSON")
    p.add_argument("--out", help="write the cells with their optimum here")
    a = p.parse_args(argv)
    if a.ladder:
        print(ladder_json(Path(a.ladder)))
        return
    d = json.loads(Path(a.json).read_text())
    cells = add_optimum(d["cells"], Path(d["content_dir"]))
    print(table(cells))
    if a.out:
        Path(a.out).write_text(json.dumps({**d, "cells": cells}, indent=1) + "\n")


if __name__ == "__main__":
    main()
