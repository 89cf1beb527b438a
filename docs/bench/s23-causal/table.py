"""Issue 14's per-trace bounds against senders that know only the past (twenty-third session).

Reads ``frontier-causal.json`` (``./nuwa frontier --causal --json ...`` at 60 s, 1000 packets,
25 ms each way; SIMULATED) and the twentieth session's end-to-end figures of ``nuwa`` and
``cubic`` (the 18-trace invocation in docs/BENCHMARKS.md, "Twentieth session"; copied below),
and prints, per trace: Nuwa's utilization and p95, the causal envelope's p95 at Nuwa's
utilization and the ratio, issue 14's per-trace bounds (utilization ≥ 0.95× Cubic's at p95 ≤
max(50 ms, 0.1× Cubic's)), the causal envelope's p95 at the needed utilization, and the members
of the grid that meet both bounds. Run: ``.venv/bin/python docs/bench/s23-causal/table.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from nuwa_lab.bench_report.frontier import frontier_p95_at
from nuwa_lab.bench_report.issue14 import (
    P95_CUBIC_FRACTION,
    P95_FLOOR_MS,
    UTIL_RATIO_MOST,
)

HERE = Path(__file__).resolve().parent
# trace: (nuwa util, nuwa p95 ms, cubic util, cubic p95 ms), end to end, twentieth session (2e2f184)
E2E = {
    "mahimahi-tmobile-umts-driving": (0.933, 418, 0.984, 7395),
    "norway-hsdpa-bus-1": (0.991, 45, 0.985, 2581),
    "norway-hsdpa-train-13": (0.989, 55, 1.000, 3221),
    "nyc2018-unknownop-3g-subway": (0.927, 145, 0.957, 7930),
    "nyc2018-unknownop-3g-subway-cross": (0.957, 82, 0.973, 1115),
    "nyc2018-unknownop-3g-timessquare-1": (0.969, 101, 0.969, 2530),
    "mnwild-tmobile-5g-sa-lowband-walking-r20061": (0.649, 35, 0.903, 260),
    "lumos-vzw-lte-driving-50087": (0.690, 34, 0.788, 421),
    "mahimahi-att-lte-driving": (0.974, 68, 0.965, 1308),
    "mahimahi-tmobile-lte-short": (0.925, 125, 0.944, 1076),
    "mahimahi-verizon-lte-short": (0.939, 103, 0.975, 2758),
    "nyc2018-tmobile-lte-timessquare-static-cross": (0.972, 69, 1.000, 1226),
    "nyc2018-unknownop-lte-subway-cross": (0.850, 187, 0.973, 1680),
    "nyc2019-unknownop-lte-bus-3114405": (0.956, 73, 0.998, 1174),
    "nyc2019-unknownop-lte-stationary-home3": (0.963, 79, 0.999, 796),
    "nyc2019-unknownop-lte-taxi-1": (0.975, 60, 1.000, 487),
    "nyc2019-unknownop-lte-walking-3201711": (0.783, 253, 0.964, 1884),
    "nyc2019-unknownop-lte-walking-3205967": (0.935, 106, 0.988, 1131),
}


def main() -> None:
    fr = json.loads((HERE / "frontier-causal.json").read_text())
    print("| trace | Nuwa util / p95 ms | causal p95 at Nuwa's util (ratio) | bound: util ≥ / p95 ≤ "
          "| causal p95 at that util | Nuwa meets | a causal member meets | members that meet (M/q/h) |")
    print("|---|---|---|---|---|---|---|---|")
    reach = nuwa_ok = 0
    per_member: dict[str, int] = {}
    for t, (u, p, uc, pc) in E2E.items():
        c = fr["traces"][t]["causal"]
        need, bound = UTIL_RATIO_MOST * uc, max(P95_FLOOR_MS, P95_CUBIC_FRACTION * pc)
        at_u, at_need = frontier_p95_at(c["envelope"], u), frontier_p95_at(c["envelope"], need)
        ok = [m for m in c["points"]
              if m["utilization"] >= need and m["p95_ms"] is not None and m["p95_ms"] <= bound]
        meets = u >= need and p <= bound
        reach += bool(ok)
        nuwa_ok += meets
        at_u_s = "above its range" if at_u is None else f"{at_u:.0f} ({p / max(at_u, 1.0):.2f}×)"
        at_need_s = "not reached" if at_need is None else f"{at_need:.0f}"
        members = " ".join(f"{m['lookback_ms']}/{m['quantile']}/{m['headroom_ms']}" for m in ok)
        for m in ok:
            k = f"{m['lookback_ms']}/{m['quantile']}/{m['headroom_ms']}"
            per_member[k] = per_member.get(k, 0) + 1
        print(f"| {t} | {u:.3f} / {p:.0f} | {at_u_s} | {need:.3f} / {bound:.0f} | {at_need_s} "
              f"| {'yes' if meets else 'no'} | {'yes' if ok else 'no'} | {members or '–'} |")
    print(f"\nNuwa meets both bounds on {nuwa_ok}/{len(E2E)}; some causal member on {reach}/{len(E2E)}.")
    best = sorted(per_member.items(), key=lambda kv: -kv[1])[:5]
    print("One member on every trace (M/q/h: traces where it meets both): "
          + ", ".join(f"{k}: {v}/{len(E2E)}" for k, v in best) + ".")


if __name__ == "__main__":
    main()
