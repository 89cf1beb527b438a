"""Table of ./nuwa mix runs (issue 18's switcher targets): per configuration, each run's Nuwa
share(s), Jain over the last 20 s, the most any flow starved (s), utilization, Nuwa's switches,
and whether the run meets issue 18 (Jain >= 0.9, no flow starved, utilization >= 0.9).
Usage: python3 table.py DIR [DIR...] (JSON files named CONFIG-RUN.json)."""
import json
import sys
from collections import defaultdict
from pathlib import Path

rows = defaultdict(list)
for d in sys.argv[1:]:
    for f in sorted(Path(d).glob("*.json")):
        config, _, run = f.stem.rpartition("-")
        doc = json.loads(f.read_text())
        flows = doc["flows"]
        nuwa = [fl for fl in flows if fl["scheme"].startswith("nuwa")]
        starved = max(fl["starved_s"] for fl in flows)
        ok = doc["jain_index"] >= 0.9 and starved == 0 and doc["utilization"] >= 0.9
        rows[config].append((run, "/".join(f"{fl['share']:.2f}" for fl in nuwa), doc["jain_index"],
                             starved, doc["utilization"], "/".join(str(fl["switches"]) for fl in nuwa), ok))
print("| configuration | run: Nuwa share / Jain (last 20 s) / most starved s / utilization / switches | runs meeting issue 18 |")
print("|---|---|---|")
for config, runs in rows.items():
    cells = "; ".join(f"{r}: {s} / {j:.3f} / {st} / {u:.3f} / {sw}" for r, s, j, st, u, sw, _ in runs)
    print(f"| {config} | {cells} | {sum(ok for *_, ok in runs)} of {len(runs)} |")
