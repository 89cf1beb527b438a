"""``python -m nuwa_lab.dashgen --out CACHE_ROOT [--duration 120] [--json]``: build (or find
in the cache) the ladder and print where it is."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .content import ensure_content
from .hls import write_hls
from .params import CTS_OFFSETS, DEFAULT_LADDER, DashGenError, Rung


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints the content dir and MPD path (or JSON). Returns
    the exit status: 0 ok, 1 generation failed, 2 usage."""
    ap = argparse.ArgumentParser(
        prog="python -m nuwa_lab.dashgen",
        description="Build (or find in the cache) the synthetic DASH VOD ladder.",
    )
    ap.add_argument("--out", required=True, type=Path, help="cache root directory")
    ap.add_argument("--duration", type=int, default=120, help="seconds (multiple of 2)")
    ap.add_argument("--json", action="store_true", help="print ContentInfo as JSON")
    ap.add_argument("--ffmpeg", default=None, help="ffmpeg executable")
    ap.add_argument("--preset", default="superfast", help="x264 preset")
    ap.add_argument(
        "--ladder-bps",
        default=None,
        help="comma-separated subset of the default ladder's bandwidths, e.g. 300000,1200000",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument(
        "--hls",
        action="store_true",
        help="also write HLS playlists over the same segments (master.m3u8; hls.py)",
    )
    ap.add_argument(
        "--cts-offsets",
        choices=sorted(CTS_OFFSETS),
        default=os.environ.get("NUWA_DASHGEN_CTS_OFFSETS", "negative"),
        help="how the B-frame delay is written (default negative; $NUWA_DASHGEN_CTS_OFFSETS "
        "sets it for every run that makes its content, e.g. ./nuwa play: an A/B's knob)",
    )
    ns = ap.parse_args(argv)

    ladder: tuple[Rung, ...] = DEFAULT_LADDER
    if ns.ladder_bps:
        by_bps = {r.bandwidth_bps: r for r in DEFAULT_LADDER}
        try:
            ladder = tuple(by_bps[int(b)] for b in ns.ladder_bps.split(","))
        except (KeyError, ValueError):
            ap.error(f"--ladder-bps: pick from {sorted(by_bps)}")

    last = [-10.0]

    def report(done_s: float, total_s: float) -> None:
        if done_s - last[0] >= 10 or done_s >= total_s:
            last[0] = done_s
            print(f"dashgen: encoded {done_s:.0f}/{total_s:.0f} s", file=sys.stderr, flush=True)

    try:
        info = ensure_content(
            ns.out,
            ns.duration,
            ladder=ladder,
            preset=ns.preset,
            cts_offsets=ns.cts_offsets,
            ffmpeg=ns.ffmpeg,
            progress=None if ns.quiet else report,
        )
        hls_path = write_hls(info) if ns.hls else None
    except (DashGenError, ValueError) as exc:
        print(f"dashgen: error: {exc}", file=sys.stderr)
        return 1
    if ns.json:
        out = info.to_json()
        if hls_path is not None:
            out["hls_path"] = str(hls_path)
        print(json.dumps(out, indent=2))
    else:
        state = "cached" if info.cached else f"built in {info.build_s:.1f} s"
        print(f"content dir: {info.dir}  ({state})")
        print(f"mpd: {info.mpd_path}")
        if hls_path is not None:
            print(f"hls: {hls_path}")
        for r in [*info.representations, info.audio]:
            size = f"{r.width}x{r.height}" if r.width else "audio"
            print(
                f"  rep {r.id:>2} {size:>9} {r.codecs:<12} nominal {r.bandwidth_bps / 1e3:7.0f} "
                f"kbps  measured {r.measured_bps / 1e3:7.0f} kbps"
            )
    return 0
