import { describe, expect, it } from "vitest";
import { DeliveryRateEstimator } from "./rate.js";

describe("DeliveryRateEstimator", () => {
  it("measures a constant rate", () => {
    const r = new DeliveryRateEstimator();
    for (let t = 0; t < 2_000_000; t += 1000) r.onBytes(t, 1250); // 10 Mbit/s
    expect(r.rateBps(1_999_999, 1_000_000)).toBeCloseTo(10e6, -4);
  });

  it("max-filters bursts and forgets old bins", () => {
    const r = new DeliveryRateEstimator();
    r.onBytes(0, 125_000); // 1 Mbit in one 10 ms bin
    expect(r.maxRateBps(50_000, 300_000, 100_000)).toBeCloseTo(10e6, -3);
    expect(r.rateBps(5_000_000, 1_000_000)).toBe(0);
    expect(r.totalBytes).toBe(125_000);
  });
});
