/**
 * attachNuwa's `cc.tuner` option (issue 6: `cc: { tuner: "rl", model }`): bad
 * options are refused at once; a model that cannot load leaves k fixed and says
 * so in telemetry. dash.js is a recording stand-in; the session cannot open
 * here (no WebTransport), which does not stop the tuner from reporting.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EstimateSource } from "./abr.js";
import { attachNuwa, FETCH_AHEAD_MAX_DEPTH, FETCH_AHEAD_STANDING_WAIT_S, fetchAheadDepth, fetchAheadPath } from "./attach.js";

function fakes() {
  const settings: unknown[] = [];
  const player = {
    extend: () => {},
    addABRCustomRule: () => {},
    updateSettings: (s: unknown) => void settings.push(s),
    getDashMetrics: () => ({ getCurrentBufferLevel: () => 0 }),
  };
  const dashjs = { FactoryMaker: { getClassFactory: (fn: unknown) => fn, getClassFactoryByName: () => () => ({ create: () => ({}) }) } };
  return { player, dashjs, settings };
}

afterEach(() => vi.unstubAllGlobals());

describe("attachNuwa cc.tuner", () => {
  it("refuses an unknown tuner and an RL tuner without a model", () => {
    const { player, dashjs } = fakes();
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", cc: { tuner: "magic" as never } })).toThrow(/cc.tuner must be "fixed" or "rl"/);
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", cc: { tuner: "rl" } })).toThrow(/needs cc.model/);
  });

  it("falls back to a fixed k with a tuner_fallback event when the model does not load", async () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs } = fakes();
    const events: { type: string; error?: string; k_mss?: number }[] = [];
    const a = attachNuwa(player, dashjs, {
      url: "https://127.0.0.1:1/nuwa",
      cc: { tuner: "rl", model: new Uint8Array([1, 2, 3]), tuner_options: { metadata: "/nonexistent.json", fallback_k_mss: 4 } },
      reconnect: { initial_attempts: 1 },
      onTelemetry: (e) => void events.push(e as never),
    });
    a.session.catch(() => {});
    await vi.waitFor(() => expect(events.some((e) => e.type === "tuner_fallback")).toBe(true), { timeout: 10_000 });
    const fb = events.find((e) => e.type === "tuner_fallback")!;
    expect(fb.k_mss).toBe(4);
    expect(fb.error).toBeTruthy();
    a.close();
  });
});

describe("attachNuwa as the dash.js baseline (issue 13: only the loader extended)", () => {
  function recording(avg_kbps: number) {
    const calls: { method: string; args: unknown[] }[] = [];
    const player = {
      extend: (...args: unknown[]) => void calls.push({ method: "extend", args }),
      addABRCustomRule: (...args: unknown[]) => void calls.push({ method: "addABRCustomRule", args }),
      updateSettings: (...args: unknown[]) => void calls.push({ method: "updateSettings", args }),
      getDashMetrics: () => ({ getCurrentBufferLevel: () => 0 }),
      getAverageThroughput: (type: string) => (type === "video" ? avg_kbps : Number.NaN),
    };
    const dashjs = { FactoryMaker: { getClassFactory: (fn: unknown) => fn, getClassFactoryByName: () => () => ({ create: () => ({}) }) } };
    return { player, dashjs, calls };
  }

  it("abr and estimate dashjs: the loader is the only extension, no setting changes; dash.js's own estimate is read from the player", () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs, calls } = recording(3210);
    const a = attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", abr: "dashjs", estimate: "dashjs", mode: "observe", reconnect: { initial_attempts: 1 } });
    a.session.catch(() => {});
    expect(calls.map((c) => (c.method === "extend" ? `extend:${c.args[0]}` : c.method))).toEqual(["extend:XHRLoader"]);
    expect(a.dashjsEstimateKbps()).toBe(3210);
    a.close();
  });

  it("estimate nuwa: dash.js's own figure is read from its original ThroughputController under the extension", () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs, calls } = recording(Number.NaN);
    const a = attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", abr: "dashjs", estimate: "nuwa", reconnect: { initial_attempts: 1 } });
    a.session.catch(() => {});
    const ext = calls.find((c) => c.method === "extend" && c.args[0] === "ThroughputController");
    expect(ext).toBeDefined();
    expect(Number.isNaN(a.dashjsEstimateKbps())).toBe(true); // dash.js has not built its controller yet
    // What dash.js's FactoryMaker does: call the extension with `this.parent` = its own instance.
    const parent = { getAverageThroughput: (t: string) => (t === "video" ? 1234 : 1), getSafeAverageThroughput: () => 1, getAverageLatency: () => 1 };
    const mine = (ext!.args[1] as (this: { parent: typeof parent }) => { getAverageThroughput(t: string): number }).call({ parent });
    expect(Number.isNaN(mine.getAverageThroughput("video"))).toBe(true); // dash.js's rules see Nuwa's (none yet: no session)
    expect(a.dashjsEstimateKbps()).toBe(1234);
    a.close();
  });
});

describe("attachNuwa abr (issue 15): the MPC by default, the older rule on request", () => {
  function recording() {
    const calls: { method: string; args: unknown[] }[] = [];
    const player = {
      extend: (...args: unknown[]) => void calls.push({ method: "extend", args }),
      addABRCustomRule: (...args: unknown[]) => void calls.push({ method: "addABRCustomRule", args }),
      updateSettings: (...args: unknown[]) => void calls.push({ method: "updateSettings", args }),
      getDashMetrics: () => ({ getCurrentBufferLevel: () => 1.9 }),
    };
    const dashjs = { FactoryMaker: { getClassFactory: (fn: unknown) => fn, getClassFactoryByName: () => () => ({ create: () => ({}) }) } };
    return { player, dashjs, calls };
  }
  const buffer = (calls: { method: string; args: unknown[] }[]) =>
    (calls.find((c) => c.method === "updateSettings")!.args[0] as { streaming: { buffer: Record<string, unknown> } }).streaming.buffer;

  it("abr nuwa: 30 s buffer target; before any estimate the rule leaves the choice to dash.js", () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs, calls } = recording();
    const a = attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", reconnect: { initial_attempts: 1 } });
    a.session.catch(() => {});
    expect(buffer(calls)).toEqual({ fastSwitchEnabled: false, bufferTimeDefault: 30 });
    const rule = calls.find((c) => c.method === "addABRCustomRule")!.args[2] as (this: { context: unknown }) => { getSwitchRequest(r: unknown): { representation?: { bitrateInKbit: number } } };
    const reps = [300, 750, 1200, 1850, 2850, 4300, 6000, 8000].map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    const ctx = { getMediaInfo: () => ({}), getMediaType: () => "video", getRepresentation: () => reps[0], getAbrController: () => ({ getOptimalRepresentationForBitrate: () => null, getPossibleVoRepresentationsFilteredBySettings: () => reps }) };
    // no session, so no estimate yet
    expect(rule.call({ context: {} }).getSwitchRequest(ctx).representation).toBeUndefined();
    // dash.js's abandonment is off with its other rules; the MPC's own is opt-in (abandon: true)
    const rules = (cs: typeof calls) => cs.filter((c) => c.method === "addABRCustomRule").map((c) => [c.args[0], c.args[1]]);
    const streaming = (cs: typeof calls) => (cs.find((c) => c.method === "updateSettings")!.args[0] as { streaming: { abandonLoadTimeout?: number; abr: { rules: Record<string, { active: boolean }> } } }).streaming;
    expect(rules(calls)).toEqual([["qualitySwitchRules", "NuwaAbrRule"]]);
    expect(streaming(calls).abr.rules.abandonRequestsRule).toEqual({ active: false });
    expect(streaming(calls).abandonLoadTimeout).toBeUndefined();
    a.close();
    const on = recording();
    const b = attachNuwa(on.player, on.dashjs, { url: "https://127.0.0.1:1/nuwa", abandon: true, reconnect: { initial_attempts: 1 } });
    b.session.catch(() => {});
    expect(rules(on.calls)).toEqual([
      ["qualitySwitchRules", "NuwaAbrRule"],
      ["abandonFragmentRules", "NuwaAbandonRule"],
    ]);
    expect(streaming(on.calls).abandonLoadTimeout).toBe(0); // dash.js's 10 s hold after an abandonment: the MPC holds the replacement itself
    b.close();
  });

  it("abr nuwa_rule keeps dash.js's buffer target; an unknown abr is refused", () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs, calls } = recording();
    const a = attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", abr: "nuwa_rule", reconnect: { initial_attempts: 1 } });
    a.session.catch(() => {});
    expect(buffer(calls)).toEqual({ fastSwitchEnabled: false });
    expect(calls.filter((c) => c.method === "addABRCustomRule").map((c) => c.args[1])).toEqual(["NuwaAbrRule"]); // no MPC, no MPC abandonment
    expect((calls.find((c) => c.method === "updateSettings")!.args[0] as { streaming: Record<string, unknown> }).streaming.abandonLoadTimeout).toBeUndefined();
    a.close();
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", abr: "mpc" as never })).toThrow(/abr must be/);
  });
});

describe("attachNuwa fetch_ahead: which segment, and when", () => {
  const t = { rep_id: "3", bandwidth_bps: 1850000, media: "seg-$RepresentationID$-$Number%05d$.m4s", base_url: "https://h:1/content/manifest.mpd", start_number: 1, segment_s: 2 };
  const templates = new Map([["3", t]]);
  const q = { path: "/content/seg-3-00004.m4s", media_type: "video", rep_id: "3", start_s: 6, segment_s: 2 };
  const src = (raw_qd_ms: number, td_ms: number): EstimateSource => ({ controller: () => ({ rawQueuingDelayMs: raw_qd_ms, targetDelayInForceMs: td_ms }) as never, now_us: () => 0 });
  it("standing: only while a queue stands 50 ms or more above Td; always: every segment; no template, no fetch-ahead", () => {
    expect(fetchAheadPath("standing", templates, src(40, 25), q)).toBeNull(); // 15 ms above Td: our own queue
    expect(fetchAheadPath("standing", templates, src(25 + 1000 * FETCH_AHEAD_STANDING_WAIT_S, 25), q)).toBe("/content/seg-3-00005.m4s");
    expect(fetchAheadPath("standing", templates, { controller: () => null, now_us: () => 0 }, q)).toBeNull();
    expect(fetchAheadPath("always", templates, src(0, 25), q)).toBe("/content/seg-3-00005.m4s");
    expect(fetchAheadPath("always", templates, src(0, 25), { ...q, rep_id: "9" })).toBeNull();
  });
  it("queue: as many segments ahead as the flow carries in one standing wait, within [1, FETCH_AHEAD_MAX_DEPTH]", () => {
    const seg_bytes = (1850000 * 2) / 8; // the rung's nominal segment, 462.5 kB
    expect(fetchAheadPath("queue", templates, src(40, 25), q, 2e6)).toBeNull(); // our own queue
    // 2.5 s of standing wait at 4 Mbit/s: 1.25 MB = 2.7 segments of 462.5 kB
    expect(fetchAheadPath("queue", templates, src(25 + 2500, 25), q, 4e6)).toEqual(["/content/seg-3-00005.m4s", "/content/seg-3-00006.m4s", "/content/seg-3-00007.m4s"]);
    expect(fetchAheadPath("queue", templates, src(25 + 100, 25), q, 4e6)).toEqual(["/content/seg-3-00005.m4s"]); // 50 kB: one
    expect(fetchAheadPath("queue", templates, src(25 + 20_000, 25), q, 4e6)).toHaveLength(FETCH_AHEAD_MAX_DEPTH); // a 20 s queue
    expect(fetchAheadPath("queue", templates, src(25 + 2500, 25), q)).toEqual(["/content/seg-3-00005.m4s"]); // no rate known: one
    expect(fetchAheadPath("queue", templates, src(25 + 2500, 25), { ...q, rep_id: "9" }, 4e6)).toBeNull();
    expect(fetchAheadPath("queue", templates, src(25 + 2500, 25), { ...q, path: "/content/seg-3-00009.m4s" }, 4e6)).toBeNull(); // not this start's segment
    expect(fetchAheadDepth(2.5, 4e6, seg_bytes)).toBe(3);
  });
  it("fetchAheadDepth: ⌈rate × wait ÷ segment bytes⌉ within [1, max]; anything unknown: 1", () => {
    expect(fetchAheadDepth(2.5, 0.8e6, 75_000)).toBe(4); // 300 kbit/s segments next to a buffer filler
    expect(fetchAheadDepth(1.4, 1e6, 1_500_000)).toBe(1); // a 6000 kbit/s segment outlasts the wait
    expect(fetchAheadDepth(1.5, 0.8e6, 75_000)).toBe(2);
    expect(fetchAheadDepth(0, 1e6, 75_000)).toBe(1);
    expect(fetchAheadDepth(60, 1e6, 75_000)).toBe(FETCH_AHEAD_MAX_DEPTH);
    expect(fetchAheadDepth(3, Number.NaN, 75_000)).toBe(1);
    expect(fetchAheadDepth(3, 1e6, 0)).toBe(1);
    expect(fetchAheadDepth(Number.NaN, 1e6, 75_000)).toBe(1);
  });
  it("an unknown mode is refused", () => {
    const { player, dashjs } = fakes();
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", fetch_ahead: "sometimes" as never })).toThrow(/fetch_ahead must be/);
  });
});
