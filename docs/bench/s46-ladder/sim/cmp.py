import json,os,sys,re
cub={}
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)),'../../s41-bulk/report.md')):
    m=re.match(r'\| (\S+) \| \S+ \| [\d.]+ / \d+ / [\d.]+% \| ([\d.]+) / (\d+) / ',line)
    if m and m.group(1) not in cub: cub[m.group(1)]=(float(m.group(2)),float(m.group(3)))
d={}
files=[a for a in sys.argv[1:] if a.endswith('.json')]; pick=[a for a in sys.argv[1:] if not a.endswith('.json')]
for f in files: d.update(json.load(open(f))['configs'])
names=pick or list(d)
rec={n:{r['trace']:r for r in d[n]['recordings']} for n in names}
print(f"{'trace':26s} {'bound':>5s} "+" ".join(f"{n[:13]:>13s}" for n in names))
score={n:[0,0,0,0.0,0.0] for n in names}
for t in rec[names[0]]:
    cu,cp=cub[t]; bound=max(50,0.1*cp)
    cells=[]
    for n in names:
        r=rec[n][t]; u=r['utilization']/cu; p=r['p95_ms']
        s=score[n]; s[0]+=u>=0.95; s[1]+=u>=0.85; s[2]+=p<=bound; s[3]+=r['utilization']/18; s[4]+=p/18
        cells.append(f"{r['utilization']:.3f}/{p:4.0f}{' ' if u>=0.95 else 'u'}{' ' if p<=bound else 'p'}")
    print(f"{t[-26:]:26s} {bound:5.0f} ", ' '.join(cells))
for n in names: s=score[n]; print(f"{n:20s} util>=0.95x: {s[0]}  >=0.85x: {s[1]}  p95 ok: {s[2]}  mean util {s[3]:.3f} mean p95 {s[4]:.0f}")
