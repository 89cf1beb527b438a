import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { causalFrontPoints, causalWindowPoint, type FrontierPoint, frontierEnvelope, frontierP95AtUtilization, frontierPoints, omniscientPacedPoint, omniscientWindowPoint } from "./frontier.js";
import { constantRateTrace, parseMahimahiTrace } from "./trace.js";

/** `n` opportunities at one instant every `period_ms` (a Mahimahi trace of one period). */
function instantBursts(n: number, period_ms: number): Uint32Array {
  return Uint32Array.from({ length: n }, () => period_ms);
}

/** One opportunity per ms for `on_ms`, then nothing for `off_ms` (one period). */
function onOff(on_ms: number, off_ms: number): Uint32Array {
  const t = Array.from({ length: on_ms }, (_, i) => i + 1);
  t.push(on_ms + off_ms);
  return Uint32Array.from(t);
}

describe("omniscient senders (offline frontier, issue 14)", () => {
  it("reach full utilization with almost no queue on a constant-rate trace", () => {
    const pts = frontierPoints(constantRateTrace(12e6), { duration_s: 10, headrooms_ms: [0, 10, 50], families: ["window"] });
    expect(pts[0]!.utilization).toBeGreaterThan(0.99);
    expect(pts[0]!.p95_ms).toBeLessThanOrEqual(1);
    // headroom h is a standing queue of h ms at a constant rate
    expect(pts[1]!.p95_ms).toBeGreaterThanOrEqual(9);
    expect(pts[1]!.p95_ms).toBeLessThanOrEqual(11);
    expect(pts[2]!.p95_ms).toBeGreaterThanOrEqual(49);
    expect(frontierP95AtUtilization(pts, 0.99)).toBeLessThanOrEqual(1);
  });

  it("on instant bursts every 200 ms: each packet waits RTT_base + h, all capacity used (by hand)", () => {
    // Window at t = capacity over (t + 25, t + 75 + h]: it opens 75 + h ms before a burst, when the
    // previous burst's ACKs are back (they return 25 ms after it, at most 200 − 75 − h ms before, for
    // h ≤ 100), so 10 packets leave at once, reach the queue 50 + h ms before the burst and leave in
    // it: queuing delay 50 + h for every packet; 10 × 1500 of 10 × 1504 bytes used.
    const pts = frontierPoints(instantBursts(10, 200), { duration_s: 12, headrooms_ms: [0, 20, 100], families: ["window"] });
    for (const p of pts) {
      expect(p.p95_ms).toBe(50 + p.headroom_ms);
      expect(p.utilization).toBeCloseTo(1500 / 1504, 3);
      expect(p.loss_rate).toBe(0);
    }
    expect(frontierP95AtUtilization(pts, 0.9)).toBe(50);
    expect(frontierP95AtUtilization(pts, 0.999)).toBeNaN(); // above every point's utilization
  });

  it("on a 200 ms on / 100 ms off trace: full utilization needs h ≥ the gap, at p95 = RTT_base + gap (by hand)", () => {
    // Window at t = capacity over (t + 25, t + 75 + h]. In the on phase it is 50 + h packets: 25 in
    // the pipe, 25 ACKs on their way back, a standing queue of h. From 75 + h ms before the gap it
    // shrinks 1/ms while ACKs return 1/ms: nothing is sent; the queue (h) is empty 50 ms before the
    // gap. For h ≤ 50 the window reaches 0 (its whole interval in the gap): 50 of every 200
    // opportunities wasted, utilization 0.75. For 50 ≤ h ≤ 100 it bottoms out at h − 50 packets and
    // sending resumes 100 − h ms before the gap ends: 100 − h wasted, utilization (100 + h) / 200.
    // For h ≥ 100 nothing is wasted. The 50 + h packets sent as the window grows before an on phase
    // reach the queue 50 + h ms early: p95 = 50 + h throughout.
    const o = { duration_s: 33, warmup_s: 3 }; // 100 whole periods measured
    const util = (h: number) => (h <= 50 ? 0.75 : h >= 100 ? 1 : (100 + h) / 200);
    const pts = frontierPoints(onOff(200, 100), { ...o, headrooms_ms: [0, 40, 60, 80, 100, 150], families: ["window"] });
    for (const p of pts) {
      expect(p.utilization).toBeCloseTo(util(p.headroom_ms), 2);
      expect(p.p95_ms).toBe(50 + p.headroom_ms);
    }
    // between h = 60 (0.80, 110 ms) and h = 80 (0.90, 130 ms)
    expect(frontierP95AtUtilization(pts, 0.9)).toBeGreaterThan(125);
    expect(frontierP95AtUtilization(pts, 0.9)).toBeLessThanOrEqual(130);
    expect(frontierP95AtUtilization(pts, 0.999)).toBeCloseTo(150, 0); // RTT_base + gap
    expect(frontierP95AtUtilization(pts.slice(0, 2), 0.9)).toBeNaN(); // h ≤ 50 never gets there
    // Shifting the forecast one RTT back makes the sender the omniscient scheduler: no queue, no waste.
    const aligned = omniscientWindowPoint(onOff(200, 100), 0, { ...o, offset_ms: -50 });
    expect(aligned.utilization).toBeGreaterThan(0.99);
    expect(aligned.p95_ms).toBe(0);
  });

  it("paced family: even arrivals per 50 ms interval, h ahead of their capacity (by hand)", () => {
    // Constant rate: the arrival rate is the capacity rate whatever h (h moves which capacity the
    // arrivals carry, not how much): no standing queue, only the phase of arrivals against
    // opportunities (< 1 ms) and the one ms in ~375 without an opportunity.
    const c = frontierPoints(constantRateTrace(12e6), { duration_s: 10, headrooms_ms: [0, 10], families: ["paced"] });
    expect(c.map((p) => p.family)).toEqual(["paced", "paced"]);
    for (const p of c) {
      expect(p.utilization).toBeGreaterThan(0.99);
      expect(p.p95_ms).toBeLessThanOrEqual(2);
    }
    // 10 opportunities at B = 200 k. h = 10: B lies in [kI + 10, kI + 60) for the interval
    // [B − 50, B), whose 15 040 bytes arrive at 300.8 bytes/ms: the n-th packet at B − 50 +
    // ceil(4.987 n) − 1, i.e. 46, 41, …, 1 ms before B (up to 5 ms earlier once the 40 bytes
    // left per burst have added up): every packet served at B, p95 = the earliest, 46–51 ms.
    // h = 0: B starts the interval [B, B + 50): every packet just misses it and waits ~150–200 ms.
    const [h0, h10] = frontierPoints(instantBursts(10, 200), { duration_s: 8, headrooms_ms: [0, 10], families: ["paced"] });
    expect(h10!.utilization).toBeCloseTo(1500 / 1504, 2);
    expect(h10!.p95_ms).toBeGreaterThanOrEqual(46);
    expect(h10!.p95_ms).toBeLessThanOrEqual(51);
    expect(h0!.p95_ms).toBeGreaterThanOrEqual(150);
    expect(() => omniscientPacedPoint(constantRateTrace(1e6), 0, { paced_interval_ms: 0 })).toThrow(RangeError);
  });

  it("the envelope drops dominated points and interpolates linearly in utilization", () => {
    const pt = (headroom_ms: number, utilization: number, p95_ms: number): FrontierPoint => ({ family: "window", headroom_ms, utilization, p95_ms, loss_rate: 0 });
    const pts = [pt(0, 0.8, 40), pt(5, 0.7, 60), pt(10, 0.9, 60), pt(20, 1.0, 100), pt(30, 0.95, 120), pt(40, 0.5, Number.NaN)];
    expect(frontierEnvelope(pts).map((p) => p.headroom_ms)).toEqual([0, 10, 20]);
    expect(frontierP95AtUtilization(pts, 0.6)).toBe(40);
    expect(frontierP95AtUtilization(pts, 0.85)).toBeCloseTo(50, 9);
    expect(frontierP95AtUtilization(pts, 0.95)).toBeCloseTo(80, 9);
    expect(frontierP95AtUtilization(pts, 1.0)).toBe(100);
    expect(frontierP95AtUtilization(pts, 1.01)).toBeNaN();
    expect(frontierP95AtUtilization([], 0.5)).toBeNaN();
    expect(() => omniscientWindowPoint(constantRateTrace(1e6), -1)).toThrow(RangeError);
  });

  it("is non-decreasing in utilization on a bursty LTE trace", () => {
    const trace = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/4G/mahimahi-tmobile-lte-short.mahi"), "utf8"));
    const pts = frontierPoints(trace, { duration_s: 12, headrooms_ms: [0, 10, 30, 100, 300], families: ["window"] });
    const us = pts.map((p) => p.utilization);
    expect(Math.max(...us)).toBeGreaterThan(0.95);
    let prev = 0;
    for (let u = 0.5; u <= Math.max(...us); u += 0.01) {
      const p = frontierP95AtUtilization(pts, u);
      expect(p).toBeGreaterThanOrEqual(prev);
      prev = p;
    }
    // bursty LTE: a perfect-forecast window still queues (docs/DESIGN.md §3 "the limit is physical")
    expect(frontierP95AtUtilization(pts, 0.9)).toBeGreaterThan(20);
  });
});

describe("causal window senders (issue 14: what knowing only the past reaches)", () => {
  it("on a constant-rate trace: full utilization, a standing queue of h ms", () => {
    const pts = causalFrontPoints(constantRateTrace(12e6), { duration_s: 10 }, [
      { lookback_ms: 200, quantile: 50, headroom_ms: 0 },
      { lookback_ms: 200, quantile: 50, headroom_ms: 50 },
    ]);
    expect(pts[0]!.family).toBe("causal");
    expect(pts[0]!.lookback_ms).toBe(200);
    expect(pts[0]!.utilization).toBeGreaterThan(0.99);
    expect(pts[0]!.p95_ms).toBeLessThanOrEqual(2);
    expect(pts[1]!.utilization).toBeGreaterThan(0.99);
    expect(pts[1]!.p95_ms).toBeGreaterThanOrEqual(48);
    expect(pts[1]!.p95_ms).toBeLessThanOrEqual(52);
  });

  it("cannot see a rise coming: after the rate triples it under-fills where the omniscient window does not", () => {
    // 4 Mbit/s for 1 s, then 12 Mbit/s for 1 s, looped. The causal window learns the rise one
    // one-way delay plus a rate span late and covers only RTT_base of it (h = 0); the omniscient one
    // opens before the rise reaches the queue.
    const slow = Array.from({ length: 333 }, (_, i) => Math.round(((i + 1) * 1000) / 333));
    const fast = Array.from({ length: 1000 }, (_, i) => 1001 + i);
    const trace = Uint32Array.from([...slow, ...fast]);
    const o = { duration_s: 20 };
    const causal = causalWindowPoint(trace, { lookback_ms: 200, quantile: 50, headroom_ms: 0 }, o);
    const omniscient = omniscientWindowPoint(trace, 0, o);
    expect(omniscient.utilization).toBeGreaterThan(0.96);
    expect(causal.utilization).toBeLessThan(omniscient.utilization - 0.02);
    // and at the fall it holds a window of the old, higher rate: a queue the omniscient one never builds
    expect(omniscient.p95_ms).toBeLessThanOrEqual(2);
    expect(causal.p95_ms).toBeGreaterThan(20);
  });

  it("the maximum over a long look-back fills a bursty link at the price of its bursts' queue", () => {
    const trace = parseMahimahiTrace(readFileSync(resolve(import.meta.dirname, "../../../../traces/4G/mahimahi-tmobile-lte-short.mahi"), "utf8"));
    const [median, max] = causalFrontPoints(trace, { duration_s: 20 }, [
      { lookback_ms: 200, quantile: 50, headroom_ms: 0 },
      { lookback_ms: 1000, quantile: 100, headroom_ms: 0 },
    ]);
    expect(max!.utilization).toBeGreaterThan(median!.utilization + 0.05);
    expect(max!.p95_ms).toBeGreaterThan(median!.p95_ms);
  });

  it("refuses a bad member, and stays out of the frontier's families", () => {
    const t = constantRateTrace(12e6);
    expect(() => causalWindowPoint(t, { lookback_ms: 10, quantile: 50, headroom_ms: 0 })).toThrow(RangeError);
    expect(() => causalWindowPoint(t, { lookback_ms: 200, quantile: 101, headroom_ms: 0 })).toThrow(RangeError);
    expect(() => causalWindowPoint(t, { lookback_ms: 200, quantile: 50, headroom_ms: -1 })).toThrow(RangeError);
    expect(() => frontierPoints(t, { duration_s: 1, families: ["causal"] })).toThrow(/not part of the frontier/);
  });
});
