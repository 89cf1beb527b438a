"""Copy what the forty-eighth session's tables read from each run (summary.json,
competitor-summary.json, the run's log, and timeline.json: the page's stalls and chunk log, the
segments fetched ahead, the server's switch events on the first session's clock, the number of
QUIC connections the page opened) into runs/.
Usage: python3 docs/bench/s48-ahead/keep.py RUN_DIR..."""
import glob
import json
import shutil
import sys
from pathlib import Path

out = Path(__file__).parent / "runs"
for arg in sys.argv[1:]:
    d = Path(arg)
    k = out / d.name
    k.mkdir(parents=True, exist_ok=True)
    for f in ("summary.json", "competitor-summary.json"):
        if (d / f).exists():
            shutil.copy(d / f, k / f)
    if Path(str(d) + ".log").exists():
        shutil.copy(str(d) + ".log", k / (d.name + ".log"))
    p = json.loads((d / "page.json").read_text())
    ev = [json.loads(line) for f in glob.glob(str(d / "server" / "*" / "events.jsonl")) for line in open(f) if line.strip()]
    t0 = min((e["time_us"] for e in ev if e["event"] == "config"), default=0)
    timeline = {
        "stalls_s": [[s["start_us"] / 1e6, (s["end_us"] - s["start_us"]) / 1e6] for s in p["stalls"]],
        "chunks": [[c["t_us"] / 1e6, c["index"], c["bitrate_kbps"]] for c in p["chunks"]],
        "fetch_ahead": [[f["t_us"] / 1e6, f["path"].rsplit("/", 1)[1], f["outcome"], f["bytes"]] for f in (p.get("fetch_ahead") or [])],
        "switches_s": sorted([(e["t_us"] - t0) / 1e6, e["to_mode"]] for e in ev if e["event"] == "switch"),
        "connections": len({Path(f).parent.name.split("-")[1] for f in glob.glob(str(d / "server" / "*" / "events.jsonl"))}),
    }
    (k / "timeline.json").write_text(json.dumps(timeline, separators=(",", ":")))
