import { describe, expect, it } from "vitest";
import { DEFAULT_GRANT_POLICY, GrantPolicy } from "./grants.js";

/** Drive the policy every 1 ms for `ms`; returns the times grants went out, ms. */
function run(p: GrantPolicy, from_ms: number, ms: number, window: (t: number) => number, framesAt: (t: number) => number = () => 0): number[] {
  const out: number[] = [];
  for (let t = from_ms; t < from_ms + ms; t++) {
    p.onFrames(framesAt(t));
    if (p.due(t * 1000, window(t))) {
      p.sent(t * 1000, window(t));
      out.push(t);
    }
  }
  return out;
}

describe("GrantPolicy", () => {
  it("repeats every max_interval while frames arrive", () => {
    const p = new GrantPolicy();
    const sent = run(p, 0, 100, () => 50_000, (t) => (t % 5 === 0 ? 1 : 0));
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(10);
  });

  it("backs off to idle_max_interval while nothing arrives and the window stays, and resets on a frame", () => {
    const p = new GrantPolicy();
    const idle = run(p, 0, 1000, () => 50_000);
    const gaps = idle.slice(1).map((t, i) => t - idle[i]!);
    expect(gaps.slice(0, 5)).toEqual([10, 20, 40, 80, 100]); // doubling from 10 ms
    expect(Math.max(...gaps)).toBe(DEFAULT_GRANT_POLICY.idle_max_interval_us / 1000);
    expect(idle.length).toBeLessThan(16); // not 100 grants (and server ACKs) in a dark second
    p.onFrames(1);
    expect(p.repeatIntervalUs).toBe(DEFAULT_GRANT_POLICY.max_interval_us);
  });

  it("a window change resets the repeat interval", () => {
    const p = new GrantPolicy();
    run(p, 0, 500, () => 50_000);
    expect(p.repeatIntervalUs).toBe(100_000);
    expect(p.due(600_000, 20_000)).toBe(true);
    p.sent(600_000, 20_000);
    expect(p.repeatIntervalUs).toBe(DEFAULT_GRANT_POLICY.max_interval_us);
  });

  it("refuses inconsistent intervals", () => {
    expect(() => new GrantPolicy({ ...DEFAULT_GRANT_POLICY, idle_max_interval_us: 5_000 })).toThrow(RangeError);
    expect(() => new GrantPolicy({ ...DEFAULT_GRANT_POLICY, min_interval_us: 0 })).toThrow(/min_interval_us/);
  });
});
