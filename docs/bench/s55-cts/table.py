"""Per-run and per-arm table of run.sh's output: python3 table.py OUT"""
import glob
import json
import os
import statistics as st
import sys

out = sys.argv[1]
rows = {}
print("| run | QoE | rebuffering s | switches | kbit/s | re-downloaded chunks | re-downloaded kB |")
print("|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(os.path.join(out, "*-[0-9]"))):
    f = os.path.join(d, "summary.json")
    if not os.path.exists(f):
        continue
    s = json.load(open(f))
    arm = os.path.basename(d).rsplit("-", 1)[0]
    r = (s["qoe_per_chunk"], s["rebuffer_s"], s["switches"], s["bitrate_kbps_mean"], s["redownloaded_chunks"], s["redownloaded_bytes"] / 1000)
    rows.setdefault(arm, []).append(r)
    print(f"| {os.path.basename(d)} | {r[0]:.2f} | {r[1]:.1f} | {r[2]} | {r[3]:.0f} | {r[4]} | {r[5]:.0f} |")
print()
print("| arm | runs | mean QoE | mean rebuffering s | mean switches | mean kbit/s | re-downloaded chunks (total) | mean re-downloaded kB |")
print("|---|---|---|---|---|---|---|---|")
for arm, rs in sorted(rows.items()):
    print(f"| {arm} | {len(rs)} | {st.mean(r[0] for r in rs):.2f} | {st.mean(r[1] for r in rs):.1f} | {st.mean(r[2] for r in rs):.1f} | {st.mean(r[3] for r in rs):.0f} | {sum(r[4] for r in rs)} | {st.mean(r[5] for r in rs):.0f} |")
