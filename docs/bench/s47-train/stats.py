"""At each 50 ms poll where the shipped rule's first-detection condition holds, stats of the
window's fresh qd samples. Usage: stats.py LABEL RUN..."""
import sys, json, statistics as st
from pathlib import Path
from types import SimpleNamespace
from nuwa_lab.mix import replay
from nuwa_server.switch_policy import RuleConfig
from nuwa_server.switcher import POLL_INTERVAL_US
import os
MS = int(os.environ.get("MS", "20"))

def feats(qd):
    q = [x for _, x, _ in qd]
    succ = [abs(b - a) / max(a, b) for a, b in zip(q, q[1:])]
    return dict(n=len(q), succ=st.median(succ), minmed=min(q) / st.median(q),
                cv=st.pstdev(q) / st.mean(q), med=st.median(q) / 1000)

def run(d):
    try:
        grants, switches = replay.read_sessions(Path(d))
    except FileNotFoundError:
        return None
    if not grants: return None
    until = switches[0][0] if switches else None
    sw, p = replay._switcher(grants, RuleConfig(min_samples=MS))
    sess = {}
    nxt = 0; out = []
    t0 = int(grants[0][1]["recv_time_us"])
    for name, g in grants:
        t = int(g["recv_time_us"])
        if until is not None and t > until + 100_000: break
        replay._feed(sw, sess, name, g)
        if t >= nxt:
            nxt = t + POLL_INTERVAL_US
            if t - p.since_us >= 3_000_000 and p.competitor_evidence(t):
                f = feats(p._qd); f["t"] = (t - t0) / 1e6
                out.append(f)
    return out

label = sys.argv[1]
for d in sys.argv[2:]:
    o = run(d)
    if not o: continue
    k = lambda key, fn: fn(x[key] for x in o)
    print(f"{label} {Path(d).name[:50]:50s} moments {len(o):4d} t0 {o[0]['t']:.1f} succ {k('succ',min):.2f}-{k('succ',max):.2f} minmed {k('minmed',min):.2f}-{k('minmed',max):.2f} cv {k('cv',min):.2f}-{k('cv',max):.2f} med_ms {k('med',min):.0f}-{k('med',max):.0f}")
