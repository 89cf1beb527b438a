"""The forty-eighth session's runs: one row per `./nuwa play` run directory (named
[lone-]<scheme>-<trace>-<n>, as ab.sh and lone.sh write them, or as keep.py kept them in runs/),
then the mean per trace, scheme and setting, then when the stalls came (before or after 20 s of
playback: the start, when the competitor arrives, or later, when the flow is sender-driven).
Usage: python3 docs/bench/s48-ahead/table.py RUN_DIR..."""
import json
import statistics
import sys
from pathlib import Path

rows = []
for arg in sys.argv[1:]:
    d = Path(arg)
    s, c = d / "summary.json", d / "competitor-summary.json"
    if not s.exists():
        continue
    m = json.loads(s.read_text())
    comp = json.loads(c.read_text()) if c.exists() else {}
    name = d.name
    lone = name.startswith("lone-")
    scheme, trace, n = name.removeprefix("lone-").rsplit("-", 2)
    fa = m.get("fetch_ahead") or {}
    rows.append({"run": name, "setting": "alone" if lone else "next to Cubic", "trace": trace,
                 "scheme": scheme, "valid": comp.get("emulator_valid", (m.get("emulator") or {}).get("valid", True)),
                 "rebuffer_s": m["rebuffer_s"], "qoe": m["qoe_per_chunk"], "kbps": m["bitrate_kbps_mean"],
                 "switches": m["switches"], "share": comp.get("video_share"),
                 "fa": f"{fa.get('used', 0)}/{fa.get('discarded', 0)}/{fa.get('failed', 0)}",
                 "wasted_mb": (fa.get("wasted_bytes", 0) + m.get("redownloaded_bytes", 0) + m.get("abandoned_bytes", 0)) / 1e6,
                 "p95": (m.get("queuing_delay_ms") or {}).get("p95"), "dir": d})
print("| run | valid | rebuffering s | QoE per chunk | mean kbit/s | switches | video share | p95 ms | fetched ahead used/discarded/failed | wasted MB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    share = "–" if r["share"] is None else f"{r['share']:.2f}"
    p95 = "–" if r["p95"] is None else f"{r['p95']:.0f}"
    print(f"| {r['run']} | {r['valid']} | {r['rebuffer_s']:.1f} | {r['qoe']:.2f} | {r['kbps']:.0f} | {r['switches']} | {share} | {p95} | {r['fa']} | {r['wasted_mb']:.2f} |")
print()
print("| setting | trace | scheme | valid runs | rebuffering s, mean (each) | QoE per chunk, mean (each) | mean kbit/s | video share, mean |")
print("|---|---|---|---|---|---|---|---|")
for key in sorted({(r["setting"], r["trace"], r["scheme"]) for r in rows}):
    rs = [r for r in rows if (r["setting"], r["trace"], r["scheme"]) == key and r["valid"]]
    if not rs:
        continue
    sh = [r["share"] for r in rs if r["share"] is not None]
    rb = ", ".join(f"{r['rebuffer_s']:.1f}" for r in rs)
    qs = ", ".join(f"{r['qoe']:.2f}" for r in rs)
    share = f"{statistics.mean(sh):.2f}" if sh else "–"
    print(f"| {key[0]} | {key[1]} | {key[2]} | {len(rs)} | {statistics.mean(r['rebuffer_s'] for r in rs):.1f} ({rb}) | "
          f"{statistics.mean(r['qoe'] for r in rs):.2f} ({qs}) | {statistics.mean(r['kbps'] for r in rs):.0f} | {share} |")

print()
print("| run | QUIC connections | first switch to sender-driven, s | page stalls before 20 s, s | after 20 s, s |")
print("|---|---|---|---|---|")
for r in rows:
    d = r["dir"]
    if (d / "timeline.json").exists():
        t = json.loads((d / "timeline.json").read_text())
        stalls, sw = t["stalls_s"], sorted(s for s, mode in t["switches_s"] if mode == "sender")
        conns = t.get("connections", "–")
    elif (d / "page.json").exists():
        p = json.loads((d / "page.json").read_text())
        stalls = [[s["start_us"] / 1e6, (s["end_us"] - s["start_us"]) / 1e6] for s in p["stalls"]]
        ev = [json.loads(x) for f in d.glob("server/*/events.jsonl") for x in open(f) if x.strip()]
        t0 = min((e["time_us"] for e in ev if e["event"] == "config"), default=0)
        sw = sorted((e["t_us"] - t0) / 1e6 for e in ev if e["event"] == "switch" and e["to_mode"] == "sender")
        conns = len({f.parent.name.split("-")[1] for f in d.glob("server/*/events.jsonl")})
    else:
        continue
    early = sum(x for s, x in stalls if s < 20)
    late = sum(x for s, x in stalls if s >= 20)
    print(f"| {r['run']} | {conns} | {f'{sw[0]:.1f}' if sw else '–'} | {early:.1f} | {late:.1f} |")
