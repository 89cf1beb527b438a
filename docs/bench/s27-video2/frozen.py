"""Per trace and scheme, mean over runs: declared stalls, frozen picture, QoE (from each run's summary.json)."""
import glob, json, sys, statistics, collections
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/runs/play-*/summary.json')):
    s = json.load(open(f))
    key = (f.split('/')[-2].replace('-r2', '').replace('-r3', ''))
    rows[key].append(s)
for k, v in rows.items():
    m = lambda n: statistics.mean(float(x.get(n) or 0) for x in v)
    print(f"{k:65s} n={len(v)} stalls {m('stall_s'):5.1f} s  frozen {m('frozen_s'):4.1f} s  QoE {m('qoe_per_chunk'):6.2f}  switches {m('switches'):4.1f}")
