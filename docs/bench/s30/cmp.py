"""Per-variant summary of a `./nuwa video-sim --json` file (thirtieth session), SIMULATED.

Usage: ``.venv/bin/python docs/bench/s30/cmp.py docs/bench/s30/vsim-dev.json``. Prints, per
variant: mean QoE per chunk over all cells, the same without T-Mobile UMTS (its 50 s near-dark
stretch dominates every mean), switches per run by trace family, up-switches, down-switches and
reversals per run (``VideoSimResult`` in packages/player/src/sim/video.ts), and the traces whose mean QoE is
more than 0.1 below the ``before`` variant's (the MPC without hysteresis).
"""

import collections
import json
import sys


def family(trace: str) -> str:
    """The dev set's family of a trace name: 3G, 4G or 5G."""
    if "3g" in trace or "hsdpa" in trace or "umts" in trace:
        return "3G"
    return "5G" if "5g" in trace else "4G"


def main(path: str) -> None:
    """Print the summary of one video-sim JSON file."""
    with open(path) as f:
        cells = json.load(f)["cells"]
    by: dict[str, dict[str, list[dict]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for c in cells:
        by[c["variant"]][c["trace"]].append(c)
    for v, traces in by.items():
        worse, qoe, qoe_ex = [], [], []
        switches: dict[str, list[float]] = collections.defaultdict(list)
        for t, cs in traces.items():
            q = sum(c["qoe"] for c in cs) / len(cs)
            qb = sum(c["qoe"] for c in by["before"][t]) / len(by["before"][t])
            if q < qb - 0.1:
                worse.append(f"{t} {q:.2f} < {qb:.2f}")
            qoe.append(q)
            if "umts" not in t:
                qoe_ex.append(q)
            for c in cs:
                switches[family(t)].append(c["switches"])
        sw = " ".join(f"{f} {sum(x) / len(x):.2f}" for f, x in sorted(switches.items()))
        mine = [c for cs in traces.values() for c in cs]
        kinds = " / ".join(f"{sum(c[k] for c in mine) / len(mine):.2f}" for k in ("up_switches", "down_switches", "reversals"))
        print(f"{v:12s} QoE {sum(qoe) / len(qoe):.3f}, without UMTS {sum(qoe_ex) / len(qoe_ex):.3f}; "
              f"switches {sw}; up / down / reversals {kinds}; worse by > 0.1: {worse}")


if __name__ == "__main__":
    main(sys.argv[1])
