"""The thirty-first session's A/B next to a Cubic download: one row per run of `./nuwa play ...
--competitor cubic --switch rule --scheme nuwa|nuwa_ahead` (run directories under DIR, named
<trace>-<scheme>-<n>), then a mean per trace and scheme.
Run: .venv/bin/python docs/bench/s31/ab.py DIR"""
import json
import statistics
import sys
from pathlib import Path

rows = []
for d in sorted(Path(sys.argv[1]).iterdir()):
    s, c = d / "summary.json", d / "competitor-summary.json"
    if not s.exists():
        continue
    m = json.loads(s.read_text())
    comp = json.loads(c.read_text()) if c.exists() else {}
    fa = m.get("fetch_ahead") or {}
    rows.append({"run": d.name, "trace": d.name.rsplit("-", 2)[0], "scheme": d.name.rsplit("-", 2)[1],
                 "valid": (m.get("emulator") or {}).get("valid", comp.get("emulator_valid")),
                 "rebuffer_s": m["rebuffer_s"], "qoe": m["qoe_per_chunk"], "kbps": m["bitrate_kbps_mean"],
                 "switches": m["switches"], "share": comp.get("video_share"),
                 "fa": f"{fa.get('used', 0)}/{fa.get('discarded', 0)}/{fa.get('failed', 0)}",
                 "wasted_mb": (fa.get("wasted_bytes", 0) + m.get("redownloaded_bytes", 0) + m.get("abandoned_bytes", 0)) / 1e6})
print("| run | valid | rebuffering s | QoE per chunk | mean kbit/s | switches | video share | fetched ahead used/discarded/failed | wasted MB |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    share = "–" if r["share"] is None else f"{r['share']:.2f}"
    print(f"| {r['run']} | {r['valid']} | {r['rebuffer_s']:.1f} | {r['qoe']:.2f} | {r['kbps']:.0f} | {r['switches']} | {share} | {r['fa']} | {r['wasted_mb']:.2f} |")
print()
print("| trace | scheme | valid runs | rebuffering s, mean (each) | QoE per chunk, mean (each) | video share, mean |")
print("|---|---|---|---|---|---|")
for key in sorted({(r["trace"], r["scheme"]) for r in rows}):
    rs = [r for r in rows if (r["trace"], r["scheme"]) == key and r["valid"]]
    if not rs:
        continue
    sh = [r["share"] for r in rs if r["share"] is not None]
    rb = ", ".join(f"{r['rebuffer_s']:.1f}" for r in rs)
    qs = ", ".join(f"{r['qoe']:.2f}" for r in rs)
    print(f"| {key[0]} | {key[1]} | {len(rs)} | {statistics.mean(r['rebuffer_s'] for r in rs):.1f} ({rb}) | "
          f"{statistics.mean(r['qoe'] for r in rs):.2f} ({qs}) | {statistics.mean(sh) if sh else float('nan'):.2f} |")
