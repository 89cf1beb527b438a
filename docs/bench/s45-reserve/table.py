import json,glob,os,re,statistics as st,sys
# usage: table.py [RUNS_DIR [SCHEME ...]] (default: the forty-fifth session's runs and schemes;
# the forty-sixth's ladder: table.py /work/benchout/s46-ladder/runs dashjs dashjs_grants dashjs_nuwa_estimate nuwa)
base=sys.argv[1] if len(sys.argv)>1 else '/work/benchout/s45-video/runs'
schemes=sys.argv[2:] or ['dashjs','nuwa','nuwa_noreserve']
cells={}
for d in sorted(glob.glob(base+'/play-*')):
    name=os.path.basename(d)
    m=re.match(r'play-(.+)-('+'|'.join(map(re.escape,schemes))+r')-q1000-s1(-r\d)?$',name)
    if not m: continue
    f=os.path.join(d,'bench.json')
    if not os.path.exists(f): continue
    j=json.load(open(f))
    if not j['valid']: print('INVALID',name,j['invalid_reasons']); continue
    cells.setdefault((m.group(1),m.group(2)),[]).append(j['metrics'])
short={'mnwild-tmobile-5g-sa-lowband-walking-r20':'5G low-band walking','verizon-lte-short':'Verizon LTE short','tmobile-lte-short':'T-Mobile LTE short','att-lte-driving':'AT&T LTE driving','norway-hsdpa-bus-1':'Norway HSDPA bus','tmobile-umts-driving':'T-Mobile UMTS driving'}
order=['tmobile-umts-driving','norway-hsdpa-bus-1','mnwild-tmobile-5g-sa-lowband-walking-r20','att-lte-driving','tmobile-lte-short','verizon-lte-short']
print('| trace | '+' | '.join(schemes)+' |'); print('|---'*(len(schemes)+1)+'|')
means={s:[] for s in schemes}; fam={}
famof={'tmobile-umts-driving':'3G','norway-hsdpa-bus-1':'3G','att-lte-driving':'4G','tmobile-lte-short':'4G','verizon-lte-short':'4G','mnwild-tmobile-5g-sa-lowband-walking-r20':'5G'}
for t in order:
    row=[]
    for s in schemes:
        r=cells.get((t,s),[])
        if not r: row.append('–'); continue
        q=[x['qoe_per_chunk'] for x in r]; mq=st.mean(q); means[s].append(mq)
        fam.setdefault((famof[t],s),[]).extend([(x['rebuffer_s'],x['media_played_s'],x['switches']) for x in r])
        row.append(f"{mq:.2f} ({', '.join(f'{v:.2f}' for v in q)}) / {' '.join(str(x['switches']) for x in r)} / {' '.join('%.1f' % x['rebuffer_s'] for x in r)} / {st.mean(x['bitrate_kbps_mean'] for x in r):.0f}")
    print(f"| {short[t]} | "+' | '.join(row)+' |')
print('| mean | '+' | '.join(f"**{st.mean(means[s]):.2f}**" if means[s] else '–' for s in schemes)+' |')
for (f,s),v in sorted(fam.items()):
    rb=sum(a for a,_,_ in v); pl=sum(b for _,b,_ in v)
    print(f, s, f"rebuffer ratio {100*rb/(rb+pl):.1f}%  switches/run {st.mean(c for *_,c in v):.2f}  runs {len(v)}")
print("report's formula (mean over the family's traces of the per-trace mean of rebuffer/(rebuffer+played); switches likewise):")
for fm in ('3G','4G','5G'):
    ts=[t for t in order if famof[t]==fm]
    out=[]
    for s in schemes:
        rr=[st.mean(x['rebuffer_s']/(x['rebuffer_s']+x['media_played_s']) for x in cells[(t,s)]) for t in ts]
        sw=[st.mean(x['switches'] for x in cells[(t,s)]) for t in ts]
        out.append(f"{s} {100*st.mean(rr):.1f}% / {st.mean(sw):.2f}")
    print(fm, ' | '.join(out))
