"""Markdown rows for docs/BENCHMARKS.md "Sharing a bottleneck" from this folder's JSON
(written by run-shares.sh). Usage: .venv/bin/python docs/bench/s9-mix/table.py [PREFIX...]"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def row(name: str, r: dict) -> str:
    flows = " / ".join(f"{f['scheme']} {f['goodput_bps'] / 1e6:.2f} ({f['share']:.2f})"
                       for f in r["flows"])
    p95 = " / ".join(f"{f['queuing_delay_ms']['p95']:.0f}" if f['queuing_delay_ms']['p95']
                     is not None else "–" for f in r["flows"])
    starved = " / ".join(str(f["starved_s"]) for f in r["flows"])
    switches = " / ".join(str(f.get("switches", 0)) for f in r["flows"])
    valid = (r.get("emulator") or {}).get("valid", "sim")
    return (f"| {name} | {flows} | {r['jain_index']:.3f} | {r['utilization']:.3f} | {p95} | "
            f"{starved} | {switches} | {valid} |")


def main() -> None:
    prefixes = sys.argv[1:] or [""]
    print("| run | Mbit/s per flow over its life (share of the last 20 s) | Jain (last 20 s) | utilization | "
          "p95 queuing ms | starved s | switches | emulator valid |")
    print("|---|---|---|---|---|---|---|---|")
    for p in sorted(HERE.glob("*.json")):
        if any(p.stem.startswith(x.rstrip(".")) and (not x.endswith(".") or p.stem == x[:-1]) for x in prefixes):
            print(row(p.stem, json.loads(p.read_text())))


if __name__ == "__main__":
    main()
