"""The forty-ninth session's table: per trace and scheme, mean QoE per chunk of the runs (each run) /
switches / rebuffering s / mean kbit/s / start-up s; then per family rebuffer ratio and switches.
usage: python3 table.py RUNS_DIR [SCHEME ...] (default schemes: dashjs nuwa nuwa_noprobe)"""
import glob
import json
import os
import re
import statistics as st
import sys

base = sys.argv[1]
schemes = sys.argv[2:] or ["dashjs", "nuwa", "nuwa_noprobe"]
cells: dict = {}
for d in sorted(glob.glob(base + "/play-*")):
    name = os.path.basename(d)
    m = re.match(r"play-(.+)-(" + "|".join(map(re.escape, schemes)) + r")-q1000-s1(-r\d)?$", name)
    f = os.path.join(d, "bench.json")
    if not m or not os.path.exists(f):
        continue
    j = json.load(open(f))
    if not j["valid"]:
        print("INVALID", name, j["invalid_reasons"])
        continue
    cells.setdefault((m.group(1), m.group(2)), []).append(j["metrics"])
short = {"mnwild-tmobile-5g-sa-lowband-walking-r20": "5G low-band walking", "verizon-lte-short": "Verizon LTE short",
         "tmobile-lte-short": "T-Mobile LTE short", "att-lte-driving": "AT&T LTE driving",
         "norway-hsdpa-bus-1": "Norway HSDPA bus", "tmobile-umts-driving": "T-Mobile UMTS driving"}
famof = {"tmobile-umts-driving": "3G", "norway-hsdpa-bus-1": "3G", "att-lte-driving": "4G", "tmobile-lte-short": "4G",
         "verizon-lte-short": "4G", "mnwild-tmobile-5g-sa-lowband-walking-r20": "5G"}
print("| trace | " + " | ".join(schemes) + " |")
print("|---" * (len(schemes) + 1) + "|")
means: dict = {s: [] for s in schemes}
fam: dict = {}
for t in famof:
    row = []
    for s in schemes:
        r = cells.get((t, s), [])
        if not r:
            row.append("–")
            continue
        q = [x["qoe_per_chunk"] for x in r]
        means[s].append(st.mean(q))
        fam.setdefault((famof[t], s), []).append((st.mean(x["rebuffer_s"] / (x["rebuffer_s"] + x["media_played_s"]) for x in r),
                                                   st.mean(x["switches"] for x in r)))
        row.append(f"{st.mean(q):.2f} ({', '.join(f'{v:.2f}' for v in q)}) / {' '.join(str(x['switches']) for x in r)}"
                   f" / {' '.join('%.1f' % x['rebuffer_s'] for x in r)} / {st.mean(x['bitrate_kbps_mean'] for x in r):.0f}"
                   f" / {' '.join('%.2f' % x['startup_s'] for x in r)}")
    print(f"| {short[t]} | " + " | ".join(row) + " |")
print("| mean | " + " | ".join(f"**{st.mean(means[s]):.2f}**" if means[s] else "–" for s in schemes) + " |")
print()
print("| family | " + " | ".join(f"{s}: rebuffer ratio / switches" for s in schemes) + " |")
print("|---" * (len(schemes) + 1) + "|")
for f in ("3G", "4G", "5G"):
    row = []
    for s in schemes:
        v = fam.get((f, s), [])
        row.append(f"{100 * st.mean(a for a, _ in v):.1f} % / {st.mean(b for _, b in v):.2f}" if v else "–")
    print(f"| {f} | " + " | ".join(row) + " |")
