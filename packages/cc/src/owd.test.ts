import { describe, expect, it } from "vitest";
import { OneWayDelaySampler } from "./owd.js";

describe("OneWayDelaySampler (nuwa-icpads Eq. 1, sign corrected)", () => {
  it("reports queuing delay as OWD − min OWD, positive when a queue builds", () => {
    const s = new OneWayDelaySampler(2000, 10_000_000);
    expect(s.sample(1_000, 26_000).queuing_delay_us).toBe(0); // OWD 25 ms: the base
    expect(s.sample(2_000, 57_000).queuing_delay_us).toBe(30_000); // OWD 55 ms: 30 ms of queue
    // The paper's printed D_c = (S_t − S_m) − (R_t − R_m) would be −30 ms here.
    expect((2_000 - 1_000) - (57_000 - 26_000)).toBe(-30_000);
  });

  it("cancels any constant clock offset", () => {
    for (const offset of [0, 1e12, -5e9, 123_456.5]) {
      const s = new OneWayDelaySampler(2000, 10_000_000);
      const q = [s.sample(0 + offset, 25_000), s.sample(1000 + offset, 36_000), s.sample(12_000 + offset, 37_000)].map((x) => x.queuing_delay_us);
      expect(q).toEqual([0, 10_000, 0]);
    }
  });

  it("keeps its minimum through a standing queue, and a drain probe lets the base rise", () => {
    const s = new OneWayDelaySampler(2000, 1_000_000);
    s.sample(0, 25_000);
    // A standing 20 ms queue for 3 s: the base must not expire into it.
    let t = 0;
    for (let i = 1; i <= 300; i++) s.sample((t = i * 10_000), t + 45_000);
    expect(s.baseOwdUs).toBe(25_000);
    expect(s.probeDue(t)).toBe(true);
    // The route got 5 ms longer: a probe sees 30 ms with the queue drained and adopts it.
    s.startProbe();
    s.sample(t + 20_000, t + 20_000 + 30_000);
    expect(s.endProbe(t + 200_000)).toBe(5000);
    expect(s.baseOwdUs).toBe(30_000);
    expect(s.probeDue(t + 300_000)).toBe(false);
  });

  it("rejects non-finite and backwards timestamps", () => {
    const s = new OneWayDelaySampler(2000, 1e7);
    s.sample(0, 100);
    expect(() => s.sample(Number.NaN, 200)).toThrow(RangeError);
    expect(() => s.sample(0, Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => s.sample(0, 50)).toThrow(/backwards/);
  });
});
