import { describe, expect, it } from "vitest";
import { jainIndex, simulateShared } from "./shared.js";
import { constantRateTrace } from "./trace.js";

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
    const run = (a: number) =>
      simulateShared({
        trace: constantRateTrace(6e6, 1000),
        duration_s: 60,
        fair_from_s: 20,
        flows: Array.from({ length: 5 }, (_, i) => ({ start_s: i * 2, config: { additive_increase_mss: a, qd_source: "raw" as const } })),
      });
    const without = run(0);
    const withAi = run(4);
    // Without it any split is an equilibrium and the early flows keep their lead.
    expect(without.jain_index).toBeLessThan(0.8); // measured 0.79 (0.73 before the one engine paced the senders, 0.55 with the four-packet floor)
    expect(withAi.jain_index).toBeGreaterThan(0.93); // measured 0.99 (0.95 before the one engine paced the senders, 0.98 with the four-packet floor)
    expect(withAi.utilization).toBeGreaterThan(0.97);
    expect(withAi.loss_rate).toBe(0);
  });
});
