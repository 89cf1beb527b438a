/**
 * The video simulator (video.ts): the shipped MPC through a simulated Nuwa session on recorded
 * and constant links: start-up, a sustainable rung without oscillation on a steady link, stalls
 * counted where the link goes dark, and the QoE's arithmetic.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { constantRateTrace, parseMahimahiTrace } from "@nuwa/cc/sim";
import { describe, expect, it } from "vitest";
import { mpcAbr, simulateVideo, type VideoLadder } from "./video.js";

const RUNGS = [300, 750, 1200, 1850, 2850, 4300];
/** Segments of exactly their nominal size, 2 s each, with a 64 kbit/s audio track. */
const LADDER: VideoLadder = { bitrates_kbps: RUNGS, video_bytes: RUNGS.map((k) => Array(40).fill((k * 1000 * 2) / 8)), audio_bytes: Array(40).fill(16000), segment_s: 2 };

/** A trace at `mbps`, dark (one opportunity per second) from `dark_from_s` for `dark_s`. */
function darkTrace(mbps: number, dark_from_s: number, dark_s: number, period_s = 120): Uint32Array {
  const on = constantRateTrace(mbps * 1e6, 1000);
  const out: number[] = [];
  for (let s = 0; s < period_s; s++) {
    if (s >= dark_from_s && s < dark_from_s + dark_s) out.push(s * 1000 + 500);
    else for (const t of on) out.push(s * 1000 + t);
  }
  return Uint32Array.from(out);
}

describe("simulateVideo", () => {
  it("on a steady 3 Mbit/s link settles on a sustainable rung without oscillating and never stalls", () => {
    const r = simulateVideo({ trace: constantRateTrace(3e6), ladder: LADDER, duration_s: 60 });
    expect(r.rebuffer_s).toBe(0);
    expect(r.startup_s).toBeLessThan(1);
    const late = r.chunks.filter((c) => c.request_ms > 20_000).map((c) => c.kbps);
    expect(new Set(late).size).toBe(1); // one rung once settled
    expect(late[0]).toBeLessThanOrEqual(2850);
    expect(late[0]).toBeGreaterThanOrEqual(1850);
    expect(r.switches).toBeLessThanOrEqual(4);
    // QoE_lin's arithmetic on the chunks played
    const played = r.chunks.slice(0, r.played_chunks);
    let q = 0;
    for (let i = 0; i < played.length; i++) q += played[i]!.kbps / 1000 - (i > 0 ? Math.abs(played[i]!.kbps - played[i - 1]!.kbps) / 1000 : 0);
    expect(r.qoe).toBeCloseTo(q / played.length, 9);
  });

  it("splits the played chunks' switches into up, down and reversals (a switch undoing the one at most 3 chunks before)", () => {
    // rungs by segment index: up, down (reverses), up (reverses), hold 4, down (4 chunks after: no reversal), up (reverses)
    const script = [0, 2, 1, 2, 2, 2, 2, 0, 1];
    const r = simulateVideo({ trace: constantRateTrace(20e6), ladder: LADDER, duration_s: 40, abr: (c) => script[c.index] ?? 1 });
    expect(r.played_chunks).toBeGreaterThan(script.length);
    expect(r.chunks.slice(0, script.length).map((c) => c.rung)).toEqual(script);
    expect([r.switches, r.up_switches, r.down_switches, r.reversals]).toEqual([5, 3, 2, 3]);
  });

  it("counts the stall when the link goes dark for longer than the buffer", () => {
    const steady = simulateVideo({ trace: darkTrace(3, 1000, 0), ladder: LADDER, duration_s: 60 });
    const dark = simulateVideo({ trace: darkTrace(3, 20, 25), ladder: LADDER, duration_s: 60 });
    expect(steady.rebuffer_s).toBe(0);
    expect(dark.rebuffer_s).toBeGreaterThan(5); // 25 s dark against a buffer of about 10 s
    expect(dark.rebuffer_s).toBeLessThan(25);
    expect(dark.qoe).toBeLessThan(steady.qoe - 1);
  });

  it("runs on a recorded trace and is deterministic", () => {
    const trace = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/3G/norway-hsdpa-bus-1.mahi"), "utf8"));
    const a = simulateVideo({ trace, ladder: LADDER, duration_s: 30, abr: mpcAbr() });
    const b = simulateVideo({ trace, ladder: LADDER, duration_s: 30 });
    expect(a).toEqual(b);
    expect(a.played_chunks).toBeGreaterThan(10);
  });

  it("rejects a ladder whose sizes do not match its rungs", () => {
    expect(() => simulateVideo({ trace: constantRateTrace(3e6), ladder: { ...LADDER, video_bytes: [] }, duration_s: 5 })).toThrow(RangeError);
    expect(() => simulateVideo({ trace: constantRateTrace(3e6), ladder: { ...LADDER, segment_s: 0 }, duration_s: 5 })).toThrow(RangeError);
  });
});
