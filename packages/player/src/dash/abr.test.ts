import { describe, expect, it } from "vitest";
import { abrSafetyFactor, chooseBitrateKbps } from "./abr.js";

const LADDER = [300, 750, 1200, 1850, 2850, 4300, 6000, 8000];

describe("chooseBitrateKbps (Nuwa ABR rule)", () => {
  it("starts at the highest rung within the safety-discounted estimate", () => {
    const c = chooseBitrateKbps(LADDER, null, 4000, "busy_period", 0);
    expect(c.budget_kbps).toBeCloseTo(4000 * abrSafetyFactor(0, "busy_period"));
    expect(c.kbps).toBe(1850); // 4000 × 0.9 × 0.6 = 2160
  });

  it("climbs one rung at a time on a low buffer, jumps on a healthy one", () => {
    expect(chooseBitrateKbps(LADDER, 750, 9000, "busy_period", 2).kbps).toBe(750); // build the buffer first
    expect(chooseBitrateKbps(LADDER, 750, 9000, "busy_period", 5).kbps).toBe(1200);
    expect(chooseBitrateKbps(LADDER, 750, 9000, "busy_period", 12).kbps).toBe(8000); // 9000 × 0.9 = 8100
  });

  it("holds through a dip the buffer can absorb, drops when the estimate is below the bitrate", () => {
    // 2000 kbit/s still carries 1850 kbit/s; only the safety margin says lower.
    expect(chooseBitrateKbps(LADDER, 1850, 2000, "busy_period", 15).kbps).toBe(1850);
    expect(chooseBitrateKbps(LADDER, 1850, 2000, "busy_period", 5).kbps).toBe(1850);
    expect(chooseBitrateKbps(LADDER, 1850, 2000, "busy_period", 3).kbps).toBeLessThan(1850);
    expect(chooseBitrateKbps(LADDER, 1850, 1000, "busy_period", 15).kbps).toBe(750);
  });

  it("never goes below the lowest rung and rejects bad input", () => {
    expect(chooseBitrateKbps(LADDER, 300, 50, "delivery_rate", 0).kbps).toBe(300);
    expect(() => chooseBitrateKbps([], null, 1000, "busy_period", 0)).toThrow(RangeError);
    expect(() => chooseBitrateKbps(LADDER, null, Number.NaN, "busy_period", 0)).toThrow(RangeError);
  });
});
