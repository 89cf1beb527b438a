"""The end-to-end table of docs/BENCHMARKS.md (twenty-fourth session): PBQ (v2, the shipped model)
against BBR in the same bench run, after BBR's outage rule for the min-RTT filter, with the
verdict of the twenty-first session's run (same model, the draft's min-RTT rule):
``python table.py BENCH_OUT_NEW BENCH_OUT_S21`` (each a ``./nuwa bench --out`` folder)."""
import collections
import glob
import json
import sys


def load(out):
    cells = collections.defaultdict(dict)
    for f in glob.glob(f"{out}/runs/*/bench.json"):
        with open(f) as fh:
            d = json.load(fh)
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


def fmt(x):
    return f"{x[0]:.3f} / {x[1]:.0f} / {100 * x[2]:.2f} %" + ("" if x[3] else " (invalid)")


def rows(new, old, then):
    """Print the table's header and one row per cell of ``new`` beside ``old`` (``then``: the
    earlier run's name); return (cells per queue, counts per ("new"|"old"|"both"|"either",
    queue) and ("new_valid"|"old_valid"|"valid", queue) over cells valid in both runs)."""
    print("| trace | queue | PBQ util / p95 ms / loss | BBR, same run | PBQ ≥ BBR on both | "
          f"{then}: PBQ / BBR util / p95 | then |")
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
        if wo is not None and c["pbq"][3] and c["bbr"][3] and o["pbq"][3] and o["bbr"][3]:
            W[("valid", k[2])] += 1
            W[("new_valid", k[2])] += w
            W[("old_valid", k[2])] += wo
        was = (f"{o['pbq'][0]:.3f} / {o['bbr'][0]:.3f}; {o['pbq'][1]:.0f} / {o['bbr'][1]:.0f}"
               if wo is not None else "–")
        print(f"| {k[1]} ({k[0]}) | {k[2]} | {fmt(c['pbq'])} | {fmt(c['bbr'])} | "
              f"{'yes' if w else 'no'} | {was} | {'–' if wo is None else ('yes' if wo else 'no')} |")
    return N, W


if __name__ == "__main__":
    N, W = rows(load(sys.argv[1]), load(sys.argv[2]), "twenty-first session's run")
    for q in sorted(N, reverse=True):
        print(f"\nqueue {q}: this run {W[('new', q)]}/{N[q]}, twenty-first session's "
              f"{W[('old', q)]}/{N[q]}")
