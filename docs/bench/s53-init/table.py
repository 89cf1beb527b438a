"""Table of docs/bench/s53-init runs: python3 table.py RUNS_DIR.

Per run: rebuffering, QoE per chunk, mean kbit/s, switches, the video's share next to the
download, and the init-segment requests the server saw after the first second of the session
(with the init prefetch there are none: dash.js's init requests are answered by the loader)."""
import glob
import json
import os
import re
import sys
from collections import defaultdict

runs = sys.argv[1]
rows = []
agg = defaultdict(list)
for d in sorted(glob.glob(os.path.join(runs, "*-*-*"))):
    if not os.path.isdir(d) or not os.path.exists(os.path.join(d, "summary.json")):
        continue
    name = os.path.basename(d)
    m = re.match(r"(.+)-(hsdpa|vz|5g|umts)-(\d+)$", name)
    if not m:
        continue
    scheme, trace, _ = m.groups()
    s = json.load(open(os.path.join(d, "summary.json")))
    comp = s.get("competitor") or {}
    share = comp.get("video_share")
    if share is None and os.path.exists(os.path.join(d, "competitor-summary.json")):
        share = json.load(open(os.path.join(d, "competitor-summary.json"))).get("video_share")
    late_inits = []
    for ev in glob.glob(os.path.join(d, "server", "*", "events.jsonl")):
        t0 = None
        for line in open(ev):
            e = json.loads(line)
            if e.get("event") == "config":
                t0 = e["time_us"]
            if e.get("event") == "request" and "/init-" in e.get("path", "") and t0 is not None and e["time_us"] - t0 > 1e6:
                late_inits.append(round((e["time_us"] - t0) / 1e6, 1))
    rows.append((name, s["rebuffer_s"], s["qoe_per_chunk"], s["bitrate_kbps_mean"], s["switches"], share, late_inits, s["startup_s"]))
    agg[(trace, scheme)].append((s["rebuffer_s"], s["qoe_per_chunk"], s["bitrate_kbps_mean"], share))
print("| run | rebuffering s | QoE per chunk | mean kbit/s | switches | start-up s | video share | init requests after 1 s (s into the session) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    sh = f"{r[5]:.2f}" if isinstance(r[5], (int, float)) else "–"
    print(f"| {r[0]} | {r[1]:.1f} | {r[2]:.2f} | {r[3]:.0f} | {r[4]} | {r[7]:.2f} | {sh} | {', '.join(map(str, r[6])) or 'none'} |")
print()
print("| trace | scheme | runs | runs with a stall | rebuffering s, mean (each) | QoE per chunk, mean (each) | mean kbit/s |")
print("|---|---|---|---|---|---|---|")
for (trace, scheme), v in sorted(agg.items()):
    n = len(v)
    print(f"| {trace} | {scheme} | {n} | {sum(1 for x in v if x[0] > 0)} | {sum(x[0] for x in v) / n:.1f} ({', '.join(f'{x[0]:.1f}' for x in v)}) | "
          f"{sum(x[1] for x in v) / n:.2f} ({', '.join(f'{x[1]:.2f}' for x in v)}) | {sum(x[2] for x in v) / n:.0f} |")
