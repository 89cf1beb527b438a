"""QoE of each play run under both bases (what rendered vs each position's last download), same page logs."""
import glob, json, sys, statistics, collections
sys.path.insert(0, '/work/main/lab')
from nuwa_lab.play_metrics import qoe
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/runs/play-*/page.json')):
    p = json.load(open(f))
    r = qoe(p); p2 = dict(p); p2.pop('rendered', None); d = qoe(p2)
    name = f.split('/')[-2]
    key = name.replace('-r2', '').replace('-r3', '')
    rows[key].append((r['qoe_per_chunk'], d['qoe_per_chunk'], r['switches'], d['switches'], r['quality_basis']))
    print(f"{name:75s} rendered {r['qoe_per_chunk']:6.2f} ({r['switches']:2d} sw)  downloaded {d['qoe_per_chunk']:6.2f} ({d['switches']:2d} sw) {r['quality_basis']}")
print()
for k, v in rows.items():
    print(f"{k:70s} n={len(v)} rendered {statistics.mean(x[0] for x in v):6.2f}  downloaded {statistics.mean(x[1] for x in v):6.2f}  sw {statistics.mean(x[2] for x in v):4.1f} vs {statistics.mean(x[3] for x in v):4.1f}")
