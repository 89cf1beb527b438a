import { describe, expect, it } from "vitest";
import { QueuingDelayKalman } from "./kalman.js";

describe("QueuingDelayKalman (journal Eq. 2–4)", () => {
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
