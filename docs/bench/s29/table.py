"""The twenty-ninth session's A/B next to a Cubic download (docs/BENCHMARKS.md): one row per run, a mean per arm.
Run: .venv/bin/python docs/bench/s29/table.py"""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
runs = [json.loads(f.read_text()) for f in sorted((HERE / "runs").glob("*.json"))]
# the shipped MPC first, then each change in the order its runs sort
arms = sorted({r["arm"] for r in runs}, key=lambda a: (a != "shipped", a))
print("| run | arm | rebuffering s (stalls) | QoE per chunk | mean kbit/s | switches | video share | MPC decisions with the error at its cap |")
print("|---|---|---|---|---|---|---|---|")
for r in runs:
    print(f"| {r['run']} | {r['arm']} | {r['rebuffer_s']:.1f} ({r['rebuffer_count']}) | {r['qoe_per_chunk']:.2f} | {r['bitrate_kbps_mean']:.0f} "
          f"| {r['switches']} | {r['video_share']:.2f} | {r['mpc_error_at_cap']}/{r['mpc_decisions']} |")
print()
print("| trace | arm | runs | rebuffering s, mean (range) | QoE per chunk, mean (range) | video share, mean |")
print("|---|---|---|---|---|---|")
for trace in sorted({r["trace"] for r in runs}):
    for arm in arms:
        rs = [r for r in runs if r["trace"] == trace and r["arm"] == arm]
        if not rs:
            continue
        rb = [r["rebuffer_s"] for r in rs]
        q = [r["qoe_per_chunk"] for r in rs]
        print(f"| {trace} | {arm} | {len(rs)} | {statistics.mean(rb):.1f} ({min(rb):.1f}–{max(rb):.1f}) | "
              f"{statistics.mean(q):.2f} ({min(q):.2f}–{max(q):.2f}) | {statistics.mean(r['video_share'] for r in rs):.2f} |")
