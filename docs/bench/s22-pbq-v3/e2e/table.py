"""The end-to-end table of docs/BENCHMARKS.md (twenty-second session): PBQ v3 against BBR in the
same bench run, with v2's verdict from the twenty-first session's run:
``python table.py BENCH_OUT_V3 BENCH_OUT_V2`` (each a ``./nuwa bench --out`` folder)."""
import json, sys, glob, collections
def load(out):
    cells = collections.defaultdict(dict)
    for f in glob.glob(f"{out}/runs/*/bench.json"):
        d = json.load(open(f))
        if d["kind"] != "bulk" or d["error"]: continue
        m = d["metrics"]
        fam = d["trace"]["path"].split("/")[-2]
        cells[(fam, d["trace"]["name"], d["queue_packets"])][d["scheme"]] = (m["utilization"], m["queuing_delay_ms"]["p95"], m["loss_rate"], d["valid"])
    return cells
new, old = load(sys.argv[1]), load(sys.argv[2])
def win(c): p, b = c["pbq"], c["bbr"]; return p[0] >= b[0] and p[1] <= b[1]
fmt = lambda x: f"{x[0]:.3f} / {x[1]:.0f} / {100*x[2]:.2f} %" + ("" if x[3] else " (invalid)")
print("| trace | queue | PBQ v3 util / p95 ms / loss | BBR, same run | v3 ≥ BBR on both | v2 ≥ BBR (twenty-first session's run) |")
print("|---|---|---|---|---|---|")
W = collections.Counter(); N = collections.Counter()
for k in sorted(new, key=lambda k: (-k[2], k[0], k[1])):
    c = new[k]
    if "pbq" not in c or "bbr" not in c: continue
    o = old.get(k, {})
    w = win(c); wo = win(o) if "pbq" in o and "bbr" in o else None
    N[k[2]] += 1; W[("v3", k[2])] += w; W[("v2", k[2])] += bool(wo)
    print(f"| {k[1]} ({k[0]}) | {k[2]} | {fmt(c['pbq'])} | {fmt(c['bbr'])} | {'yes' if w else 'no'} | {'–' if wo is None else ('yes' if wo else 'no')} |")
for q in sorted(N, reverse=True): print(f"\nqueue {q}: v3 {W[('v3', q)]}/{N[q]}, v2 {W[('v2', q)]}/{N[q]}")
