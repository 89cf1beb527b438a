"""One row per run: trains on/off, first switch (s from the session's config event), switches,
rebuffering s, video share next to Cubic, p95 ms; and the train answers. Reads a run directory
as ./nuwa play or ./nuwa mix left it (RUN.log beside it) or as kept here (RUN/RUN.log,
RUN/events.jsonl). Usage: python3 table.py docs/bench/s47-train/runs/NAME..."""
import os

CODE = {"umts-lone-": "711d5ae", "b-": "f6a3dac", "ab-": "f6a3dac", "mix-umts-lone": "f6a3dac",
        "c-": "4101e94", "d-": "120d86a", "e-": "128b678"}
"""The commit each run's server ran, by run-name prefix (the forty-seventh session's scripts)."""
import glob, json, re, sys
print("| run | code | trains | first switch s | switches | rebuffering s | video share | p95 ms | train answers (s: packets of others; fast = read together) |")
print("|---|---|---|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    d = d.rstrip("/")
    name = os.path.basename(d)
    kept = os.path.exists(f"{d}/events.jsonl")
    log = open(f"{d}/{name}.log" if kept else d + ".log").read()
    g = lambda pat: (m.group(1) if (m := re.search(pat, log)) else "–")
    out, sw, ntr = [], [], 0
    files = [f"{d}/events.jsonl"] if kept else sorted(
        glob.glob(d + "/server/*/events.jsonl") + glob.glob(d + "/logs-nuwa/*/events.jsonl"))
    rows_all = [json.loads(line) for f in files for line in open(f) if line.strip()]
    t0 = None
    for r in rows_all:
        if r["event"] == "config":
            t0 = r["time_us"]  # the session this row and the ones after it belong to
            continue
        if t0 is None:
            continue
        if True:
            if r["event"] == "train":
                v = "fast" if r.get("read_together") else f"{r['others_packets']:.1f}"
                out.append(f"{(r['t_us']-t0)/1e6:.1f}: {v}")
            if r["event"] == "switch":
                sw.append((r["t_us"] - t0) / 1e6)
    evs = "".join(open(f).read() for f in files)
    trains = "off" if 'train_own_packets\\": null' in evs else "on"
    share = g(r"video share ([\d.]+)")
    p95 = g(r"p95 (\d+) ms") if "mix" not in name else g(r"p95 queuing ([\d.]+) ms")
    reb = g(r"rebuffering ([\d.]+) s")
    nsw = g(r"switches (\d+)\n") if "mix" in name else str(len(sw))
    code = next((c for k, c in CODE.items() if name.startswith(k)), "")
    print(f"| {name} | {code} | {trains} | {f'{min(sw):.1f}' if sw else '–'} | {nsw} | {reb} | {share} | {p95} | {', '.join(out) if out else '–'} |")
