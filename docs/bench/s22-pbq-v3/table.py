"""Cells where PBQ's utilization ≥ BBR's and its p95 ≤ BBR's, per rule, queue and delay,
from sweep.py's JSON lines: ``python docs/bench/s22-pbq-v3/table.py sweep-device.jsonl``."""
import collections
import json
import sys

cells: dict = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    cells[(r["trace"], r["q"], r["owd"])][r["scheme"]] = r
other = ("mmwave", "nsa-walking", "fcc-")
tot: collections.Counter = collections.Counter()
win: collections.Counter = collections.Counter()
for (trace, q, owd), c in cells.items():
    if len(c) < 3:
        continue
    group = "not in the repo" if any(o in trace for o in other) else "dev"
    for s in ("pbq-v2", "pbq-v3"):
        w = c[s]["util"] >= c["bbr"]["util"] and c[s]["p95"] <= c["bbr"]["p95"]
        for key in ((group, q, owd, s), (group, q, "all", s), (group, "all", "all", s)):
            tot[key] += 1
            win[key] += w
print("| traces | queue | one-way ms | v2 (shipped) | v3 |\n|---|---|---|---|---|")
for key in sorted({k[:3] for k in tot}, key=str):
    print(f"| {key[0]} | {key[1]} | {key[2]} | {win[(*key, 'pbq-v2')]}/{tot[(*key, 'pbq-v2')]} "
          f"| {win[(*key, 'pbq-v3')]}/{tot[(*key, 'pbq-v3')]} |")
