// @vitest-environment happy-dom
/**
 * Nuwa's estimate and rule inside hls.js's own AbrController (hls.js 1.7, the real class):
 * `hls.bandwidthEstimate` answers Nuwa's figure while hls.js's EWMA keeps learning from the
 * stats our loader fills; `resetEstimator` keeps the wrapper; the MPC picks `nextAutoLevel`
 * within hls.js's auto-level bounds; the baseline installs no controller at all.
 */
import type { NuwaController } from "@nuwa/cc";
import Hls from "hls.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EstimateSource } from "../dash/abr.js";
import type { RequestSession } from "../dash/loader.js";
import { MpcHistory } from "../dash/mpc.js";
import { makeNuwaHlsAbr, type NuwaHlsAbr } from "./abr.js";
import { attachNuwaToHls } from "./attach.js";
import { makeNuwaHlsLoader } from "./loader.js";

/** A controller stand-in: `bps` (NaN: no data yet) on a busy-period basis, 50 ms min RTT. */
function source(state: { bps: number }): EstimateSource {
  const c = { estimate: () => ({ bps: state.bps, basis: "busy_period", busy_rate_bps: state.bps }), minRttSampleUs: 50_000 } as unknown as NuwaController;
  return { controller: () => (Number.isFinite(state.bps) ? c : null), now_us: () => 0 };
}

const LADDER_BPS = [300_000, 750_000, 1_200_000, 1_850_000, 2_850_000, 4_300_000, 6_000_000, 8_000_000];
const hlsList: Hls[] = [];
afterEach(() => {
  for (const h of hlsList.splice(0)) h.destroy();
  vi.restoreAllMocks();
});

function nuwaHls(state: { bps: number }, abr: "nuwa" | "hlsjs") {
  const made: NuwaHlsAbr[] = [];
  const AbrController = makeNuwaHlsAbr(Hls.DefaultConfig.abrController as never, source(state), { abr, history: new MpcHistory(), onCreate: (a) => made.push(a) });
  const hls = new Hls({ abrController: AbrController as never });
  hlsList.push(hls);
  return { hls, abr: made[0]! };
}

describe("Nuwa's estimate in hls.js's AbrController", () => {
  it("hls.bandwidthEstimate is Nuwa's figure once it has one, hls.js's default before", () => {
    const state = { bps: Number.NaN };
    const { hls, abr } = nuwaHls(state, "nuwa");
    expect(hls.bandwidthEstimate).toBe(Hls.DefaultConfig.abrEwmaDefaultEstimate);
    state.bps = 3_100_000;
    expect(hls.bandwidthEstimate).toBe(3_100_000);
    expect(abr.hlsjsEstimateBps()).toBeNaN(); // hls.js's own EWMA has no sample yet
  });

  it("hls.js's own EWMA learns from the stats our loader filled (FRAG_BUFFERED), under Nuwa's figure", async () => {
    const clock = { ms: 0 };
    vi.spyOn(performance, "now").mockImplementation(() => clock.ms);
    const body = new Uint8Array(250_000);
    const s: RequestSession = {
      request: async (_r, ro = {}) => {
        const head = { status: 200, total_bytes: body.length };
        clock.ms += 100; // TTFB
        for (let off = 0; off < body.length; off += 50_000) {
          ro.onData?.(body.subarray(off, off + 50_000), off + 50_000, head);
          clock.ms += 100;
        }
        return { head, body, first_byte_us: 0, duration_us: 0 };
      },
    };
    const state = { bps: 3_100_000 };
    const { hls, abr } = nuwaHls(state, "nuwa");
    const loader = new (makeNuwaHlsLoader(() => Promise.resolve(s)))();
    const done = new Promise<void>((resolve) => loader.load({ url: "https://h/seg-0-00001.m4s", responseType: "arraybuffer" }, { loadPolicy: { maxTimeToFirstByteMs: 1e4, maxLoadTimeMs: 2e4 } }, { onSuccess: () => resolve(), onError: () => {}, onTimeout: () => {} }));
    await done;
    expect(loader.stats.loading).toEqual({ start: 0, first: 100, end: 600 });
    // hls.js samples loaded / (loading.end − start − min(TTFB, its TTFB estimate)) for a < 100 kbit/s fragment.
    const frag = { type: "main", sn: 1, level: 0, bitrate: 0, stats: loader.stats };
    hls.trigger(Hls.Events.FRAG_BUFFERED, { frag, part: null, stats: loader.stats, id: "main" } as never);
    const own = abr.hlsjsEstimateBps();
    expect(own).toBeGreaterThan((250_000 * 8) / 0.6);
    expect(own).toBeLessThanOrEqual((250_000 * 8) / 0.5);
    expect(hls.bandwidthEstimate).toBe(3_100_000);
    // hls.js's setter re-seeds its estimator (resetEstimator): Nuwa's figure still answers.
    hls.bandwidthEstimate = 1_000_000;
    expect(hls.bandwidthEstimate).toBe(3_100_000);
    state.bps = Number.NaN;
    expect(hls.bandwidthEstimate).toBe(1_000_000);
  });
});

describe("Nuwa's MPC as hls.js's nextAutoLevel", () => {
  function withLevels(state: { bps: number }, buffered_s: number, bounds = { min: 0, max: LADDER_BPS.length - 1 }, history = new MpcHistory(), decide?: "per_fragment" | "per_read") {
    const decisions: string[] = [];
    const AbrController = makeNuwaHlsAbr(Hls.DefaultConfig.abrController as never, source(state), { abr: "nuwa", history, decide, onDecision: (d) => decisions.push(d.reason) }) as unknown as new (
      hls: unknown,
    ) => { nextAutoLevel: number; firstAutoLevel: number; _abandonRulesCheck: () => void };
    const real = new Hls();
    hlsList.push(real);
    const media = { currentTime: 10, buffered: { length: 1, start: () => 0, end: () => 10 + buffered_s } };
    const fake = { config: real.config, logger: real.logger, on: () => {}, off: () => {}, levels: LADDER_BPS.map((bitrate) => ({ bitrate, details: { targetduration: 2 } })), media, minAutoLevel: bounds.min, maxAutoLevel: bounds.max };
    return { abr: new AbrController(fake), decisions, media, fake };
  }

  it("decides once per completed main fragment: hls.js's reads in between get that level while the estimate and the buffer move", () => {
    const sample = (kbps: number) => ({ bytes: (kbps * 1000 * 2) / 8, duration_s: 2 * (1850 / kbps), bitrate_kbps: 1850, segment_s: 2, predicted_kbps: kbps });
    const run = (decide?: "per_fragment" | "per_read") => {
      const state = { bps: 2_000_000 };
      const history = new MpcHistory();
      history.add(sample(2000));
      const { abr, decisions, media, fake } = withLevels(state, 6, undefined, history, decide);
      const first = abr.nextAutoLevel;
      const reads: number[] = [];
      // hls.js reads the level on every 100 ms tick while the fragment it chose loads: the grants move
      // Nuwa's estimate (here 2 → 20 Mbit/s) and the buffer drains by a second.
      for (let i = 1; i <= 10; i++) {
        state.bps = 2_000_000 + i * 1_800_000;
        media.currentTime = 10 + i * 0.1;
        reads.push(abr.nextAutoLevel);
      }
      const made = decisions.length;
      history.add(sample(20_000)); // the fragment completed: the next read decides again
      const after = abr.nextAutoLevel;
      fake.maxAutoLevel = 2; // hls.js's bounds changed (e.g. capLevelToPlayerSize): decides again within them
      return { first, reads, made, after, capped: abr.nextAutoLevel, decisions };
    };
    const held = run();
    expect(held.reads.every((l) => l === held.first)).toBe(true);
    expect(held.made).toBe(1);
    expect(held.after).toBeGreaterThan(held.first);
    expect(held.capped).toBeLessThanOrEqual(2);
    expect(held.decisions).toHaveLength(3);
    expect(run("per_fragment").reads).toEqual(held.reads);
    // The behaviour before (`per_read`): a new decision on each read where the estimate moved, and the level climbs within the fragment.
    const flap = run("per_read");
    expect(flap.first).toBe(held.first);
    expect(new Set(flap.reads).size).toBeGreaterThan(1);
    expect(flap.made).toBeGreaterThan(5);
  });

  it("starts on the lowest level without an estimate, then follows the estimate", () => {
    const state = { bps: Number.NaN };
    const history = new MpcHistory();
    const { abr, decisions } = withLevels(state, 20, undefined, history);
    expect(abr.firstAutoLevel).toBe(0);
    // One 1850 kbit/s fragment fetched at 2.5 Mbit/s (what the loader reports), then a 3.5 Mbit/s estimate.
    history.add({ bytes: 462_500, duration_s: 1.48, bitrate_kbps: 1850, segment_s: 2, predicted_kbps: 3500 });
    state.bps = 3_500_000;
    const l = abr.nextAutoLevel;
    expect(LADDER_BPS[l]!).toBeLessThanOrEqual(3_500_000);
    expect(l).toBeGreaterThan(0);
    expect(decisions.at(-1)).toMatch(/^\[NuwaHlsAbr\] level \d .*mpc: predicted/);
    // The same history on a 1 s buffer and a 600 kbit/s estimate: down.
    const low = withLevels({ bps: 600_000 }, 1, undefined, history);
    expect(low.abr.nextAutoLevel).toBeLessThan(l);
  });

  it("stays within hls.js's auto-level bounds and turns hls.js's emergency abandonment off", () => {
    const { abr } = withLevels({ bps: 50_000_000 }, 25, { min: 1, max: 3 });
    expect(abr.nextAutoLevel).toBe(3);
    expect(abr._abandonRulesCheck.toString()).not.toMatch(/loadRate|bwEstimate/);
    expect(withLevels({ bps: Number.NaN }, 0, { min: 1, max: 3 }).abr.firstAutoLevel).toBe(1);
  });
});

describe("attachNuwaToHls", () => {
  it("the baseline (hlsjs/hlsjs) replaces only the loader; Nuwa's schemes add the AbrController; bad options throw", () => {
    const opts = { url: "https://127.0.0.1:1/nuwa" };
    const base = attachNuwaToHls(Hls, { ...opts, abr: "hlsjs", estimate: "hlsjs" });
    base.session.catch(() => {});
    expect(Object.keys(base.config)).toEqual(["loader"]);
    const hls = base.create({ maxBufferLength: 12 });
    hlsList.push(hls);
    expect(hls.config.loader).toBe(base.config.loader);
    expect(hls.config.abrController).toBe(Hls.DefaultConfig.abrController);
    expect(hls.config.maxBufferLength).toBe(12);
    expect(base.hlsjsEstimateBps()).toBeNaN();
    base.close();
    const ours = attachNuwaToHls(Hls, opts);
    ours.session.catch(() => {});
    expect(ours.config.abrController).not.toBe(Hls.DefaultConfig.abrController);
    ours.close();
    expect(() => attachNuwaToHls(Hls, { ...opts, abr: "bola" as never })).toThrow(/abr must be/);
    expect(() => attachNuwaToHls(Hls, { ...opts, abr: "nuwa", estimate: "hlsjs" })).toThrow(/plans on Nuwa's estimate/);
    expect(() => attachNuwaToHls(Hls, { ...opts, decide: "per_grant" as never })).toThrow(/decide must be "per_fragment" or "per_read"/);
  });
});
