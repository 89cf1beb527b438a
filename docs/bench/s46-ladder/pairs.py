"""Packet-pair feasibility on recorded play runs: consecutive frames the server sent within
SEND_GAP_US of each other, and how far apart the page read them; per phase window [t0,t1) s of
the page's clock (frames' recv_us relative to the first frame)."""
import json, sys, statistics as st
SEND_GAP_US = 1000
def pairs(run, t0, t1):
    p = json.load(open(f"{run}/page.json"))
    s, r = p["frames"]["send_us"], p["frames"]["recv_us"]
    base = r[0]
    out = []
    for i in range(1, len(s)):
        tr = (r[i] - base) / 1e6
        if not (t0 <= tr < t1): continue
        if 0 <= s[i] - s[i-1] <= SEND_GAP_US:
            out.append((r[i] - r[i-1]) / 1000)
    return out
for run, t0, t1 in [(a, float(b), float(c)) for a, b, c in (x.split(":") for x in sys.argv[1:])]:
    d = pairs(run, t0, t1)
    if d:
        q = sorted(d)
        print(f"{run.split('/')[-1]} {t0}-{t1}s: {len(d)} pairs, read gap ms p10 {q[len(q)//10]:.1f} p50 {st.median(q):.1f} p90 {q[9*len(q)//10]:.1f}")
    else:
        print(f"{run.split('/')[-1]} {t0}-{t1}s: no pairs")
