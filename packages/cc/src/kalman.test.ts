import { describe, expect, it } from "vitest";
import { KALMAN_INITIAL_COVARIANCE, KALMAN_PROCESS_NOISE, QueuingDelayKalman } from "./kalman.js";

describe("QueuingDelayKalman (journal Eq. 2–4)", () => {
  it("runs the documented Q, P0 and R: one step by hand (predict P + Q, gain P/(P + R), update)", () => {
    expect(KALMAN_PROCESS_NOISE).toEqual([1e-13, 1e-1]);
    expect(KALMAN_INITIAL_COVARIANCE).toEqual([1e-8, 1]);
    const k = new QueuingDelayKalman();
    expect(k.covariance).toEqual([1e-8, 0, 1]);
    // ΔM = 0: H = [0, 1], only Qd is observed. Residual 10 ms, clipped at 3σ = 6 ms → R = 0.99·4 + 0.01·36.
    const p11 = KALMAN_INITIAL_COVARIANCE[1] + KALMAN_PROCESS_NOISE[1];
    const r = 0.99 * 4 + 0.01 * 36;
    const gain = p11 / (p11 + r);
    expect(k.update(10, 0)).toBeCloseTo(gain * 10, 12);
    const [p00, p01, p11_after] = k.covariance;
    expect(p00).toBeCloseTo(KALMAN_INITIAL_COVARIANCE[0] + KALMAN_PROCESS_NOISE[0], 20);
    expect(p01).toBe(0);
    expect(p11_after).toBeCloseTo(p11 - gain * p11, 12);
    k.reset(0);
    expect(k.covariance).toEqual([1e-8, 0, 1]);
  });

  it("converges to a constant queuing delay and filters zero-mean noise", () => {
    const k = new QueuingDelayKalman();
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 6; // ±3 ms, seeded
    let last = 0;
    for (let i = 0; i < 2000; i++) last = k.update(20 + rnd(), 0);
    expect(Math.abs(last - 20)).toBeLessThan(1.5);
  });

  it("tracks a step in the queue within a few dozen samples", () => {
    const k = new QueuingDelayKalman();
    for (let i = 0; i < 500; i++) k.update(5, 0);
    let n = 0;
    while (k.update(50, 0) < 45) n++;
    expect(n).toBeLessThan(60);
  });

  it("does not stay stuck after an outage: reset follows new data at once", () => {
    const k = new QueuingDelayKalman();
    for (let i = 0; i < 500; i++) k.update(3000, 0); // a 3 s outage queue
    k.reset(0);
    let v = 0;
    for (let i = 0; i < 20; i++) v = k.update(10, 0);
    expect(Math.abs(v - 10)).toBeLessThan(2);
  });

  it("never reports a negative queuing delay or capacity, and rejects NaN", () => {
    const k = new QueuingDelayKalman();
    for (let i = 0; i < 100; i++) expect(k.update(-50, 1000 * ((i % 3) - 1))).toBeGreaterThanOrEqual(0);
    expect(k.capacityBps).toBeGreaterThan(0);
    expect(() => k.update(Number.NaN, 0)).toThrow(RangeError);
  });
});
