"""Fifty-second session: screen first-detection conditions on recorded grants (fresh samples only,
no cover, standing or train checks: a rough screen; the rule itself is replayed with
`python -m nuwa_lab.mix.replay --first RUN --config JSON`). Usage: python3 screen.py RUN_DIR..."""
import json, sys, glob, statistics
from pathlib import Path

def samples(run):
    files = glob.glob(f"{run}/**/grants.jsonl", recursive=True)
    rows = []
    for f in files:
        if "logs-bbr" in f or "logs-cubic" in f: continue
        rows += [json.loads(l) for l in open(f) if l.strip()]
    rows = [r for r in rows if r.get("accepted")]
    rows.sort(key=lambda r: r["recv_time_us"])
    if not rows: return []
    t0 = rows[0]["recv_time_us"]; mn = None; last = None; out = []
    for r in rows:
        if r.get("rtt_us") is None: continue
        mn = r["rtt_us"] if mn is None else min(mn, r["rtt_us"])
        e = r.get("echo_send_time_us")
        if last is not None and e is not None and e <= last: continue
        last = e
        out.append(((r["recv_time_us"] - t0) / 1e6, (r["rtt_us"] - mn) / 1000))
    return out

def first_hold(s, cond, start=0.0):
    j = 0
    for i, (t, q) in enumerate(s):
        if t < start: continue
        r = cond(s, i)
        if r: return round(t, 1)
    return None

def window(s, i, w):
    t = s[i][0]; lo = i
    while lo > 0 and s[lo - 1][0] > t - w: lo -= 1
    return [q for _, q in s[lo:i + 1]], s[lo][0]

def every(x=50, w=3, n=20):
    def c(s, i):
        q, t_lo = window(s, i, w)
        return s[i][0] >= w and len(q) >= n and min(q) >= x
    return c

def frac(x=50, w=6, f=0.8, n=30):
    def c(s, i):
        q, t_lo = window(s, i, w)
        return s[i][0] >= w and len(q) >= n and sum(v >= x for v in q) >= f * len(q)
    return c

CONDS = {"every50/3s": every(), "frac50/6s/0.8": frac(), "frac50/6s/0.7": frac(f=0.7),
         "frac40/6s/0.8": frac(x=40), "frac50/10s/0.7": frac(w=10, f=0.7, n=50)}
for run in sys.argv[1:]:
    s = samples(run)
    print(Path(run).name[:60].ljust(60), " ".join(f"{k}={first_hold(s, c)}" for k, c in CONDS.items()))
