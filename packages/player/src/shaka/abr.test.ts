// @vitest-environment happy-dom
/**
 * Nuwa's estimate in shaka's own SimpleAbrManager (real shaka-player 5 under
 * happy-dom) and attachNuwaShaka's registrations, with a stand-in controller
 * and player: shaka's variant choice follows Nuwa's figure, shaka's own EWMA
 * stays readable beside it, and the schemes are given back on close.
 */
import type { NuwaController } from "@nuwa/cc";
import * as shakaModule from "shaka-player";
import { afterEach, describe, expect, it, vi } from "vitest";
import { achievableKbps, type EstimateSource } from "../dash/abr.js";
import { MpcHistory } from "../dash/mpc.js";
import { makeNuwaAbrFactory, nuwaShakaEstimateBps } from "./abr.js";
import { attachNuwaShaka } from "./attach.js";
import type { ShakaLike } from "./types.js";

/** shaka-player is CommonJS: at run time the namespace is module.exports; its typings (`export default shaka`), read as CommonJS under NodeNext, put it at `.default.default`. */
type Shaka = typeof shakaModule.default.default;
const shaka = ((shakaModule as unknown as { default?: Shaka }).default ?? shakaModule) as Shaka;
const S = shaka as unknown as ShakaLike;
const abrConfig = () => (shaka.util as unknown as { PlayerConfiguration: { createDefault(): { abr: unknown } } }).PlayerConfiguration.createDefault().abr;
const variant = (id: number, bandwidth: number) => ({ id, bandwidth, video: { width: 640, height: 360 }, audio: null, allowedByApplication: true, allowedByKeySystem: true, disabledUntilTime: 0 });
const VARIANTS = [variant(1, 300_000), variant(2, 1_000_000), variant(3, 3_000_000)];

type Manager = ReturnType<ReturnType<typeof makeNuwaAbrFactory>> & { configure(c: unknown): void; setVariants(v: unknown[], ll: boolean): boolean; chooseVariant(): { bandwidth: number } };

function manager(estimate_bps: () => number): Manager {
  const m = makeNuwaAbrFactory(S, estimate_bps)() as Manager;
  m.configure(abrConfig());
  m.setVariants(VARIANTS, false);
  return m;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("makeNuwaAbrFactory: shaka's SimpleAbrManager on Nuwa's estimate", () => {
  it("is shaka's own manager, and its variant choice follows Nuwa's estimate", () => {
    let nuwa_bps = 2e6;
    const m = manager(() => nuwa_bps);
    expect(m).toBeInstanceOf(shaka.abr.SimpleAbrManager);
    expect(m.getBandwidthEstimate()).toBe(2e6);
    expect(m.chooseVariant().bandwidth).toBe(1_000_000); // 1 M / 0.95 ≤ 2 M ≤ 3 M / 0.85
    nuwa_bps = 4e6;
    expect(m.chooseVariant().bandwidth).toBe(3_000_000);
    nuwa_bps = 0.2e6;
    expect(m.chooseVariant().bandwidth).toBe(300_000);
  });

  it("falls back to shaka's figure before Nuwa has one; shaka's EWMA stays readable beside Nuwa's", () => {
    let nuwa_bps = Number.NaN;
    const m = manager(() => nuwa_bps);
    expect(m.getBandwidthEstimate()).toBe(1e6); // shaka's defaultBandwidthEstimate
    expect(m.chooseVariant().bandwidth).toBe(300_000);
    // 200 kB in 100 ms samples = 16 Mbit/s by shaka's EWMA (past its 128 kB minimum).
    for (let i = 0; i < 4; i++) m.segmentDownloaded(100, 200_000, false);
    expect(m.shakaEstimateBps()).toBeCloseTo(16e6, -3);
    nuwa_bps = 2e6;
    expect(m.getBandwidthEstimate()).toBe(2e6);
    expect(m.shakaEstimateBps()).toBeCloseTo(16e6, -3);
  });

  it("nuwaShakaEstimateBps is dash.js's achievable figure in bit/s: capacity × the measured share, NaN before data", () => {
    const ctl = { estimate: () => ({ bps: 10e6, basis: "busy_period", busy_rate_bps: 10e6 }), minRttSampleUs: 50_000 } as unknown as NuwaController;
    const src: EstimateSource = { controller: () => ctl, now_us: () => 0 };
    const history = new MpcHistory();
    for (let i = 0; i < 3; i++) history.add({ bytes: 500_000, duration_s: 1, bitrate_kbps: Number.NaN, segment_s: Number.NaN, predicted_kbps: 10_000 });
    const bps = nuwaShakaEstimateBps(src, history);
    expect(bps).toBeLessThan(10e6); // a share of the capacity: the downloads got 4 Mbit/s of 10
    expect(bps).toBeGreaterThan(3e6);
    expect(bps).toBeCloseTo(achievableKbps(src, history) * 1000, 6);
    expect(nuwaShakaEstimateBps({ controller: () => null, now_us: () => 0 }, history)).toBeNaN();
  });
});

describe("attachNuwaShaka", () => {
  const player = () => ({ configure: vi.fn(), getStats: () => ({ estimatedBandwidth: 1234 }) });

  it("registers the scheme for https and nuwa with progress support; abrFactory only with Nuwa's estimate; close gives https back to shaka's fetch plugin", async () => {
    const reg = vi.spyOn(shaka.net.NetworkingEngine, "registerScheme");
    const unreg = vi.spyOn(shaka.net.NetworkingEngine, "unregisterScheme");
    const p = player();
    const a = attachNuwaShaka(p, S, { url: "https://127.0.0.1:4433/nuwa", reconnect: { initial_attempts: 1 } });
    await a.session.catch(() => {}); // no WebTransport here
    expect(reg.mock.calls.map((c) => [c[0], c[2], c[3]])).toEqual([
      ["https", shaka.net.NetworkingEngine.PluginPriority.APPLICATION, true],
      ["nuwa", shaka.net.NetworkingEngine.PluginPriority.APPLICATION, true],
    ]);
    expect(p.configure).toHaveBeenCalledTimes(1);
    expect(p.configure.mock.calls[0]).toEqual([{ abrFactory: expect.any(Function) }]);
    a.close();
    expect(unreg.mock.calls.map((c) => c[0])).toEqual(["nuwa", "https"]);
    expect(reg.mock.calls.at(-1)).toEqual(["https", shaka.net.HttpFetchPlugin.parse, shaka.net.NetworkingEngine.PluginPriority.PREFERRED, true]);

    const q = player();
    const b = attachNuwaShaka(q, S, { url: "https://127.0.0.1:4433/nuwa", estimate: "shaka", reconnect: { initial_attempts: 1 } });
    await b.session.catch(() => {});
    expect(q.configure).not.toHaveBeenCalled(); // shaka's ABR untouched
    expect(b.shakaEstimateBps()).toBe(1234); // read from shaka's stats
    b.close();
  });

  it("refuses a bad estimate option and a non-https URL with TypeErrors", () => {
    expect(() => attachNuwaShaka(player(), S, { url: "https://h/nuwa", estimate: "x" as never })).toThrow(TypeError);
    expect(() => attachNuwaShaka(player(), S, { url: "http://h/nuwa" })).toThrow(/must be https/);
  });
});
