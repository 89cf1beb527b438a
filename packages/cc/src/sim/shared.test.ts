import { describe, expect, it } from "vitest";
import type { NuwaConfig } from "../config.js";
import { jainIndex, simulateShared } from "./shared.js";
import { constantRateTrace } from "./trace.js";

/** Five Nuwa flows, 2 s apart, on a constant 6 Mbit/s link; fairness over 20 s to the end. */
function fiveFlowsOn6Mbps(duration_s: number, config: Partial<NuwaConfig>) {
  return simulateShared({
    trace: constantRateTrace(6e6, 1000),
    duration_s,
    fair_from_s: 20,
    flows: Array.from({ length: 5 }, (_, i) => ({ start_s: i * 2, config })),
  });
}

describe("simulateShared (flows sharing one bottleneck)", () => {
  it("Jain's index: 1 for equal shares, 1/n for one taker, errors on bad input", () => {
    expect(jainIndex([3, 3, 3])).toBeCloseTo(1, 12);
    expect(jainIndex([5, 0, 0, 0])).toBeCloseTo(0.25, 12);
    expect(() => jainIndex([])).toThrow(RangeError);
    expect(() => jainIndex([1, -1])).toThrow(/finite and >= 0/);
    expect(() => jainIndex([0, 0])).toThrow(/all values are zero/);
    expect(() => simulateShared({ trace: constantRateTrace(6e6, 1000), duration_s: 1, flows: [] })).toThrow(/no flows/);
  });

  it("the additive part of the increase brings latecomers (5 flows, 2 s apart) to an equal share (AIMD, Chiu & Jain 1989)", () => {
    // the raw Qd signal, as when the additive part was introduced (backlog.test.ts: the default signal)
    const run = (a: number) => fiveFlowsOn6Mbps(60, { additive_increase_mss: a, qd_source: "raw" });
    const without = run(0);
    const withAi = run(4);
    // Without it any split is an equilibrium and the early flows keep their lead.
    expect(without.jain_index).toBeLessThan(0.8); // measured 0.79 (0.73 before the one engine paced the senders, 0.55 with the four-packet floor)
    expect(withAi.jain_index).toBeGreaterThan(0.93); // measured 0.99 (0.95 before the one engine paced the senders, 0.98 with the four-packet floor)
    expect(withAi.utilization).toBeGreaterThan(0.97);
    expect(withAi.loss_rate).toBe(0);
  });

  it("the delivery-rate cap is what holds a shared queue under the service-delay signal (5 flows on 6 Mbit/s, 2 s apart)", () => {
    // Thirty-sixth session: each flow's service delay leaves out the wait before its first delivery,
    // other flows' packets included, so the tanh rule alone lets the shared queue grow; the cap
    // (window <= own max delivery rate x (min RTT + Td)) bounds it at Td plus the filter's overshoot.
    // Measured: cap on p95 79 ms, Jain 0.993; off 1665 ms, 0.469. A longer filter (1000 ms) raised
    // the 18 dev traces' mean utilization 0.945 -> 0.956 (SIMULATED) but let 20 flows on 24 Mbit/s
    // build p95 421 ms (83 with 300 ms) at Jain 0.896: not shipped (docs/BENCHMARKS.md).
    const run = (rate_cap: boolean) => fiveFlowsOn6Mbps(40, { rate_cap });
    const capped = run(true);
    const uncapped = run(false);
    expect(uncapped.queuing_delay_ms.p95).toBeGreaterThan(500);
    expect(capped.queuing_delay_ms.p95).toBeLessThan(150);
    expect(capped.jain_index).toBeGreaterThan(0.95);
    expect(capped.utilization).toBeGreaterThan(0.97);
  });
});
