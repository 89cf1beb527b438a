"""Tables of the fifty-fourth session's hls.js runs (run.sh): per run, QoE per chunk, rebuffering,
switches, mean bitrate, start-up, bytes re-downloaded, the server's request log (playlist loads,
media requests, requests cancelled) and the MPC's decisions (the page's abr_reasons, at most 200);
next to a competitor also the video's share. Then the means per setting, trace and scheme.
Usage: python3 table.py RUN_DIR... (a run's page.json, or the page-abr.json extract kept in runs/)"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def run_row(d: Path) -> dict:
    s = json.loads((d / "summary.json").read_text())
    page_file = d / "page.json" if (d / "page.json").exists() else d / "page-abr.json"  # kept runs: the extract
    page = json.loads(page_file.read_text())
    playlists = media = cancels = 0
    requests: list[tuple[int, str]] = []
    for ev in sorted((d / "server").glob("*/events.jsonl")):
        for line in ev.read_text().splitlines():
            e = json.loads(line)
            if e["event"] == "request":
                if e["path"].endswith(".m3u8"):
                    playlists += 1
                elif "/seg-" in e["path"]:
                    media += 1
                if e.get("range") is None:
                    requests.append((e["time_us"], e["path"]))
            elif e["event"] == "cancel":
                cancels += 1
    # A flap's trace in the request log (e2e/play-hls.e2e.test.ts checks the same): a level whose playlist
    # was loaded before the last fragment request and never had a fragment asked for at it.
    paths = [p for _, p in sorted(requests)]
    frag = [i for i, p in enumerate(paths) if re.search(r"/seg-\d+-\d+\.m4s$", p)]
    levels = {re.search(r"/seg-(\d+)-", paths[i]).group(1) for i in frag}
    unused = [m.group(1) for p in paths[: max(frag, default=0)] if (m := re.search(r"/hls-(\d+)\.m3u8$", p)) and m.group(1) not in levels]
    console = (d / "console.log").read_text() if (d / "console.log").exists() else ""
    row = {"run": d.name, "qoe": s["qoe_per_chunk"], "rebuf": s["rebuffer_s"], "switches": s["switches"],
           "kbps": s["bitrate_kbps_mean"], "startup": s["startup_s"], "redl_kB": s["redownloaded_bytes"] / 1000,
           "playlists": playlists, "media": media, "cancels": cancels, "decisions": len(page.get("abr_reasons", [])),
           "unused_playlists": len(unused), "aborted": console.count("networkError aborted"),
           "timeouts": console.count("fragLoadTimeOut")}
    comp = d / "competitor-summary.json"
    if comp.exists():
        row["share"] = json.loads(comp.read_text())["video_share"]
    return row


def main() -> None:
    rows = [run_row(Path(a)) for a in sys.argv[1:] if (Path(a) / "summary.json").exists()]
    keys = ["qoe", "rebuf", "switches", "kbps", "startup", "redl_kB", "playlists", "media", "cancels", "decisions",
            "unused_playlists", "aborted", "timeouts"]
    if any("share" in r for r in rows):
        keys.append("share")
    print("| run | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    groups = defaultdict(list)
    for r in rows:
        print(f"| {r['run']} | " + " | ".join(f"{r[k]:.2f}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys) + " |")
        tag, rest = r["run"].split("-", 1)  # setting-scheme-trace-round
        scheme, tr, _ = rest.rsplit("-", 2)
        groups[(tag, tr, scheme)].append(r)
    print()
    print("| setting | trace | scheme | runs | " + " | ".join(f"mean {k}" for k in keys) + " |")
    print("|---" * (len(keys) + 4) + "|")
    for (tag, tr, scheme), rs in sorted(groups.items()):
        print(f"| {tag} | {tr} | {scheme} | {len(rs)} | " + " | ".join((f"{statistics.mean(r[k] for r in rs):.2f}" if all(k in r for r in rs) else "–") for k in keys) + " |")


main()
