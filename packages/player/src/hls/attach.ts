/**
 * Public API for a site that uses hls.js (`@nuwa/player/hls`): `attachNuwaToHls(Hls, options)`
 * takes the Hls class (the package never imports hls.js: it is the site's, an optional peer)
 * and returns the config that makes hls.js load every playlist and fragment over a Nuwa
 * session (`loader`, hls/loader.ts) and, unless `abr` and `estimate` are both `hlsjs`, an
 * `abrController` fed Nuwa's estimate and (default) deciding with Nuwa's MPC (hls/abr.ts).
 * With `abr: "hlsjs", estimate: "hlsjs"` only the loader is replaced: hls.js's ABR, its
 * estimate and every setting stay as shipped (the baseline).
 *
 * ```ts
 * import Hls from "hls.js";
 * import { attachNuwaToHls } from "@nuwa/player/hls";
 * const nuwa = attachNuwaToHls(Hls, { url: "https://example.org/nuwa" });
 * const hls = nuwa.create(); // new Hls({ ...yourConfig, ...nuwa.config })
 * hls.loadSource("https://example.org/master.m3u8");
 * hls.attachMedia(video);
 * ```
 */
import type { NuwaConfig } from "@nuwa/cc";
import type { EstimateSource } from "../dash/abr.js";
import { type Preset, TD_PRESETS_MS } from "../dash/attach.js";
import { MpcHistory } from "../dash/mpc.js";
import { type ReconnectPolicy, SessionManager } from "../reconnect.js";
import { NuwaSession, type SessionMode, type TelemetryEvent, type TransportKind } from "../session.js";
import { makeNuwaHlsAbr, type NuwaHlsAbr } from "./abr.js";
import { makeNuwaHlsLoader, type NuwaHlsLoaderClass } from "./loader.js";

/** The Hls class as this module uses it: a constructor and its default config's AbrController. */
export interface HlsClassLike<H> {
  new (config?: Record<string, unknown>): H;
  DefaultConfig: { abrController: unknown };
}

/** How long a timed-out load's transfer waits for hls.js's retry to take it over with `retry_takeover`, ms. */
export const HLS_RETRY_TAKEOVER_MS = 3_000;

export interface HlsAttachOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`. */
  url: string;
  serverCertificateHashHex?: string;
  /** `auto` (default): WebTransport if the page has it, else the WebSocket fallback. */
  transport?: "auto" | TransportKind;
  websocket_url?: string;
  /** Controller settings (`@nuwa/cc` NuwaConfig). */
  cc?: Partial<NuwaConfig>;
  /** `control` (default) grants the window; `observe` estimates only (the server runs its own cubic). */
  mode?: SessionMode;
  /** `nuwa` (default): Nuwa's MPC picks the level; `hlsjs`: hls.js's own rules do. */
  abr?: "nuwa" | "hlsjs";
  /** `nuwa` (default): hls.js's estimator answers Nuwa's figure; `hlsjs`: its own, untouched. */
  estimate?: "nuwa" | "hlsjs";
  preset?: Preset;
  onTelemetry?: (e: TelemetryEvent | { type: "abr"; t_us: number; reason: string }) => void;
  reconnect?: Partial<ReconnectPolicy>;
  /** Stall watchdog, ms (session.ts; default 4000, 0: never). */
  stall_timeout_ms?: number;
  /**
   * With `abr: "nuwa"`: when the MPC decides again (hls/abr.ts module doc). `per_fragment`
   * (default): once per completed main fragment, as dash.js asks the rule once per segment;
   * `per_read`: whenever hls.js reads the level and the estimate or the buffer moved (the
   * behaviour before the fifty-fourth session, which flapped within a fragment; lab comparisons).
   */
  decide?: "per_fragment" | "per_read";
  /**
   * A retry of a timed-out load takes over its transfer, with the bytes already in, for 3 s after
   * the timeout (hls/loader.ts `retry_takeover_ms`): hls.js retries a fragment at once after its
   * 10 s time-to-first-byte timeout, and asked afresh the retry waits behind the whole queue again.
   * Default: on with `abr: "nuwa"`, off for hls.js's own ABR (the baselines fetch as hls.js's
   * XhrLoader does).
   */
  retry_takeover?: boolean;
}

export interface NuwaHlsAttachment<H> {
  /** For `new Hls({ ...yours, ...config })`: `loader`, and `abrController` unless both are `hlsjs`. */
  config: { loader: NuwaHlsLoaderClass; abrController?: unknown };
  /** `new Hls({ ...extra, ...config })`, remembered for `hlsjsEstimateBps`. */
  create(extra?: Record<string, unknown>): H;
  /** Resolves when the first session is open; rejects if the handshake fails. */
  session: Promise<NuwaSession>;
  /** The session open now, or null while reconnecting. */
  current(): NuwaSession | null;
  sessionCount(): number;
  /** Nuwa's estimate now, bit/s (NaN before data). */
  estimateBps(): number;
  /** hls.js's own estimate now (its EWMA, under the wrapper when Nuwa's is fed), bit/s; NaN before its first sample. */
  hlsjsEstimateBps(): number;
  /** The completed main-fragment downloads the MPC reads. */
  history: MpcHistory;
  close(): void;
}

/**
 * Attach Nuwa to hls.js. Call before constructing the Hls instance.
 * @throws TypeError on an unknown `abr`, `estimate` or `decide`
 */
export function attachNuwaToHls<H>(Hls: HlsClassLike<H>, o: HlsAttachOptions): NuwaHlsAttachment<H> {
  const abr = o.abr ?? "nuwa";
  const estimate = o.estimate ?? "nuwa";
  if (abr !== "nuwa" && abr !== "hlsjs") throw new TypeError(`attachNuwaToHls: abr must be "nuwa" or "hlsjs", got ${String(abr)}`);
  if (estimate !== "nuwa" && estimate !== "hlsjs") throw new TypeError(`attachNuwaToHls: estimate must be "nuwa" or "hlsjs", got ${String(estimate)}`);
  if (abr === "nuwa" && estimate === "hlsjs") throw new TypeError('attachNuwaToHls: abr "nuwa" plans on Nuwa\'s estimate (estimate "nuwa")');
  if (o.decide !== undefined && o.decide !== "per_fragment" && o.decide !== "per_read") throw new TypeError(`attachNuwaToHls: decide must be "per_fragment" or "per_read", got ${String(o.decide)}`);
  const now_us = () => performance.now() * 1000;
  const cc: Partial<NuwaConfig> = { ...o.cc };
  if (o.preset && cc.target_delay_ms === undefined) cc.target_delay_ms = TD_PRESETS_MS[o.preset];
  const manager = new SessionManager(
    (hooks) =>
      NuwaSession.connect({ url: o.url, serverCertificateHashHex: o.serverCertificateHashHex, transport: o.transport, websocket_url: o.websocket_url, cc, mode: o.mode ?? "control", onTelemetry: o.onTelemetry, stall_timeout_ms: o.stall_timeout_ms, onStall: hooks.onStall }),
    o.reconnect,
    { onTelemetry: o.onTelemetry, now_us },
  );
  const src: EstimateSource = { controller: () => manager.current?.controller ?? null, now_us };
  const history = new MpcHistory();
  const state: { hls: H | null; abr: NuwaHlsAbr | null } = { hls: null, abr: null };
  const levelKbps = (level: number | undefined): number => {
    const l = level === undefined ? undefined : (state.hls as { levels?: { bitrate: number }[] } | null)?.levels?.[level];
    return l ? l.bitrate / 1000 : Number.NaN;
  };
  const loader = makeNuwaHlsLoader(() => manager.session(), {
    retry_takeover_ms: (o.retry_takeover ?? abr === "nuwa") ? HLS_RETRY_TAKEOVER_MS : 0,
    onComplete: (d) => {
      if (d.frag.type !== "main" || typeof d.frag.sn !== "number") return; // init segments have sn "initSegment"
      history.add({ bytes: d.bytes, duration_s: d.duration_ms / 1000, bitrate_kbps: levelKbps(d.frag.level), segment_s: d.frag.duration ?? Number.NaN, predicted_kbps: history.next_predicted_kbps });
    },
  });
  const config: NuwaHlsAttachment<H>["config"] = { loader };
  if (abr === "nuwa" || estimate === "nuwa") {
    config.abrController = makeNuwaHlsAbr(Hls.DefaultConfig.abrController as new (hls: never) => unknown, src, {
      abr,
      history,
      decide: o.decide,
      onDecision: (d) => o.onTelemetry?.({ type: "abr", t_us: now_us(), reason: d.reason }),
      onCreate: (a) => {
        state.abr = a;
      },
    });
  }
  return {
    config,
    create: (extra = {}) => {
      state.hls = new Hls({ ...extra, ...config });
      return state.hls;
    },
    session: manager.session(),
    current: () => manager.current,
    sessionCount: () => manager.count,
    estimateBps: () => {
      const c = manager.current;
      return c ? c.controller.estimate(now_us()).bps : Number.NaN;
    },
    hlsjsEstimateBps: () => {
      if (state.abr) return state.abr.hlsjsEstimateBps();
      // Baseline: hls.js's own controller, read without replacing it.
      const own = (state.hls as { abrController?: { bwEstimator?: { canEstimate(): boolean; getEstimate(): number } } } | null)?.abrController?.bwEstimator;
      return own?.canEstimate() ? own.getEstimate() : Number.NaN;
    },
    history,
    close: () => manager.close(),
  };
}
