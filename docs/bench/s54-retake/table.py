"""Table of the fifty-fourth session's retry-takeover runs (run.sh): per run, QoE per chunk, rebuffering,
mean bitrate, start-up, dash.js's request timeouts with the share of the segment in at each (the page's
console: HTTPLoader "Request timeout: loaded: X, out of: Y"), and from the server's request log the
whole-file media segments asked for more than once (a retry that asked the server afresh) and the
cancels. Then the means per scheme. Usage: python3 table.py RUN_DIR..."""
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

print("| run | QoE per chunk | rebuffering s | kbit/s | start-up s | dash.js timeouts (share in) | segments asked for again | cancels |")
print("|---|---|---|---|---|---|---|---|")
means: dict[str, list[tuple[float, float]]] = defaultdict(list)
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
    console = (d / "console.log").read_text() if (d / "console.log").exists() else ""
    shares = [int(a) / int(b) for a, b in re.findall(r"Request timeout: loaded: (\d+), out of: (\d+)", console) if int(b) > 0]
    timeouts = ", ".join(f"{x:.0%}" for x in shares) or "none"
    print(f"| {d.name} | {s['qoe_per_chunk']:.2f} | {s['rebuffer_s']:.1f} | {s['bitrate_kbps_mean']:.0f} | {s['startup_s']:.2f} | {timeouts} | {again} | {cancels} |")
    means[d.name.rsplit("-", 2)[0]].append((s["qoe_per_chunk"], s["rebuffer_s"]))
print()
print("| scheme | runs | mean QoE per chunk | mean rebuffering s |")
print("|---|---|---|---|")
for scheme, v in sorted(means.items()):
    print(f"| {scheme} | {len(v)} | {statistics.mean(q for q, _ in v):.2f} | {statistics.mean(r for _, r in v):.1f} |")
