"""Table of the fifty-fourth session's retry-takeover runs (run.sh): per run, QoE per chunk, rebuffering,
mean bitrate, start-up, and from the server's request log the whole-file media segments asked for more
than once (a retry that asked the server afresh) and the cancels. Usage: python3 table.py RUN_DIR..."""
import json
import sys
from collections import Counter
from pathlib import Path

print("| run | QoE per chunk | rebuffering s | kbit/s | start-up s | segments asked for again | cancels |")
print("|---|---|---|---|---|---|---|")
for a in sys.argv[1:]:
    d = Path(a)
    if not (d / "summary.json").exists():
        continue
    s = json.loads((d / "summary.json").read_text())
    paths: Counter[str] = Counter()
    cancels = 0
    for ev in sorted((d / "server").glob("*/events.jsonl")):
        for line in ev.read_text().splitlines():
            e = json.loads(line)
            if e["event"] == "request" and "/seg-" in e["path"] and e.get("range") is None:
                paths[e["path"]] += 1
            elif e["event"] == "cancel":
                cancels += 1
    again = ", ".join(f"{p.rsplit('/', 1)[-1]} ×{n}" for p, n in paths.items() if n > 1) or "none"
    print(f"| {d.name} | {s['qoe_per_chunk']:.2f} | {s['rebuffer_s']:.1f} | {s['bitrate_kbps_mean']:.0f} | {s['startup_s']:.2f} | {again} | {cancels} |")
