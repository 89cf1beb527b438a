import { describe, expect, it } from "vitest";
import { BusyPeriodRateEstimator, DeliveryRateEstimator } from "./rate.js";

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

describe("DeliveryRateEstimator.minRateBps", () => {
  it("is the slowest span inside the window: the rate a link that swings fell to", () => {
    const r = new DeliveryRateEstimator();
    // 1 s at 20 Mbit/s, then 200 ms at 4 Mbit/s, then 800 ms at 20 Mbit/s again
    for (let t = 0; t < 2_000_000; t += 1000) r.onBytes(t, t >= 1_000_000 && t < 1_200_000 ? 500 : 2500);
    expect(r.minRateBps(1_999_999, 1_000_000, 100_000)).toBeCloseTo(4e6, -4);
    const smooth = new DeliveryRateEstimator();
    for (let t = 0; t < 1_000_000; t += 1000) smooth.onBytes(t, 2500);
    expect(smooth.minRateBps(999_999, 1_000_000, 100_000)).toBeCloseTo(20e6, -4); // the same second without the dip
    expect(r.minRateBps(5_000_000, 1_000_000, 100_000)).toBe(0); // nothing for a second
  });
});

describe("BusyPeriodRateEstimator", () => {
  // A 4 Mbit/s bottleneck serves 1200-byte frames every 2.4 ms.
  const service_us = (1200 * 8 * 1e6) / 4e6;

  it("measures the bottleneck rate from a queued train even when the application idles between bursts", () => {
    const b = new BusyPeriodRateEstimator();
    let t = 0;
    for (let burst = 0; burst < 10; burst++) {
      // 40 frames enter an empty queue at once: frame i waits i service times.
      for (let i = 0; i < 40; i++) b.onFrame((t += service_us), i * service_us, 1200, 2000);
      t += 1_000_000; // the player idles for a second
    }
    const e = b.estimate(t);
    expect(e.bps).toBeCloseTo(4e6, -3);
    expect(e.busy_us).toBeGreaterThan(100_000);
  });

  it("ignores frames that did not queue behind their predecessor (the link may have idled)", () => {
    const b = new BusyPeriodRateEstimator();
    // Paced at 1 Mbit/s on a fast link: no queue, nothing to learn about the capacity.
    for (let i = 0; i < 1000; i++) b.onFrame(i * 9600, 0, 1200, 2000);
    expect(b.estimate(10_000_000).bps).toBeNaN();
    // A frame that waited less than the gap: not counted either.
    b.onFrame(10_000_000, 3000, 1200, 2000);
    b.onFrame(10_010_000, 5000, 1200, 2000);
    expect(b.estimate(10_010_000).busy_us).toBe(0);
  });

  it("forgets samples older than its maximum age and rejects bad windows", () => {
    const b = new BusyPeriodRateEstimator(500_000, 1_000_000);
    for (let i = 0; i < 200; i++) b.onFrame(i * service_us, 10_000, 1200, 2000);
    expect(b.estimate(200 * service_us).bps).toBeCloseTo(4e6, -3);
    expect(b.estimate(5_000_000).bps).toBeNaN();
    expect(() => new BusyPeriodRateEstimator(0)).toThrow(RangeError);
  });
});
