/**
 * The demo page's three players behind one interface (issue 19 item 6): dash.js through
 * `createNuwaPlayer`, hls.js through `@nuwa/player/hls` (Nuwa's MPC in hls.js's
 * AbrController), shaka-player through `@nuwa/player/shaka` (shaka's ABR on Nuwa's estimate).
 * All three grant the window (mode "control") and plan on Nuwa's estimate; what the page
 * plots (Qd, window, grant, both estimates, buffer, bitrate, k, ρ) comes from each the same
 * way: Qd and grants from the session's telemetry, the window and parameters from the
 * session's controller, the player's own estimate from the player (dash.js's
 * ThroughputController, hls.js's EWMA, shaka's EWMA).
 */
import type { NuwaConfig, NuwaController } from "@nuwa/cc";
import { createNuwaPlayer, RL_CC } from "@nuwa/player";
import type { ShakaLike } from "@nuwa/player/shaka";
import * as dashjsModule from "dashjs";
import type * as shakaModule from "shaka-player";
import type { DemoPlayerKind } from "./choice.js";

// The ESM build puts FactoryMaker only on its default export; the typings declare no default.
const dashjs = ((dashjsModule as unknown as { default?: typeof dashjsModule }).default ?? dashjsModule) as typeof dashjsModule;
type Shaka = typeof shakaModule.default.default;

type Params = Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss">>;

export interface DemoPlayerOptions {
  session_url: string;
  cert_sha256_hex: string;
  /** Manifest path on the session's origin (an MPD, or an HLS playlist for hls.js). */
  manifest: string;
  target_delay_ms: number;
  sensitivity_ms: number;
  /** dash.js only: the Nuwa-RL k tuner (issue 6). */
  rl: boolean;
  /** Estimate sampling interval, ms (dash.js's estimate events). */
  estimate_interval_ms: number;
  onQd: (t_us: number, raw_queuing_delay_ms: number) => void;
  onGrant: (window_bytes: number) => void;
  /** dash.js's Nuwa-RL events, as text for the status line; `failed` makes it an error. */
  onTuner: (note: string, k_mss: number | null, failed: boolean) => void;
  onError: (message: string) => void;
}

export interface DemoPlayer {
  kind: DemoPlayerKind;
  /** Resolves when the first session is open. */
  session: Promise<unknown>;
  /** The open session's controller, null between sessions. */
  controller(): Pick<NuwaController, "config" | "windowBytes"> | null;
  nuwaBps(): number;
  /** The player's own estimate, bit/s (NaN before its first sample). */
  playerBps(): number;
  bufferS(): number;
  bitrateBps(): number;
  stalls(): number;
  /** @throws RangeError on a value the controller refuses */
  setParams(p: Params): void;
  destroy(): void;
}

/** Seconds buffered ahead of the playhead (the range holding it). */
function bufferAhead(video: HTMLVideoElement): number {
  const b = video.buffered;
  for (let i = 0; i < b.length; i++) if (b.start(i) <= video.currentTime + 0.1 && video.currentTime <= b.end(i)) return b.end(i) - video.currentTime;
  return 0;
}

/** Count rebuffers (`waiting` after playback started) and loop at the end. */
function watchVideo(video: HTMLVideoElement): { stalls: () => number } {
  let started = false;
  let stalls = 0;
  video.addEventListener("playing", () => {
    started = true;
  });
  video.addEventListener("waiting", () => {
    if (started) stalls++;
  });
  video.addEventListener("ended", () => {
    video.currentTime = 0;
    void video.play().catch(() => {});
  });
  return { stalls: () => stalls };
}

/**
 * Start `kind` playing `o.manifest` in `video` over a Nuwa session. hls.js and shaka-player
 * (and their adapters) are loaded only when picked, so the dash.js page loads neither.
 * @throws Error when the player cannot start (hls.js without MSE, ...)
 */
export async function startDemoPlayer(kind: DemoPlayerKind, video: HTMLVideoElement, o: DemoPlayerOptions): Promise<DemoPlayer> {
  if (kind === "hlsjs") return startHls(video, o);
  if (kind === "shaka") return startShaka(video, o);
  return startDash(video, o);
}

function startDash(video: HTMLVideoElement, o: DemoPlayerOptions): DemoPlayer {
  let est_bps = Number.NaN;
  let dashjs_bps = Number.NaN;
  let buffer_s = Number.NaN;
  let bitrate_bps = Number.NaN;
  let stalls = 0;
  const np = createNuwaPlayer(video, {
    dashjs,
    url: o.session_url,
    serverCertificateHashHex: o.cert_sha256_hex,
    mpd: o.manifest,
    cc: o.rl
      ? { ...RL_CC, target_delay_ms: o.target_delay_ms, sensitivity_ms: o.sensitivity_ms, tuner: "rl", model: "/models/nuwa-rl.onnx", tuner_options: { wasm_paths: "/ort/" } }
      : { target_delay_ms: o.target_delay_ms, sensitivity_ms: o.sensitivity_ms },
    onTelemetry: (e) => {
      if (e.type === "tuner_ready") o.onTuner(`Nuwa-RL: running every ${e.interval_ms} ms`, null, false);
      else if (e.type === "tuner_decision") o.onTuner(`Nuwa-RL: k ${e.k_mss.toFixed(2)} (×${e.factor}, ${e.inference_ms.toFixed(2)} ms)`, e.k_mss, false);
      else if (e.type === "tuner_fallback") o.onTuner(`Nuwa-RL failed, fixed k ${e.k_mss}: ${e.error}`, null, true);
    },
    mode: "control",
    abr: "nuwa",
    estimate: "nuwa",
    estimate_interval_ms: o.estimate_interval_ms,
    dashSettings: { debug: { logLevel: 1 }, streaming: { buffer: { bufferTimeDefault: 12, bufferTimeAtTopQuality: 20, bufferTimeAtTopQualityLongForm: 20 } } },
  });
  np.on("qd", (e) => o.onQd(e.t_us, e.raw_queuing_delay_ms));
  np.on("grant", (e) => o.onGrant(e.window_bytes));
  np.on("estimate", (e) => {
    est_bps = e.bps;
    dashjs_bps = e.dashjs_bps;
  });
  np.on("buffer", (e) => {
    if (e.media_type === "video") buffer_s = e.level_s;
  });
  np.on("bitrate", (e) => {
    if (e.media_type === "video") bitrate_bps = e.bitrate_bps;
  });
  np.on("stall", (e) => {
    if (e.state === "start") stalls++;
  });
  np.on("error", (e) => o.onError(`${e.source}: ${e.message}`));
  np.player.on(dashjs.MediaPlayer.events.PLAYBACK_ENDED, () => np.player.seek(0)); // loop
  return {
    kind: "dashjs",
    session: np.session,
    controller: () => np.nuwa.current()?.controller ?? null,
    nuwaBps: () => est_bps,
    playerBps: () => dashjs_bps,
    bufferS: () => buffer_s,
    bitrateBps: () => bitrate_bps,
    stalls: () => stalls,
    setParams: (p) => np.setParams(p),
    destroy: () => np.destroy(),
  };
}

async function startHls(video: HTMLVideoElement, o: DemoPlayerOptions): Promise<DemoPlayer> {
  const [{ default: Hls }, { attachNuwaToHls }] = await Promise.all([import("hls.js"), import("@nuwa/player/hls")]);
  if (!Hls.isSupported()) throw new Error("hls.js: this browser has no Media Source Extensions");
  const nuwa = attachNuwaToHls(Hls, {
    url: o.session_url,
    serverCertificateHashHex: o.cert_sha256_hex,
    cc: { target_delay_ms: o.target_delay_ms, sensitivity_ms: o.sensitivity_ms },
    mode: "control",
    abr: "nuwa",
    estimate: "nuwa",
    onTelemetry: (e) => {
      if (e.type === "frame") o.onQd(e.t_us, e.decision.raw_queuing_delay_ms);
      else if (e.type === "grant") o.onGrant(e.window_bytes);
      else if (e.type === "error") o.onError(`session: ${e.message}`);
    },
  });
  const hls = nuwa.create(); // hls.js's own settings as shipped
  let bitrate_bps = Number.NaN;
  hls.on(Hls.Events.LEVEL_SWITCHED, (_e, d) => {
    bitrate_bps = hls.levels[d.level]?.bitrate ?? Number.NaN;
  });
  hls.on(Hls.Events.ERROR, (_e, d) => {
    if (d.fatal) o.onError(`hls.js: ${d.type} ${d.details}`);
  });
  hls.on(Hls.Events.MANIFEST_PARSED, () => void video.play().catch(() => {}));
  const v = watchVideo(video);
  const session = nuwa.session.then((s) => {
    hls.loadSource(`${new URL(o.session_url).origin}${o.manifest}`);
    hls.attachMedia(video);
    return s;
  });
  return {
    kind: "hlsjs",
    session,
    controller: () => nuwa.current()?.controller ?? null,
    nuwaBps: () => nuwa.estimateBps(),
    playerBps: () => nuwa.hlsjsEstimateBps(),
    bufferS: () => bufferAhead(video),
    bitrateBps: () => bitrate_bps,
    stalls: v.stalls,
    setParams: (p) => {
      const c = nuwa.current()?.controller;
      if (!c) throw new Error("no session open (reconnecting): try again");
      c.setParams(p); // the session's controller (RangeError when refused)
    },
    destroy: () => {
      hls.destroy();
      nuwa.close();
    },
  };
}

async function startShaka(video: HTMLVideoElement, o: DemoPlayerOptions): Promise<DemoPlayer> {
  const [shakaModule, { attachNuwaShaka }] = await Promise.all([import("shaka-player"), import("@nuwa/player/shaka")]);
  const shaka = ((shakaModule as unknown as { default?: Shaka }).default ?? shakaModule) as Shaka; // CommonJS: the namespace is module.exports
  shaka.polyfill.installAll();
  const player = new shaka.Player();
  const nuwa = attachNuwaShaka(player as never, shaka as unknown as ShakaLike, {
    url: o.session_url,
    serverCertificateHashHex: o.cert_sha256_hex,
    cc: { target_delay_ms: o.target_delay_ms, sensitivity_ms: o.sensitivity_ms },
    mode: "control",
    estimate: "nuwa",
    onTelemetry: (e) => {
      if (e.type === "frame") o.onQd(e.t_us, e.decision.raw_queuing_delay_ms);
      else if (e.type === "grant") o.onGrant(e.window_bytes);
      else if (e.type === "error") o.onError(`session: ${e.message}`);
    },
  });
  player.addEventListener("error", (e) => o.onError(`shaka: ${JSON.stringify((e as unknown as { detail: unknown }).detail).slice(0, 300)}`));
  const v = watchVideo(video);
  const session = (async () => {
    await player.attach(video);
    const s = await nuwa.session;
    await player.load(`${new URL(o.session_url).origin}${o.manifest}`);
    video.muted = true;
    await video.play().catch(() => {});
    return s;
  })();
  session.catch((e: unknown) => o.onError(`shaka: ${(e as Error).message ?? String(e)}`));
  return {
    kind: "shaka",
    session,
    controller: () => nuwa.current()?.controller ?? null,
    nuwaBps: () => nuwa.estimateBps(),
    playerBps: () => nuwa.shakaEstimateBps(),
    bufferS: () => bufferAhead(video),
    bitrateBps: () => {
      const t = player.getVariantTracks().find((x) => x.active);
      return t?.videoBandwidth ?? t?.bandwidth ?? Number.NaN;
    },
    stalls: v.stalls,
    setParams: (p) => nuwa.setParams(p),
    destroy: () => {
      nuwa.close();
      void player.destroy();
    },
  };
}
