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

  it("the additive part of the increase brings latecomers to an equal share (AIMD, Chiu & Jain 1989)", () => {
    const run = (a: number) =>
      simulateShared({
        trace: constantRateTrace(24e6, 1000),
        duration_s: 60,
        fair_from_s: 20,
        flows: Array.from({ length: 20 }, (_, i) => ({ start_s: i * 0.5, config: { additive_increase_mss: a } })),
      });
    const without = run(0);
    const withAi = run(4);
    // Without it any split is an equilibrium and the early flows keep their lead.
    expect(without.jain_index).toBeLessThan(0.8);
    expect(withAi.jain_index).toBeGreaterThan(0.85);
    expect(withAi.utilization).toBeGreaterThan(0.97);
    const total = withAi.goodput_bps.reduce((s, x) => s + x, 0);
    expect(total).toBeGreaterThan(0.95 * 24e6 * (1200 / 1504) * 0.9); // goodput counts frame bytes, the link wire bytes
  });
});
