/**
 * `createNuwaPlayer(video, options)`: dash.js over Nuwa in one call. Creates
 * the dash.js MediaPlayer, wires it to a Nuwa session with `attachNuwa`,
 * initializes it with the MPD, and turns Nuwa's telemetry and dash.js's
 * events into one typed stream: `player.on("stall", e => …)` returns the
 * unsubscribe function. Sites that build their own MediaPlayer keep using
 * `attachNuwa` directly.
 *
 * dash.js is passed in (`options.dashjs`), never imported here: the module
 * needs a browser (it reads `navigator` at import), and a site picks its own
 * dash.js build. Tested against dash.js 5.2.1.
 */
import type { BandwidthEstimate, NuwaConfig, Phase } from "@nuwa/cc";
import { TypedEmitter, type Unsubscribe } from "../emitter.js";
import type { NuwaSession, TelemetryEvent } from "../session.js";
import type { TunerEvent } from "../tuner.js";
import type { AbrDecision } from "./abr.js";
import { type AttachOptions, attachNuwa, type ContentErrorEvent, type DashjsLike, type DashPlayerLike, type FetchAheadTelemetry, type NuwaAttachment, type Preset } from "./attach.js";

/** Everything a NuwaPlayer reports. Times `t_us` are performance.now() × 1000, µs (the session's clock). */
export interface NuwaPlayerEvents {
  /** A grant (window) sent to the server (control mode only; at least every 10 ms while the session is open). */
  grant: { t_us: number; grant_seq: number; window_bytes: number; cum_received_bytes: number };
  /** One received frame's queuing delay and the window decided on it (one event per frame: up to ~1000/s at 10 Mbit/s). */
  qd: {
    t_us: number;
    /** Queuing delay that drove the decision, ms. */
    queuing_delay_ms: number;
    /** Raw one-way queuing delay of this frame (nuwa-icpads Eq. 1), ms. */
    raw_queuing_delay_ms: number;
    /** Kalman-filtered queuing delay (nuwa-rl-journal Eq. 2–4), ms. */
    kalman_queuing_delay_ms: number;
    /** Target delay Td in force, ms (NaN if the session is not open yet). */
    target_delay_ms: number;
    window_bytes: number;
    phase: Phase;
    /** θ = tanh((Td − Qd)/ρ) of the last update. */
    theta: number;
    size_bytes: number;
    reason: string;
  };
  /** Nuwa's bandwidth estimate every `estimate_interval_ms`, once the session is open; `dashjs_bps` is dash.js's own figure (NaN until dash.js asked for one). */
  estimate: BandwidthEstimate & { t_us: number; dashjs_bps: number };
  /** A rendered quality change (dash.js QUALITY_CHANGE_RENDERED). `previous_bitrate_bps` is NaN for the first. */
  bitrate: { t_us: number; media_type: string; bitrate_bps: number; previous_bitrate_bps: number; width?: number; height?: number };
  /** Buffer level of one media type (dash.js BUFFER_LEVEL_UPDATED), s. */
  buffer: { t_us: number; media_type: string; level_s: number };
  /** A rebuffer after playback started: dash.js PLAYBACK_WAITING opens it, the next PLAYBACK_PLAYING closes it. Waiting after a seek counts too. */
  stall: { t_us: number; state: "start" } | { t_us: number; state: "end"; duration_ms: number };
  /** Playback started for the first time; `startup_ms` counts from `initialize`. */
  startup: { t_us: number; startup_ms: number };
  /** A decision of Nuwa's ABR rule (abr: "nuwa"). */
  abr: { t_us: number; decision: AbrDecision };
  /** The session's life: opened (`sessions` counts 1 + reconnects), closed (with why and how many open requests failed), reconnecting after a backoff. */
  session:
    | { t_us: number; state: "open"; sessions: number }
    | { t_us: number; state: "closed"; reason: string; failed_requests: number }
    | { t_us: number; state: "reconnecting"; attempt: number; delay_ms: number; reason: string };
  /** The session failed to open or reported an error, dash.js raised ERROR, or the content uses a feature the glue refuses (`source: "content"`, `feature`: drm | live | codec; mpd.ts). */
  error: { t_us: number; source: "session" | "dashjs" | "content"; message: string; feature?: string };
}

export type NuwaPlayerEventType = keyof NuwaPlayerEvents;

/** Every event type, in documentation order. */
export const NUWA_PLAYER_EVENT_TYPES: readonly NuwaPlayerEventType[] = ["grant", "qd", "estimate", "bitrate", "buffer", "stall", "startup", "abr", "session", "error"];

/** The least of the dashjs module that the signature asks for; `import * as dashjs from "dashjs"` fits as is. */
export interface DashjsModuleLike {
  MediaPlayer(): { create(): object };
}

/** The MediaPlayer type that a dashjs module's `MediaPlayer().create()` returns. */
export type MediaPlayerOf<M extends DashjsModuleLike> = ReturnType<ReturnType<M["MediaPlayer"]>["create"]>;

export interface NuwaPlayerOptions<M extends DashjsModuleLike = DashjsModuleLike> extends AttachOptions {
  /**
   * The dashjs module (`import * as dashjs from "dashjs"`, its default export, or `window.dashjs`).
   * dash.js's ESM build puts FactoryMaker on the default export only; both forms are accepted.
   */
  dashjs: M;
  /** MPD URL, absolute or relative to the session `url` (e.g. `/manifest.mpd`). Fetched over the Nuwa session. */
  mpd: string;
  /** Start playing when ready (default true). */
  autoplay?: boolean;
  /** Start position, s from the start of the presentation. */
  start_time_s?: number;
  /** Extra dash.js settings, applied with `player.updateSettings` after Nuwa's and before `initialize`. */
  dashSettings?: object;
  /** Period of `estimate` events, ms (default 250; 0 turns them off). */
  estimate_interval_ms?: number;
}

export interface NuwaPlayer<P = object> {
  /** The dash.js MediaPlayer (already initialized). */
  readonly player: P;
  /** The Nuwa attachment: session, presets, parameters. */
  readonly nuwa: NuwaAttachment;
  /** Resolves when the session is open; rejects if the handshake fails (also reported as an `error` event). */
  readonly session: Promise<NuwaSession>;
  /**
   * Call `handler` for every event of `type`; returns the unsubscribe function.
   * @throws TypeError on an unknown type or a handler that is not a function
   */
  on<K extends NuwaPlayerEventType>(type: K, handler: (e: NuwaPlayerEvents[K]) => void): Unsubscribe;
  /** Current estimate, bits per second (NaN before the session is open). */
  estimateBps(): number;
  /** Change Td (and ρ, k) while playing (TD_PRESETS_MS). */
  setPreset(p: Preset): void;
  setParams(p: Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss">>): void;
  /** Stop: dash.js reset, session closed, timers stopped, handlers dropped. Idempotent. */
  destroy(): void;
}

/** What createNuwaPlayer calls on the MediaPlayer at run time. */
interface RuntimePlayer extends DashPlayerLike {
  on(type: string, listener: (e: never) => void): void;
  off(type: string, listener: (e: never) => void): void;
  initialize(view: unknown, source: string, autoPlay: boolean, startTime?: number): void;
  reset(): void;
  isReady?(): boolean;
}

const PLAYER_METHODS = ["on", "off", "initialize", "reset", "extend", "addABRCustomRule", "updateSettings", "getDashMetrics"] as const;

/** dash.js MediaPlayer event names (dash.js 5 `MediaPlayer.events`), used when the module does not carry them. */
const DASH_EVENTS = {
  PLAYBACK_WAITING: "playbackWaiting",
  PLAYBACK_PLAYING: "playbackPlaying",
  QUALITY_CHANGE_RENDERED: "qualityChangeRendered",
  BUFFER_LEVEL_UPDATED: "bufferLevelUpdated",
  ERROR: "error",
} as const;

/** The dashjs module object that carries FactoryMaker (the ESM namespace keeps it on `default`). */
function resolveDashjs(mod: unknown): DashjsLike & { MediaPlayer: (() => { create(): unknown }) & { events?: Record<string, string> } } {
  const m = mod as { default?: unknown; FactoryMaker?: unknown; MediaPlayer?: unknown } | null;
  if (m === null || typeof m !== "object") throw new TypeError("createNuwaPlayer: options.dashjs must be the dashjs module");
  const d = m.default as { FactoryMaker?: unknown; MediaPlayer?: unknown } | undefined;
  const pick = m.FactoryMaker === undefined && d && typeof d === "object" && d.FactoryMaker !== undefined ? d : m;
  if (typeof pick.MediaPlayer !== "function") throw new TypeError("createNuwaPlayer: options.dashjs has no MediaPlayer(); pass the dashjs module");
  return pick as ReturnType<typeof resolveDashjs>;
}

/**
 * Map one session/attachment telemetry event to NuwaPlayer events (pure).
 * @param target_delay_ms Td in force, ms (NaN when unknown)
 */
export function telemetryToPlayerEvent(
  e: TelemetryEvent | TunerEvent | { type: "abr"; t_us: number; decision: AbrDecision } | ContentErrorEvent | FetchAheadTelemetry,
  target_delay_ms: number,
): { [K in NuwaPlayerEventType]: { type: K; event: NuwaPlayerEvents[K] } }[NuwaPlayerEventType] | null {
  switch (e.type) {
    case "grant":
      return { type: "grant", event: { t_us: e.t_us, grant_seq: e.grant_seq, window_bytes: e.window_bytes, cum_received_bytes: e.cum_received_bytes } };
    case "frame": {
      const d = e.decision;
      return {
        type: "qd",
        event: {
          t_us: e.t_us,
          queuing_delay_ms: d.queuing_delay_ms,
          raw_queuing_delay_ms: d.raw_queuing_delay_ms,
          kalman_queuing_delay_ms: d.kalman_queuing_delay_ms,
          target_delay_ms,
          window_bytes: d.window_bytes,
          phase: d.phase,
          theta: d.theta,
          size_bytes: e.size_bytes,
          reason: d.reason,
        },
      };
    }
    case "abr":
      return { type: "abr", event: { t_us: e.t_us, decision: e.decision } };
    case "error":
      return { type: "error", event: { t_us: e.t_us, source: "session", message: e.message } };
    case "content_error":
      return { type: "error", event: { t_us: e.t_us, source: "content", message: e.message, feature: e.feature } };
    case "session_open":
      return { type: "session", event: { t_us: e.t_us, state: "open", sessions: e.sessions } };
    case "session_closed":
      return { type: "session", event: { t_us: e.t_us, state: "closed", reason: e.reason, failed_requests: e.failed_requests } };
    case "reconnect":
      return { type: "session", event: { t_us: e.t_us, state: "reconnecting", attempt: e.attempt, delay_ms: e.delay_ms, reason: e.reason } };
    default:
      return null; // rtt: folded into the estimate; tuner_*, fetch_ahead: reach options.onTelemetry only
  }
}

/**
 * Play `options.mpd` in `video` with dash.js, every request carried by a Nuwa
 * session and dash.js's ABR fed Nuwa's estimate (see `attachNuwa` for
 * `url`, `mode`, `abr`, `estimate`, `preset`, `cc`). Returns at once; the
 * session opens in the background (`session`, or an `error` event).
 *
 * @example
 *   import * as dashjs from "dashjs";
 *   const p = createNuwaPlayer(video, { dashjs, url: "https://127.0.0.1:4433/nuwa", serverCertificateHashHex: hash, mpd: "/manifest.mpd", preset: "vod" });
 *   const off = p.on("stall", (e) => console.log(e.state, e.t_us));
 * @throws TypeError on a missing video element, a bad `url` or `mpd`, a `dashjs` that is not the dashjs module,
 *   or a bad `estimate_interval_ms` / `start_time_s`
 */
export function createNuwaPlayer<M extends DashjsModuleLike>(video: HTMLMediaElement, options: NuwaPlayerOptions<M>): NuwaPlayer<MediaPlayerOf<M>> {
  if (video === null || typeof video !== "object") throw new TypeError("createNuwaPlayer: video must be an HTMLMediaElement");
  if (options === null || typeof options !== "object") throw new TypeError("createNuwaPlayer: options are required");
  let session_url: URL;
  try {
    session_url = new URL(options.url);
  } catch {
    throw new TypeError(`createNuwaPlayer: options.url must be an absolute session URL (https://host:port/path), got ${JSON.stringify(options.url)}`);
  }
  if (session_url.protocol !== "https:") throw new TypeError(`createNuwaPlayer: options.url must be https: (WebTransport), got ${session_url.protocol}`);
  if (typeof options.mpd !== "string" || options.mpd === "") throw new TypeError("createNuwaPlayer: options.mpd must be a non-empty URL string");
  const mpd_url = new URL(options.mpd, session_url).href;
  const interval_ms = options.estimate_interval_ms ?? 250;
  if (!(interval_ms >= 0) || !Number.isFinite(interval_ms)) throw new TypeError(`createNuwaPlayer: estimate_interval_ms must be a finite number ≥ 0, got ${interval_ms}`);
  if (options.start_time_s !== undefined && !(options.start_time_s >= 0)) throw new TypeError(`createNuwaPlayer: start_time_s must be ≥ 0, got ${options.start_time_s}`);
  const dj = resolveDashjs(options.dashjs);
  if ((options.abr ?? "nuwa") !== "dashjs" && typeof dj.FactoryMaker?.getClassFactoryByName !== "function") {
    throw new TypeError('createNuwaPlayer: options.dashjs has no FactoryMaker (needed for abr: "nuwa"); pass the dashjs module or its default export');
  }

  const player = dj.MediaPlayer().create() as RuntimePlayer;
  const missing = PLAYER_METHODS.filter((k) => typeof (player as unknown as Record<string, unknown>)[k] !== "function");
  if (missing.length > 0) throw new TypeError(`createNuwaPlayer: dash.js MediaPlayer lacks ${missing.join(", ")} (dash.js 5 expected)`);

  const now_us = () => performance.now() * 1000;
  const emitter = new TypedEmitter<NuwaPlayerEvents>([...NUWA_PLAYER_EVENT_TYPES]);
  let destroyed = false;
  let session_error_reported = false;
  let dashjs_bps = Number.NaN;

  const nuwa = attachNuwa(player, dj, {
    ...options,
    onTelemetry: (e) => {
      options.onTelemetry?.(e);
      const out = telemetryToPlayerEvent(e, live()?.controller.config.target_delay_ms ?? Number.NaN);
      if (out?.type === "error" && out.event.source === "session") session_error_reported = true;
      if (out) emitter.emit(out.type, out.event as never);
    },
    onDashjsEstimate: (kbps) => {
      options.onDashjsEstimate?.(kbps);
      dashjs_bps = kbps * 1000;
    },
  });
  /** The session open now (a new one after each reconnect), or null. */
  const live = (): NuwaSession | null => nuwa.current();
  const session = nuwa.session;
  session.catch((err: unknown) => {
    // Reported once: the session's own telemetry may already have said why.
    if (!destroyed && !session_error_reported) emitter.emit("error", { t_us: now_us(), source: "session", message: `session did not open: ${String(err)}` });
  });

  if (options.dashSettings) player.updateSettings(options.dashSettings);

  // dash.js events → NuwaPlayer events.
  const ev = { ...DASH_EVENTS, ...(dj.MediaPlayer.events ?? {}) };
  let started = false;
  let stall_start_us = Number.NaN;
  let initialized_us = Number.NaN;
  const previous_bps = new Map<string, number>();
  const listeners: [string, (e: never) => void][] = [
    [
      ev.PLAYBACK_WAITING,
      () => {
        if (!started || !Number.isNaN(stall_start_us)) return;
        stall_start_us = now_us();
        emitter.emit("stall", { t_us: stall_start_us, state: "start" });
      },
    ],
    [
      ev.PLAYBACK_PLAYING,
      () => {
        const t = now_us();
        if (!started) {
          started = true;
          emitter.emit("startup", { t_us: t, startup_ms: (t - initialized_us) / 1000 });
        } else if (!Number.isNaN(stall_start_us)) {
          const duration_ms = (t - stall_start_us) / 1000;
          stall_start_us = Number.NaN;
          emitter.emit("stall", { t_us: t, state: "end", duration_ms });
        }
      },
    ],
    [
      ev.QUALITY_CHANGE_RENDERED,
      (e: { mediaType?: string; newRepresentation?: { bandwidth?: number; width?: number; height?: number } }) => {
        const rep = e.newRepresentation;
        if (!rep || typeof rep.bandwidth !== "number" || !e.mediaType) return;
        const event: NuwaPlayerEvents["bitrate"] = { t_us: now_us(), media_type: e.mediaType, bitrate_bps: rep.bandwidth, previous_bitrate_bps: previous_bps.get(e.mediaType) ?? Number.NaN };
        if (typeof rep.width === "number") event.width = rep.width;
        if (typeof rep.height === "number") event.height = rep.height;
        previous_bps.set(e.mediaType, rep.bandwidth);
        emitter.emit("bitrate", event);
      },
    ],
    [
      ev.BUFFER_LEVEL_UPDATED,
      (e: { mediaType?: string; bufferLevel?: number }) => {
        // dash.js reports −1 for a disabled text track.
        if (!e.mediaType || typeof e.bufferLevel !== "number" || !(e.bufferLevel >= 0)) return;
        emitter.emit("buffer", { t_us: now_us(), media_type: e.mediaType, level_s: e.bufferLevel });
      },
    ],
    [
      ev.ERROR,
      (e: { error?: { code?: number; message?: string } }) => {
        const err = e.error;
        emitter.emit("error", { t_us: now_us(), source: "dashjs", message: err ? `dash.js error ${err.code ?? "?"}: ${err.message ?? ""}` : `dash.js error ${JSON.stringify(e).slice(0, 300)}` });
      },
    ],
  ];
  for (const [type, l] of listeners) player.on(type, l);

  const timer =
    interval_ms > 0
      ? setInterval(() => {
          const s = live();
          if (!s || emitter.listenerCount("estimate") === 0) return;
          const t = now_us();
          const own_kbps = nuwa.dashjsEstimateKbps(); // read now, at the same instant as Nuwa's
          if (Number.isFinite(own_kbps)) dashjs_bps = own_kbps * 1000;
          emitter.emit("estimate", { ...s.controller.estimate(t), t_us: t, dashjs_bps });
        }, interval_ms)
      : null;

  initialized_us = now_us();
  if (options.start_time_s === undefined) player.initialize(video, mpd_url, options.autoplay ?? true);
  else player.initialize(video, mpd_url, options.autoplay ?? true, options.start_time_s);

  return {
    player: player as unknown as MediaPlayerOf<M>,
    nuwa,
    session,
    on: (type, handler) => emitter.on(type, handler),
    estimateBps: () => nuwa.estimateBps(),
    setPreset: (p) => nuwa.setPreset(p),
    setParams: (p) => nuwa.setParams(p),
    destroy: () => {
      if (destroyed) return;
      destroyed = true;
      if (timer !== null) clearInterval(timer);
      for (const [type, l] of listeners) player.off(type, l);
      emitter.clear();
      const was_ready = typeof player.isReady !== "function" || player.isReady();
      try {
        player.reset();
      } catch (err) {
        // dash.js throws "MediaPlayer not initialized!" when initialize never completed (no MediaSource): nothing to reset.
        if (was_ready) throw err;
      } finally {
        nuwa.close();
      }
    },
  };
}
