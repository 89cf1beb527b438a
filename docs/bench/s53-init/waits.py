"""What each rung switch waited for its init segment: python3 waits.py RUN_DIR...

For every init-segment request the server saw after the first second of a session, the time
until the same representation's next media-segment request (dash.js asks for that only once the
init segment is in); with the loader's init prefetch these requests do not reach the server."""
import glob
import json
import os
import re
import sys

allw = []
for d in sys.argv[1:]:
    for ev in glob.glob(os.path.join(d, "server", "*", "events.jsonl")):
        t0 = None
        reqs = []
        for line in open(ev):
            e = json.loads(line)
            if e.get("event") == "config":
                t0 = e["time_us"]
            elif e.get("event") == "request" and t0 is not None:
                reqs.append(((e["time_us"] - t0) / 1e6, e["path"]))
        waits = []
        for i, (t, p) in enumerate(reqs):
            m = re.match(r"/init-(\d+)\.m4s$", p)
            if not m or t < 1.0:
                continue
            nxt = next((t2 for t2, p2 in reqs[i + 1:] if p2.startswith(f"/seg-{m.group(1)}-")), None)
            if nxt is not None:
                waits.append(round(nxt - t, 2))
        allw += waits
        print(f"{os.path.basename(d)}: {len(waits)} switches, waits s {waits}")
if allw:
    allw.sort()
    print(f"all: {len(allw)} switches, median {allw[len(allw) // 2]:.2f} s, max {allw[-1]:.2f} s, total {sum(allw):.1f} s")
