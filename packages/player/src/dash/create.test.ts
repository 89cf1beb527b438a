/**
 * createNuwaPlayer's option handling and event wiring. dash.js is a recording
 * fake (the real module needs a browser; playback is covered by the e2e play
 * test) and WebTransport a loopback fake, so the real NuwaSession and
 * NuwaController run underneath: grants and frames are real.
 */
import { decodeGrant, encodeFrame, FrameType, NuwaController } from "@nuwa/cc";
import type * as Dashjs from "dashjs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createNuwaPlayer, type DashjsModuleLike, NUWA_PLAYER_EVENT_TYPES, type NuwaPlayerEvents, telemetryToPlayerEvent } from "./create.js";

// Compile-time check (tsc runs over tests): the real dashjs module fits the signature as is.
const _realDashjsFits: (m: typeof Dashjs) => DashjsModuleLike = (m) => m;
void _realDashjsFits;

const URL_ = "https://127.0.0.1:4433/nuwa";
const video = {} as HTMLMediaElement;

function fakeDashjs() {
  const calls: { method: string; args: unknown[] }[] = [];
  const listeners = new Map<string, Set<(e: unknown) => void>>();
  const rec =
    (method: string) =>
    (...args: unknown[]) => {
      calls.push({ method, args });
    };
  const player = {
    extend: rec("extend"),
    addABRCustomRule: rec("addABRCustomRule"),
    updateSettings: rec("updateSettings"),
    initialize: rec("initialize"),
    reset: rec("reset"),
    getDashMetrics: () => ({ getCurrentBufferLevel: () => 0 }),
    on: (t: string, l: (e: unknown) => void) => {
      if (!listeners.has(t)) listeners.set(t, new Set());
      listeners.get(t)!.add(l);
    },
    off: (t: string, l: (e: unknown) => void) => {
      listeners.get(t)?.delete(l);
    },
  };
  const events = { PLAYBACK_WAITING: "playbackWaiting", PLAYBACK_PLAYING: "playbackPlaying", QUALITY_CHANGE_RENDERED: "qualityChangeRendered", BUFFER_LEVEL_UPDATED: "bufferLevelUpdated", ERROR: "error" };
  const MediaPlayer = Object.assign(() => ({ create: () => player }), { events });
  const FactoryMaker = { getClassFactory: (fn: unknown) => fn, getClassFactoryByName: () => () => ({ create: () => ({}) }) };
  const trigger = (t: string, e: unknown = {}) => {
    for (const l of listeners.get(t) ?? []) l(e);
  };
  const listenerTotal = () => [...listeners.values()].reduce((n, s) => n + s.size, 0);
  return { mod: { MediaPlayer, FactoryMaker }, player, calls, trigger, listenerTotal };
}

/** A WebTransport that opens at once; one request is answered with HEAD, DATA, END frames. */
class FakeWebTransport {
  static last: FakeWebTransport | null = null;
  readonly ready = Promise.resolve();
  readonly closed: Promise<void>;
  readonly sent: Uint8Array[] = [];
  close_calls = 0;
  private resolveClosed!: () => void;
  readonly datagrams = { writable: new WritableStream<Uint8Array>({ write: (c) => void this.sent.push(c) }) };
  constructor(
    readonly url: string,
    readonly init: unknown,
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r));
    FakeWebTransport.last = this;
  }
  async createBidirectionalStream() {
    const payload = new Uint8Array(1000);
    const head = new TextEncoder().encode(JSON.stringify({ status: 200, total_bytes: payload.length }));
    const bytes = [encodeFrame({ type: FrameType.HEAD, seq: 1, send_time_us: 1_000 }, head), encodeFrame({ type: FrameType.DATA, seq: 2, send_time_us: 1_100 }, payload), encodeFrame({ type: FrameType.END, seq: 3, send_time_us: 1_200 })];
    return {
      writable: new WritableStream<Uint8Array>(),
      readable: new ReadableStream<Uint8Array>({
        start(c) {
          for (const b of bytes) c.enqueue(b);
          c.close();
        },
      }),
    };
  }
  close() {
    this.close_calls++;
    this.resolveClosed();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("createNuwaPlayer options", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("rejects bad input with a TypeError naming the option", () => {
    const { mod } = fakeDashjs();
    const base = { dashjs: mod, url: URL_, mpd: "/manifest.mpd" };
    expect(() => createNuwaPlayer(null as unknown as HTMLMediaElement, base)).toThrow(/video must be an HTMLMediaElement/);
    expect(() => createNuwaPlayer(video, { ...base, url: "/nuwa" })).toThrow(/options.url must be an absolute session URL/);
    expect(() => createNuwaPlayer(video, { ...base, url: "http://127.0.0.1:4433/nuwa" })).toThrow(/must be https:/);
    expect(() => createNuwaPlayer(video, { ...base, mpd: "" })).toThrow(/options.mpd must be a non-empty/);
    expect(() => createNuwaPlayer(video, { ...base, estimate_interval_ms: -1 })).toThrow(/estimate_interval_ms/);
    expect(() => createNuwaPlayer(video, { ...base, estimate_interval_ms: Number.NaN })).toThrow(/estimate_interval_ms/);
    expect(() => createNuwaPlayer(video, { ...base, start_time_s: -3 })).toThrow(/start_time_s/);
    expect(() => createNuwaPlayer(video, { ...base, dashjs: null as unknown as DashjsModuleLike })).toThrow(/must be the dashjs module/);
    expect(() => createNuwaPlayer(video, { ...base, dashjs: {} as DashjsModuleLike })).toThrow(/has no MediaPlayer/);
    expect(() => createNuwaPlayer(video, { ...base, dashjs: { MediaPlayer: mod.MediaPlayer } })).toThrow(/has no FactoryMaker/);
    const bare = { MediaPlayer: () => ({ create: () => ({ on() {} }) }), FactoryMaker: mod.FactoryMaker };
    expect(() => createNuwaPlayer(video, { ...base, dashjs: bare })).toThrow(/MediaPlayer lacks off, initialize, reset, extend, addABRCustomRule, updateSettings, getDashMetrics/);
  });

  it("wires dash.js: Nuwa loader and estimate, Nuwa ABR rule, settings, then initialize with the MPD resolved against the session URL", () => {
    const f = fakeDashjs();
    const p = createNuwaPlayer(video, { dashjs: f.mod, url: URL_, mpd: "/media/manifest.mpd", dashSettings: { debug: { logLevel: 1 } }, estimate_interval_ms: 0 });
    p.session.catch(() => {});
    const label = (c: { method: string; args: unknown[] }) => (c.method === "extend" ? `extend:${c.args[0]}` : c.method === "addABRCustomRule" ? `addABRCustomRule:${c.args[0]}:${c.args[1]}` : c.method);
    // attachNuwa's own updateSettings (built-in rules off) comes before the caller's dashSettings.
    expect(f.calls.map(label)).toEqual(["extend:XHRLoader", "extend:ThroughputController", "updateSettings", "addABRCustomRule:qualitySwitchRules:NuwaAbrRule", "updateSettings", "initialize"]);
    expect(f.calls[4]!.args[0]).toEqual({ debug: { logLevel: 1 } });
    expect(f.calls[5]!.args).toEqual([video, "https://127.0.0.1:4433/media/manifest.mpd", true]);
    p.destroy();
  });

  it("leaves dash.js's rules alone with abr: dashjs, passes autoplay, start time and an absolute MPD through", () => {
    const f = fakeDashjs();
    const p = createNuwaPlayer(video, { dashjs: { MediaPlayer: f.mod.MediaPlayer }, abr: "dashjs", url: URL_, mpd: "https://cdn.example/a.mpd", autoplay: false, start_time_s: 12 });
    p.session.catch(() => {});
    expect(f.calls.some((c) => c.method === "addABRCustomRule")).toBe(false);
    expect(f.calls.at(-1)).toEqual({ method: "initialize", args: [video, "https://cdn.example/a.mpd", false, 12] });
    p.destroy();
  });

  it("finds FactoryMaker on the ESM namespace's default export", () => {
    const f = fakeDashjs();
    const ns = { MediaPlayer: f.mod.MediaPlayer, default: f.mod };
    const p = createNuwaPlayer(video, { dashjs: ns, url: URL_, mpd: "/m.mpd" });
    p.session.catch(() => {});
    expect(f.calls.some((c) => c.method === "addABRCustomRule")).toBe(true);
    p.destroy();
  });
});

describe("createNuwaPlayer events", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("lists every event type once", () => {
    expect(new Set(NUWA_PLAYER_EVENT_TYPES).size).toBe(NUWA_PLAYER_EVENT_TYPES.length);
    expect([...NUWA_PLAYER_EVENT_TYPES].sort()).toEqual(["abr", "bitrate", "buffer", "error", "estimate", "grant", "qd", "session", "stall", "startup"]);
  });

  it("turns dash.js events into startup, stall, bitrate, buffer and error events", () => {
    const f = fakeDashjs();
    const p = createNuwaPlayer(video, { dashjs: f.mod, url: URL_, mpd: "/m.mpd", estimate_interval_ms: 0 });
    p.session.catch(() => {});
    const got: { type: string; e: unknown }[] = [];
    for (const t of ["startup", "stall", "bitrate", "buffer", "error"] as const) p.on(t, (e) => got.push({ type: t, e }));
    const of = (t: string) => got.filter((g) => g.type === t).map((g) => g.e);

    f.trigger("playbackWaiting"); // before the first frame: startup, not a stall
    f.trigger("playbackPlaying");
    f.trigger("playbackWaiting");
    f.trigger("playbackWaiting"); // one stall, however many waiting events
    f.trigger("playbackPlaying");
    f.trigger("playbackPlaying"); // no stall open: nothing
    const stalls = of("stall") as NuwaPlayerEvents["stall"][];
    expect(stalls.map((s) => s.state)).toEqual(["start", "end"]);
    const end = stalls[1]!;
    expect(end.state === "end" && end.duration_ms >= 0 && end.t_us >= stalls[0]!.t_us).toBe(true);
    expect(of("startup")).toHaveLength(1);
    expect((of("startup")[0] as NuwaPlayerEvents["startup"]).startup_ms).toBeGreaterThanOrEqual(0);

    f.trigger("qualityChangeRendered", { mediaType: "video", newRepresentation: { bandwidth: 1_000_000, width: 640, height: 360 } });
    f.trigger("qualityChangeRendered", { mediaType: "video", newRepresentation: { bandwidth: 3_000_000 } });
    f.trigger("qualityChangeRendered", { mediaType: "audio", newRepresentation: { bandwidth: 128_000 } });
    f.trigger("qualityChangeRendered", { mediaType: "video" }); // no representation: ignored
    const br = of("bitrate") as NuwaPlayerEvents["bitrate"][];
    expect(br.map((b) => [b.media_type, b.bitrate_bps, b.previous_bitrate_bps, b.width, b.height])).toEqual([
      ["video", 1_000_000, Number.NaN, 640, 360],
      ["video", 3_000_000, 1_000_000, undefined, undefined],
      ["audio", 128_000, Number.NaN, undefined, undefined],
    ]);

    f.trigger("bufferLevelUpdated", { mediaType: "video", bufferLevel: 7.5 });
    f.trigger("bufferLevelUpdated", { mediaType: "text", bufferLevel: -1 }); // disabled text track
    expect((of("buffer") as NuwaPlayerEvents["buffer"][]).map((b) => [b.media_type, b.level_s])).toEqual([["video", 7.5]]);

    f.trigger("error", { error: { code: 27, message: "manifest failed" } });
    expect(of("error")).toEqual([expect.objectContaining({ source: "dashjs", message: "dash.js error 27: manifest failed" })]);
    p.destroy();
  });

  it("reports a session that cannot open as an error event and a rejected session", async () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined); // no WebSocket fallback either (session.ts)
    const f = fakeDashjs();
    const p = createNuwaPlayer(video, { dashjs: f.mod, url: URL_, mpd: "/m.mpd" });
    const errors: NuwaPlayerEvents["error"][] = [];
    p.on("error", (e) => errors.push(e));
    await expect(p.session).rejects.toThrow();
    await sleep(0);
    // Once, with the cause (the session's own telemetry or createNuwaPlayer's fallback says it).
    expect(errors).toHaveLength(1);
    expect(errors[0]!.source).toBe("session");
    expect(errors[0]!.message).toMatch(/(WebTransport|WebSocket) is not (a constructor|defined)/);
    expect(Number.isNaN(p.estimateBps())).toBe(true);
    p.destroy();
  });

  it("emits grant, qd and estimate events from the real session and controller; destroy stops everything", async () => {
    vi.stubGlobal("WebTransport", FakeWebTransport);
    const f = fakeDashjs();
    const telemetry: string[] = [];
    const p = createNuwaPlayer(video, { dashjs: f.mod, url: URL_, mpd: "/m.mpd", preset: "live_low_latency", estimate_interval_ms: 10, onTelemetry: (e) => telemetry.push(e.type) });
    const grants: NuwaPlayerEvents["grant"][] = [];
    const qds: NuwaPlayerEvents["qd"][] = [];
    const estimates: NuwaPlayerEvents["estimate"][] = [];
    const sessions: NuwaPlayerEvents["session"][] = [];
    p.on("session", (e) => sessions.push(e));
    p.on("grant", (e) => grants.push(e));
    p.on("qd", (e) => qds.push(e));
    const offEstimate = p.on("estimate", (e) => estimates.push(e));
    const s = await p.session;
    expect(sessions).toEqual([{ t_us: expect.any(Number), state: "open", sessions: 1 }]);
    const res = await s.request({ op: "get", path: "/x" });
    expect(res.head.status).toBe(200);
    await sleep(60);

    // qd: one per frame, the controller's numbers, Td of the preset (TD_PRESETS_MS.live_low_latency = 10 ms).
    expect(qds).toHaveLength(3);
    expect(qds.map((q) => q.size_bytes)).toEqual([20 + JSON.stringify({ status: 200, total_bytes: 1000 }).length, 1020, 20]);
    expect(qds.every((q) => q.target_delay_ms === 10 && q.window_bytes > 0 && Number.isFinite(q.raw_queuing_delay_ms))).toBe(true);
    // grant events match the datagrams actually written.
    const wt = FakeWebTransport.last!;
    expect(grants.length).toBeGreaterThan(0);
    const sent = wt.sent.map((b) => decodeGrant(b));
    for (const g of grants.slice(0, sent.length)) {
      const d = sent.find((x) => x.grant_seq === g.grant_seq);
      expect(d).toBeDefined();
      expect(d!.window_bytes).toBe(g.window_bytes);
      expect(d!.cum_received_bytes).toBe(g.cum_received_bytes);
    }
    expect(estimates.length).toBeGreaterThan(0);
    expect(estimates.at(-1)!.bps).toBeCloseTo(p.estimateBps(), -3);
    expect(Number.isNaN(estimates.at(-1)!.dashjs_bps)).toBe(true); // dash.js never asked
    expect(telemetry).toContain("frame"); // the caller's own onTelemetry still runs
    expect(telemetry).toContain("grant");

    // Unsubscribe one handler: no more estimate events for it.
    offEstimate();
    const n_est = estimates.length;
    await sleep(30);
    expect(estimates.length).toBe(n_est);

    const n_listeners = f.listenerTotal();
    expect(n_listeners).toBe(5);
    p.destroy();
    p.destroy(); // idempotent
    expect(f.listenerTotal()).toBe(0);
    expect(f.calls.filter((c) => c.method === "reset")).toHaveLength(1);
    expect(wt.close_calls).toBe(1);
    const n_grants = grants.length;
    await sleep(30);
    expect(grants.length).toBe(n_grants);
  });

  it("maps telemetry to events: a frame's decision becomes qd, rtt none", () => {
    const c = new NuwaController();
    const decision = c.onFrame(1_000, 50_000, 1_200);
    const out = telemetryToPlayerEvent({ type: "frame", t_us: 50_000, seq: 7, send_time_us: 1_000, size_bytes: 1_200, decision }, 20);
    expect(out).toEqual({
      type: "qd",
      event: {
        t_us: 50_000,
        queuing_delay_ms: decision.queuing_delay_ms,
        raw_queuing_delay_ms: decision.raw_queuing_delay_ms,
        kalman_queuing_delay_ms: decision.kalman_queuing_delay_ms,
        target_delay_ms: 20,
        window_bytes: decision.window_bytes,
        phase: decision.phase,
        theta: decision.theta,
        size_bytes: 1_200,
        reason: decision.reason,
      },
    });
    expect(telemetryToPlayerEvent({ type: "rtt", t_us: 1, rtt_us: 5_000 }, 20)).toBeNull();
    expect(telemetryToPlayerEvent({ type: "error", t_us: 1, message: "x" }, 20)).toEqual({ type: "error", event: { t_us: 1, source: "session", message: "x" } });
    // issue 19: content the glue refuses (mpd.ts) is an error event naming the feature
    expect(telemetryToPlayerEvent({ type: "content_error", t_us: 4, feature: "live", message: "unsupported content: live" }, 20)).toEqual({
      type: "error",
      event: { t_us: 4, source: "content", message: "unsupported content: live", feature: "live" },
    });
    expect(telemetryToPlayerEvent({ type: "session_closed", t_us: 2, reason: "stalled", failed_requests: 3 }, 20)).toEqual({ type: "session", event: { t_us: 2, state: "closed", reason: "stalled", failed_requests: 3 } });
    expect(telemetryToPlayerEvent({ type: "reconnect", t_us: 3, attempt: 2, delay_ms: 400, reason: "stalled" }, 20)).toEqual({ type: "session", event: { t_us: 3, state: "reconnecting", attempt: 2, delay_ms: 400, reason: "stalled" } });
  });
});
