"""BBR's and PBQ's min RTT across the outages of a trace, the draft's BBRUpdateMinRTT against
ours (bbr_model.OUTAGE_MIN_RTTS), in the sender simulator (issue 17's known fault).

Usage: .venv/bin/python docs/bench/s24-outage/minrtt.py [TRACE] [DURATION_S] [DELAY_MS]
Prints, per scheme and rule: the largest min RTT the controller held, the seconds it held a
min RTT above 4x the lowest, the flow's utilization and p95 queuing delay.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import nuwa_server.cc.bbr_machine as bbr_module
from nuwa_lab.emulator.trace import load_trace
from nuwa_lab.sendersim import quic
from nuwa_lab.sendersim.run import SimConfig, simulate

ROOT = Path(__file__).resolve().parents[3]


def main() -> None:
    trace_path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "traces/4G/mahimahi-att-lte-driving.mahi"
    duration_s = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    delay_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 25.0
    trace = load_trace(trace_path)
    seen: list[tuple[float, float]] = []
    orig = quic.QuicSender.on_ack

    def on_ack(self: quic.QuicSender, ranges: object, ack_delay_s: float) -> None:
        orig(self, ranges, ack_delay_s)  # type: ignore[arg-type]
        cc = self.recovery._cc
        m = getattr(cc, "min_rtt_s", math.inf)
        if math.isfinite(m):
            seen.append((self.sim.now_ms / 1000, m))

    quic.QuicSender.on_ack = on_ack  # type: ignore[method-assign]
    keep = bbr_module.OUTAGE_MIN_RTTS
    for scheme in ("bbr", "pbq"):
        for rule in ("draft", "ours"):
            bbr_module.OUTAGE_MIN_RTTS = math.inf if rule == "draft" else keep
            seen.clear()
            cfg = SimConfig(duration_s=duration_s, one_way_delay_ms=delay_ms, queue_packets=1000)
            out = simulate([scheme], trace, cfg)
            f = out["flows"][0]
            low = min(m for _, m in seen)
            high_s = sum(t1 - t0 for (t0, m), (t1, _) in itertools.pairwise(seen) if m > 4 * low)
            print(f"{scheme:4} {rule:5}: min RTT max {max(m for _, m in seen) * 1000:8.0f} ms "
                  f"(lowest {low * 1000:.0f} ms), above 4x the lowest for {high_s:5.1f} s; "
                  f"utilization {out['utilization']:.3f}, "
                  f"p95 queuing {f['queuing_delay_ms']['p95']:.0f} ms", flush=True)
    bbr_module.OUTAGE_MIN_RTTS = keep


if __name__ == "__main__":
    main()
