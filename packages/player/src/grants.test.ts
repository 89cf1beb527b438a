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
    const idle = run(p, 0, 2000, () => 50_000);
    const gaps = idle.slice(1).map((t, i) => t - idle[i]!);
    expect(gaps.slice(0, 7)).toEqual([10, 20, 40, 80, 160, 320, 400]); // doubling from 10 ms
    expect(Math.max(...gaps)).toBe(DEFAULT_GRANT_POLICY.idle_max_interval_us / 1000);
    expect(idle.length).toBeLessThan(12); // not 200 grants (and server ACKs) in two dark seconds
    p.onFrames(1);
    expect(p.due(2_000_000, 50_000)).toBe(true); // news goes out at once
  });

  it("a near-dark link: one frame a second buys about one grant, each sent within max_interval of its frame", () => {
    // UMTS-like stretch: 10 s with one frame per second, window unchanged
    const p = new GrantPolicy();
    run(p, 0, 1000, () => 50_000); // the link went dark
    const sent = run(p, 1000, 10_000, () => 50_000, (t) => (t % 1000 === 500 ? 1 : 0));
    expect(sent.length / 10).toBeLessThanOrEqual(4); // was 13 per second: 10 ms repeats doubling after every frame
    for (let s = 1; s < 11; s++) {
      const frame_ms = s * 1000 + 500;
      if (frame_ms >= 11_000) break;
      const answer = sent.find((t) => t >= frame_ms);
      expect(answer! - frame_ms).toBeLessThanOrEqual(DEFAULT_GRANT_POLICY.max_interval_us / 1000);
    }
  });

  it("the link comes back: the cadence returns to max_interval while frames keep arriving", () => {
    const p = new GrantPolicy();
    run(p, 0, 3000, () => 50_000); // dark, interval at idle_max
    const sent = run(p, 3000, 200, () => 50_000, () => 1); // a frame every ms
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    expect(sent[0]).toBeLessThanOrEqual(3000 + 1);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(10);
  });

  it("a window change goes out at once and halves the repeat interval", () => {
    const p = new GrantPolicy();
    run(p, 0, 2000, () => 50_000);
    expect(p.repeatIntervalUs).toBe(DEFAULT_GRANT_POLICY.idle_max_interval_us);
    expect(p.due(2_100_000, 20_000)).toBe(true);
    p.sent(2_100_000, 20_000);
    expect(p.repeatIntervalUs).toBe(DEFAULT_GRANT_POLICY.idle_max_interval_us / 2);
  });

  it("a dark link: the silence decay halving the window every 200 ms costs one grant per halving", () => {
    // UMTS, 49-50 s of the s7-umts run: 8063 → 4032 → 2016 → 1694 → 1200 bytes, no frame; each
    // halving reset the cadence to 10 ms and bought 5 grants (server ACKs waiting for the link)
    const p = new GrantPolicy();
    run(p, 0, 2000, () => 8063); // dark for 2 s already
    const windows = [8063, 4032, 2016, 1694, 1200];
    const sent = run(p, 2000, 1000, (t) => windows[Math.min(4, Math.floor((t - 2000) / 200))]!);
    expect(sent.length).toBeLessThanOrEqual(8); // was 21
    for (const at of [2200, 2400, 2600, 2800]) expect(sent).toContain(at); // each new window at once
  });

  it("refuses inconsistent intervals", () => {
    expect(() => new GrantPolicy({ ...DEFAULT_GRANT_POLICY, idle_max_interval_us: 5_000 })).toThrow(RangeError);
    expect(() => new GrantPolicy({ ...DEFAULT_GRANT_POLICY, min_interval_us: 0 })).toThrow(/min_interval_us/);
  });
});
