"""The random-loss table (docs/BENCHMARKS.md, fiftieth session) from run.sh's JSON files:
python3 docs/bench/s50-loss/table.py docs/bench/s50-loss docs/bench/s50-loss/sim (the second folder
holds `./nuwa mix --sim` runs of the same settings, sim-loss-SCHEME-MBPS-LOSS.json; optional)."""

import json
import sys
from pathlib import Path


def total_mbps(p: Path) -> tuple[float, float, bool] | None:
    if not p.exists():
        return None
    d = json.loads(p.read_text())
    valid = d.get("mode") == "sim" or bool((d.get("emulator") or {}).get("valid"))
    return sum(f["goodput_bps"] for f in d["flows"]) / 1e6, d["utilization"], valid


def main() -> None:
    e2e = Path(sys.argv[1])
    sim = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    print("| link | loss | pbq | bbr | cubic | pbq ≥ bbr | pbq ≥ 2× cubic |")
    print("|---|---|---|---|---|---|---|")
    for mbps in (10, 20):
        for loss in ("0.01", "0.025"):
            for kind, base, fmt in (("end to end", e2e, "{s}-{m}-{l}.json"),
                                    ("SIMULATED", sim, "sim-loss-{s}-{m}-{l}.json")):
                if base is None:
                    continue
                got = {s: total_mbps(base / fmt.format(s=s, m=mbps, l=loss))
                       for s in ("pbq", "bbr", "cubic")}
                if any(v is None for v in got.values()):
                    continue
                cell = {s: f"{v[0]:.2f}" + ("" if v[2] else " (invalid)") for s, v in got.items()}
                p, b, c = (got[s][0] for s in ("pbq", "bbr", "cubic"))
                print(f"| {mbps} Mbit/s ({kind}) | {float(loss) * 100:g} % | {cell['pbq']} | "
                      f"{cell['bbr']} | {cell['cubic']} | {'yes' if p >= b else 'no'} | "
                      f"{'yes' if p >= 2 * c else 'no'} ({p / c:.2f}×) |")


if __name__ == "__main__":
    main()
