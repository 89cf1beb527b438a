"""The end-to-end table of docs/BENCHMARKS.md (twenty-fifth session): PBQ (the model retrained at
aa2339a) against BBR in the same bench run, beside the twenty-fourth session's run of the same
invocation (the model trained at 2d4b688, the same BBR):
``python table.py BENCH_OUT_S25 BENCH_OUT_S24`` (each a ``./nuwa bench --out`` folder)."""
import collections
import glob
import json
import pathlib
import sys


def load(out):
    cells = collections.defaultdict(dict)
    for f in glob.glob(f"{out}/runs/*/bench.json"):
        d = json.loads(pathlib.Path(f).read_text())
        if d["kind"] != "bulk" or d["error"]:
            continue
        m = d["metrics"]
        fam = d["trace"]["path"].split("/")[-2]
        cells[(fam, d["trace"]["name"], d["queue_packets"])][d["scheme"]] = (
            m["utilization"], m["queuing_delay_ms"]["p95"], m["loss_rate"], d["valid"])
    return cells


def win(c):
    p, b = c["pbq"], c["bbr"]
    return p[0] >= b[0] and p[1] <= b[1]


def valid(c):
    return c["pbq"][3] and c["bbr"][3]


def fmt(x):
    return f"{x[0]:.3f} / {x[1]:.0f} / {100 * x[2]:.2f} %" + ("" if x[3] else " (invalid)")


new, old = load(sys.argv[1]), load(sys.argv[2])
print("| trace | queue | PBQ util / p95 ms / loss | BBR, same run | PBQ ≥ BBR on both | "
      "twenty-fourth session's run: PBQ / BBR util; p95 | then |")
print("|---|---|---|---|---|---|---|")
W = collections.Counter()
N = collections.Counter()
for k in sorted(new, key=lambda k: (-k[2], k[0], k[1])):
    c = new[k]
    if "pbq" not in c or "bbr" not in c:
        continue
    o = old.get(k, {})
    w = win(c)
    wo = win(o) if "pbq" in o and "bbr" in o else None
    N[k[2]] += 1
    W[("new", k[2])] += w
    W[("old", k[2])] += bool(wo)
    W[("both", k[2])] += bool(w and wo)
    W[("either", k[2])] += bool(w or wo)
    if valid(c) and wo is not None and valid(o):
        N[("valid", k[2])] += 1
        W[("new_valid", k[2])] += w
        W[("old_valid", k[2])] += bool(wo)
    then = (f"{o['pbq'][0]:.3f} / {o['bbr'][0]:.3f}; {o['pbq'][1]:.0f} / {o['bbr'][1]:.0f}"
            if wo is not None else "–")
    print(f"| {k[1]} ({k[0]}) | {k[2]} | {fmt(c['pbq'])} | {fmt(c['bbr'])} | "
          f"{'yes' if w else 'no'} | {then} | {'–' if wo is None else ('yes' if wo else 'no')} |")
for q in sorted((q for q in N if isinstance(q, int)), reverse=True):
    print(f"\nqueue {q}: this run {W[('new', q)]}/{N[q]}, twenty-fourth session's "
          f"{W[('old', q)]}/{N[q]}; in both runs {W[('both', q)]}, in either {W[('either', q)]}; "
          f"cells valid in both runs: {W[('new_valid', q)]} and {W[('old_valid', q)]} of "
          f"{N[('valid', q)]}")
