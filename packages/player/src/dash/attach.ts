/**
 * Public API for a site that already uses dash.js: `attachNuwa(player, dashjs, options)`
 * makes the player load everything over a Nuwa session, feeds Nuwa's estimate
 * to dash.js's ABR (through its ThroughputController and, by default, a Nuwa
 * rule), and reports typed telemetry. With `abr: "dashjs", estimate: "dashjs"`
 * only the loader is replaced: every dash.js setting, rule and its own
 * ThroughputController stay as shipped (the baseline of the video ladder). Call it after
 * `dashjs.MediaPlayer().create()` and before `player.initialize(...)`.
 */
import { type NuwaConfig, NuwaController } from "@nuwa/cc";
import { type ReconnectPolicy, SessionManager } from "../reconnect.js";
import { NuwaSession, type SessionMode, type TelemetryEvent, type TransportKind } from "../session.js";
import type { RlTunerOptions, TunerEvent } from "../tuner.js";
import { type AbrDecision, achievableKbps, DashjsEwma, type EstimateSource, makeNuwaAbandonRule, makeNuwaAbrRule, makeThroughputOverride, type NuwaMpcOptions, standingWaitS, sustainedSampleKbps } from "./abr.js";
import { DEFAULT_LOADER_OPTIONS, type FetchAheadEvent, type FetchAheadQuery, makeNuwaLoader } from "./loader.js";
import { MPC_DEFAULTS, MpcHistory } from "./mpc.js";
import { checkMpd, initSegmentPaths, type NumberTemplate, type NuwaContentError, nextSegmentPath, parseSidx, SegmentSizes, segmentIndexPlan, segmentTemplates } from "./mpd.js";
import { attachRlTuner } from "./rl.js";

/** Target-delay presets per application, ms (docs/DESIGN.md §2: Td per application). */
export const TD_PRESETS_MS = { vod: 25, live_low_latency: 10 } as const; // vod = DEFAULT_CONFIG.target_delay_ms (sweep in config.ts)
export type Preset = keyof typeof TD_PRESETS_MS;

export interface AttachOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`. */
  url: string;
  serverCertificateHashHex?: string;
  /** `auto` (default): WebTransport if the page has it, else the WebSocket fallback (session.ts); or force one. */
  transport?: "auto" | TransportKind;
  /** The server's WebSocket endpoint for the fallback (default: `url`, https→wss). */
  websocket_url?: string;
  /**
   * Controller settings, plus the k tuner of issue 6: `tuner: "rl"` with `model` (URL or bytes
   * of the exported .onnx) runs Nuwa-RL (dash/rl.ts) and applies the settings it was trained
   * with (RL_CC) under yours; a model that fails to load leaves k fixed and says so in
   * telemetry (`tuner_fallback`). `tuner_options` go to the tuner (tuner.ts RlTunerOptions).
   */
  cc?: AttachCc;
  /** `control` grants the window; `observe` estimates only (the server runs its own cubic). */
  mode?: SessionMode;
  /**
   * `nuwa` (default): Nuwa's MPC decides (mpc.ts: RobustMPC on Nuwa's estimate, the realized
   * segment throughput and real segment sizes); `nuwa_rule`: the earlier Nuwa rule (estimate ×
   * safety factor, abr.ts chooseBitrateKbps); `dashjs`: dash.js's own rules decide.
   */
  abr?: "nuwa" | "nuwa_rule" | "dashjs";
  /**
   * With `abr: "nuwa"`: the MPC's abandonment of a segment download that would stall (abr.ts
   * `makeNuwaAbandonRule`, mpc.ts `mpcAbandon`). Off by default: on the six dev traces (3 runs each,
   * docs/BENCHMARKS.md, eighteenth session) it changed no trace's QoE beyond the runs' spread and
   * fetched a lowest-rung replacement after outages that a kept download would have survived.
   */
  abandon?: boolean;
  /**
   * With `abr: "nuwa"`: the MPC's tuning (abr.ts NuwaMpcOptions: `max_error`, the deep-buffer error
   * cap `deep_from_s`/`deep_max_error`, `reserve_s`/`reserve_weight`, `sustain_on_predicted_from_s`,
   * `horizon`, `buffer_cap_s`); absent fields keep mpc.ts MPC_DEFAULTS (RobustMPC's discount at every
   * buffer level). `{ deep_from_s: 8 }` caps the error discount at 0.25 from 8 s of buffer (screened
   * in the video simulator, no difference end to end: docs/BENCHMARKS.md, twenty-eighth session).
   */
  mpc?: Omit<NuwaMpcOptions, "history" | "segmentBytes">;
  /**
   * `nuwa`: dash.js's throughput figure is Nuwa's (its ThroughputController is extended); with
   * `abr: "dashjs"` it is what the flow can fetch under our window (abr.ts `achievableKbps`:
   * capacity × the share segment downloads measured), not the link's raw capacity.
   * `dashjs`: dash.js keeps its own, untouched (no extension).
   */
  estimate?: "nuwa" | "dashjs";
  /**
   * With `abr: "dashjs", estimate: "nuwa"`: how the figure dash.js's rules see is smoothed.
   * `"dashjs_ewma"` (default): each completed segment's `achievableKbps` goes through dash.js's
   * own average (abr.ts `DashjsEwma`: the lower of two EWMAs, half-lives 3 and 8, dash.js 5's
   * default ThroughputModel), so its rules, tuned on a smoothed figure, see Nuwa's samples in it
   * and the comparison with dash.js's own estimate changes the samples only. `"none"`: the figure
   * at the instant the rules ask (the default before the thirty-second session; on the six dev
   * traces, 3 runs each, same invocation: mean QoE 1.30 against 1.39 with the average and 1.36 on
   * dash.js's own estimate, every trace inside the runs' spread; docs/BENCHMARKS.md).
   */
  estimate_smoothing?: "dashjs_ewma" | "none";
  /**
   * With `abr: "dashjs", estimate: "nuwa"`: what the share of the capacity the figure hands out is
   * measured on (abr.ts `achievableKbps`): `"download"` (default), each segment from its request
   * less one RTT; `"transfer"`, its first body byte to the last, as dash.js measures its own
   * samples (opt-in: 1.49 against 1.21 mean QoE on the six dev traces, two runs a cell, one
   * invocation, thirty-second session; not reproduced at three runs a cell in the thirty-third,
   * 0.85 against 1.38: on T-Mobile LTE more switches, and more of dash.js's fast-switch
   * replacements abandoned and continued at a lower rung; docs/BENCHMARKS.md).
   */
  estimate_share?: "download" | "transfer";
  /**
   * With `abr: "dashjs", estimate: "nuwa"` and the `"dashjs_ewma"` smoothing: which figure a
   * completed segment adds to the average. `"end"` (default): the figure when it completed;
   * `"min_over_download"`: the lower of that and the figure when its request left (abr.ts
   * `sustainedSampleKbps`: a rise counts once it lasted a download). Opt-in, lab scheme
   * `dashjs_nuwa_sustained`: on T-Mobile LTE, AT&T LTE and HSDPA bus (3 runs each, one
   * invocation) mean QoE 1.81 against 2.18 for `"end"`, more segments re-fetched at a lower
   * rung, not fewer (docs/BENCHMARKS.md, thirty-third session).
   */
  estimate_sample?: "end" | "min_over_download";
  preset?: Preset;
  onTelemetry?: (e: TelemetryEvent | TunerEvent | { type: "abr"; t_us: number; decision: AbrDecision } | ContentErrorEvent | FetchAheadTelemetry) => void;
  /**
   * Content the glue refuses (mpd.ts `checkMpd`: DRM, live, a codec the browser lacks): called
   * once with the named error when the MPD arrives; the MPD request then fails, so dash.js
   * stops with its own manifest error after its retries instead of hanging. Also a
   * `content_error` telemetry event and `NuwaAttachment.contentError()`.
   */
  onContentError?: (e: NuwaContentError) => void;
  /** Whether the browser decodes `mime; codecs=…` (default: `MediaSource.isTypeSupported` when the page has it; absent: codecs unchecked). */
  isTypeSupported?: (type: string) => boolean;
  /** dash.js's own throughput average, kbit/s, whenever its rules ask for it (only with `estimate: "nuwa"`; `NuwaAttachment.dashjsEstimateKbps` reads it at any instant, either way). */
  onDashjsEstimate?: (kbps: number) => void;
  /**
   * Fetch the next segment of each media type while the current one arrives (loader.ts
   * fetch-ahead; SegmentTemplate `$Number$` content, mpd.ts `nextSegmentPath`): `"standing"`
   * only while a queue stands at the bottleneck that our window did not make (abr.ts
   * `standingWaitS` ≥ FETCH_AHEAD_STANDING_WAIT_S: a competing flow fills the buffer, and each
   * request would wait behind it), `"always"` for every segment; `"queue"` as `"standing"`, but as
   * many segments ahead as the wait needs to be hidden (`fetchAheadDepth`: the flow's achievable
   * rate × the standing wait, in segments of the rung, at most FETCH_AHEAD_MAX_DEPTH). Default `"off"`: dash.js's
   * one request at a time. `onTelemetry` gets a `fetch_ahead` event per segment fetched ahead
   * (used, discarded unused, failed).
   */
  fetch_ahead?: "off" | "standing" | "always" | "queue";
  /**
   * Fetch every init segment the MPD names as soon as it is in, and answer dash.js's init requests
   * from them (loader.ts init-segment prefetch, mpd.ts `initSegmentPaths`): a rung switch then waits
   * for its media segment only, not for an init segment first behind whatever queue stands at the
   * bottleneck. Default: on with `abr: "nuwa"` (the product), off for the dash.js baselines, which
   * fetch as dash.js does. Lab scheme `nuwa_noinit` runs the MPC without it.
   */
  prefetch_init?: boolean;
  /**
   * A retry of a timed-out request takes over its transfer, with the bytes already in (loader.ts
   * `retry_takeover_ms`, 3 s), instead of asking the server afresh from the first byte. Default: on
   * with `abr: "nuwa"` (the product), off for the dash.js baselines, which fetch as dash.js over
   * XHR does. Lab scheme `nuwa_noretake` runs the MPC without it.
   */
  retry_takeover?: boolean;
  /** Reconnect backoff when the session ends (reconnect.ts). */
  reconnect?: Partial<ReconnectPolicy>;
  /** A session that receives nothing for this long while requests are open is stalled, ms (session.ts, default 4000; 0: never): a second session is tried, and the stalled one closed if that opens first (reconnect.ts). */
  stall_timeout_ms?: number;
}

/** Telemetry: a segment fetched ahead (AttachOptions.fetch_ahead) and what became of it. */
export interface FetchAheadTelemetry extends FetchAheadEvent {
  type: "fetch_ahead";
  t_us: number;
}

/**
 * The standing wait from which `fetch_ahead: "standing"` fetches ahead, s: the switching rule's
 * threshold for a queue that is not ours (server/nuwa_server/switch_policy.py RuleConfig.queue_floor_ms, 50 ms).
 */
export const FETCH_AHEAD_STANDING_WAIT_S = 0.05;

/** Most segments `fetch_ahead: "queue"` keeps fetched ahead per media type. */
export const FETCH_AHEAD_MAX_DEPTH = 4;

/**
 * How many segments `fetch_ahead: "queue"` keeps requested beyond the one arriving. A player that
 * asks for one segment at a time leaves its flow idle for each request's wait behind the queue; to
 * stay busy it must have the bytes the flow carries in one wait already asked for: the request
 * loop's bandwidth-delay product, rate × wait (Little's law; the standing queue is the delay). In
 * segments of the rung being fetched: d = ⌈rate × wait ÷ segment bytes⌉ within [1,
 * FETCH_AHEAD_MAX_DEPTH]. Small segments (a low rung next to a buffer filler: 75 kB at 300 kbit/s
 * against 0.6–1 Mbit/s over a 2.5 s wait) get 3–4; a large one, whose own download outlasts the
 * wait (1.5 MB at 6000 kbit/s), gets 1, so little is fetched at a rung the ABR may soon leave.
 * @param wait_s the standing wait (abr.ts standingWaitS), s
 * @param rate_bps what the flow gets, bit/s (the MPC's achievable throughput); not finite or ≤ 0: 1
 * @param segment_bytes the segment's size (nominal: bandwidth × duration), bytes; not finite or ≤ 0: 1
 */
export function fetchAheadDepth(wait_s: number, rate_bps: number, segment_bytes: number): number {
  if (!(wait_s > 0) || !(rate_bps > 0) || !(segment_bytes > 0) || !Number.isFinite(rate_bps * wait_s) || !Number.isFinite(segment_bytes)) return 1;
  return Math.max(1, Math.min(FETCH_AHEAD_MAX_DEPTH, Math.ceil((rate_bps * wait_s) / 8 / segment_bytes)));
}

/**
 * The segments `fetch_ahead` fetches after `q` (loader.ts LoaderOptions.fetchAhead): the next of
 * its representation's `$Number$` template (mpd.ts nextSegmentPath), in modes `standing` and
 * `queue` only while the standing wait is at least FETCH_AHEAD_STANDING_WAIT_S; in mode `queue`
 * the next `fetchAheadDepth(wait, rate_bps, nominal segment bytes)` of them, in order (fewer
 * where the template ends); null for none.
 * @param rate_bps what the flow gets, bit/s (mode `queue`; NaN: one segment)
 */
export function fetchAheadPath(mode: "standing" | "always" | "queue", templates: ReadonlyMap<string, NumberTemplate>, src: EstimateSource, q: FetchAheadQuery, rate_bps = Number.NaN): string | string[] | null {
  const t = q.rep_id !== null ? templates.get(q.rep_id) : undefined;
  if (!t) return null;
  const wait_s = standingWaitS(src);
  if (mode !== "always" && wait_s < FETCH_AHEAD_STANDING_WAIT_S) return null;
  if (mode !== "queue") return nextSegmentPath(t, q.path, q.start_s);
  const depth = fetchAheadDepth(wait_s, rate_bps, (t.bandwidth_bps * t.segment_s) / 8);
  const paths: string[] = [];
  let path = q.path;
  for (let k = 0; k < depth; k++) {
    const next = nextSegmentPath(t, path, q.start_s + k * t.segment_s);
    if (next === null) break;
    paths.push(next);
    path = next;
  }
  return paths.length > 0 ? paths : null;
}

/** Telemetry: the MPD uses a feature the glue does not support (mpd.ts). */
export interface ContentErrorEvent {
  type: "content_error";
  t_us: number;
  feature: NuwaContentError["feature"];
  message: string;
}

/** `AttachOptions.cc`: controller settings and the optional k tuner. */
export type AttachCc = Partial<NuwaConfig> & { tuner?: "fixed" | "rl"; model?: string | Uint8Array; tuner_options?: Omit<RlTunerOptions, "model"> };

/** Slice of the dash.js MediaPlayer used here. */
export interface DashPlayerLike {
  extend(name: string, child: unknown, override: boolean): void;
  addABRCustomRule(type: string, name: string, rule: unknown): void;
  updateSettings(s: unknown): void;
  getDashMetrics(): { getCurrentBufferLevel(type: string): number };
  /** dash.js 5 `MediaPlayer.getAverageThroughput(type)`, kbit/s (NaN before any sample). */
  getAverageThroughput?(type: string): number;
}

/** Slice of the dashjs module used here. */
export interface DashjsLike {
  FactoryMaker: { getClassFactory(fn: unknown): unknown; getClassFactoryByName(name: string): (ctx: unknown) => { create(): { representation?: unknown; priority?: number; reason?: unknown } } };
}

export interface NuwaAttachment {
  /** Resolves when the first session is open; rejects if the handshake fails. */
  session: Promise<NuwaSession>;
  /** The session open now (a new one after each reconnect), or null while reconnecting. */
  current(): NuwaSession | null;
  /** Sessions opened so far (1 + reconnects). */
  sessionCount(): number;
  /** Change Td (and ρ, k) while playing. */
  setPreset(p: Preset): void;
  setParams(p: Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss">>): void;
  /** Current estimate, bits per second (NaN before data). */
  estimateBps(): number;
  /**
   * dash.js's own video throughput estimate now, kbit/s (its ThroughputController's
   * `getAverageThroughput("video")`: the EWMA of its per-segment samples, before its 0.9
   * safety factor), NaN before its first sample. With `estimate: "nuwa"` this is the figure
   * dash.js would have used, read from the original controller under the extension.
   */
  dashjsEstimateKbps(): number;
  /** The content error that stopped the MPD (mpd.ts), or null. */
  contentError(): NuwaContentError | null;
  /** Real segment sizes known per representation id (SegmentList ranges, fetched sidx boxes): what the MPC plans with. */
  segmentSizes: SegmentSizes;
  close(): void;
}

export function attachNuwa(player: DashPlayerLike, dashjs: DashjsLike, o: AttachOptions): NuwaAttachment {
  const now_us = () => performance.now() * 1000;
  const { tuner, model, tuner_options, ...cc_in } = o.cc ?? {};
  if (tuner !== undefined && tuner !== "fixed" && tuner !== "rl") throw new TypeError(`attachNuwa: cc.tuner must be "fixed" or "rl", got ${String(tuner)}`);
  if (tuner === "rl" && !(typeof model === "string" || model instanceof Uint8Array)) throw new TypeError('attachNuwa: cc.tuner "rl" needs cc.model (the .onnx URL or bytes)');
  const abr = o.abr ?? "nuwa";
  const fetch_ahead = o.fetch_ahead ?? "off";
  if (fetch_ahead !== "off" && fetch_ahead !== "standing" && fetch_ahead !== "always" && fetch_ahead !== "queue") throw new TypeError(`attachNuwa: fetch_ahead must be "off", "standing", "always" or "queue", got ${String(fetch_ahead)}`);
  if (abr !== "nuwa" && abr !== "nuwa_rule" && abr !== "dashjs") throw new TypeError(`attachNuwa: abr must be "nuwa", "nuwa_rule" or "dashjs", got ${String(abr)}`);
  let attachment: NuwaAttachment | null = null;
  const rl =
    tuner === "rl"
      ? attachRlTuner(() => attachment, player, {
          ...tuner_options,
          model: model as string | Uint8Array,
          onEvent: (e) => {
            tuner_options?.onEvent?.(e);
            o.onTelemetry?.(e);
          },
        })
      : null;
  const cc: Partial<NuwaConfig> = { ...(rl ? rl.cc : {}), ...cc_in };
  if (o.preset && cc_in.target_delay_ms === undefined && !rl) cc.target_delay_ms = TD_PRESETS_MS[o.preset];
  const onTelemetry = rl
    ? (e: TelemetryEvent) => {
        rl.onTelemetry(e);
        o.onTelemetry?.(e);
      }
    : o.onTelemetry;
  // One session at a time, reconnected with backoff; each new session gets a fresh controller (reconnect.ts says why).
  const manager = new SessionManager(
    (hooks) =>
      NuwaSession.connect({ url: o.url, serverCertificateHashHex: o.serverCertificateHashHex, transport: o.transport, websocket_url: o.websocket_url, cc, mode: o.mode ?? "control", onTelemetry, stall_timeout_ms: o.stall_timeout_ms, onStall: hooks.onStall }),
    o.reconnect,
    { onTelemetry: o.onTelemetry, now_us },
  );
  const session = manager.session();
  const src: EstimateSource = { controller: () => manager.current?.controller ?? null, now_us };
  // Completed segment downloads per media type: the MPC's realized throughput, error and sizes.
  const histories = new Map<string, MpcHistory>();
  const history = (t: string) => {
    const h = histories.get(t) ?? new MpcHistory();
    histories.set(t, h);
    return h;
  };
  // Real segment sizes (issue 19): SegmentList ranges from the MPD, SegmentBase sidx boxes fetched
  // over the session once the MPD is in; the MPC reads the next segments' sizes from the media
  // position after the last completed segment of each type.
  const sizes = new SegmentSizes();
  // dash.js's average over Nuwa's per-segment figure (estimate_smoothing), per media type.
  const smoothing = abr === "dashjs" && (o.estimate ?? "nuwa") === "nuwa" && (o.estimate_smoothing ?? "dashjs_ewma") === "dashjs_ewma";
  const share = o.estimate_share ?? "download";
  const sample_min = smoothing && o.estimate_sample === "min_over_download";
  const at_request = new Map<string, number>(); // media type → the figure when its last segment request left
  const averages = new Map<string, DashjsEwma>();
  const smoothed = (t: string) => {
    const a = averages.get(t) ?? new DashjsEwma();
    averages.set(t, a);
    return a;
  };
  const next_start_s = new Map<string, number>();
  let content_error: NuwaContentError | null = null;
  const isTypeSupported =
    o.isTypeSupported ?? (typeof MediaSource !== "undefined" && typeof MediaSource.isTypeSupported === "function" ? (t: string) => MediaSource.isTypeSupported(t) : undefined);
  const templates = new Map<string, NumberTemplate>(); // rep id → its $Number$ template (fetch-ahead)
  const loadIndexes = (text: string, url: string) => {
    for (const ix of segmentIndexPlan(text, url)) {
      if (ix.sizes) sizes.set(ix.rep_id, ix.sizes);
      else if (ix.sidx && !sizes.has(ix.rep_id)) {
        const { rep_id, sidx } = ix;
        manager
          .session()
          .then((s) => s.request({ op: "get", path: new URL(sidx.url).pathname, range: sidx.range }))
          .then((r) => sizes.set(rep_id, parseSidx(r.body ?? new Uint8Array(0))))
          .catch(() => {}); // no sizes: the MPC keeps its nominal × measured ratio
      }
    }
  };
  player.extend(
    "XHRLoader",
    makeNuwaLoader(() => manager.session(), {
      onComplete: (d) => {
        if (d.type !== "MediaSegment" || !d.media_type) return;
        const h = history(d.media_type);
        h.add({ bytes: d.bytes, duration_s: d.duration_ms / 1000, bitrate_kbps: d.bitrate_kbps, segment_s: d.segment_s, predicted_kbps: h.next_predicted_kbps, transfer_s: d.transfer_ms / 1000 });
        if (smoothing) {
          const at_end = achievableKbps(src, h, share);
          const sample = sample_min ? sustainedSampleKbps(at_request.get(d.media_type) ?? Number.NaN, at_end) : at_end;
          smoothed(d.media_type).add(sample, d.duration_ms); // weight: the download time from the request (dash.js's: from the first byte)
        }
        if (Number.isFinite(d.start_s) && Number.isFinite(d.segment_s)) next_start_s.set(d.media_type, d.start_s + d.segment_s);
      },
      ...(sample_min
        ? {
            onRequest: (q) => {
              if (q.type === "MediaSegment" && q.media_type) at_request.set(q.media_type, achievableKbps(src, history(q.media_type), share, false));
            },
          }
        : {}),
      onManifest: (text, url) => {
        const err = checkMpd(text, { isTypeSupported });
        if (err) {
          if (!content_error) {
            content_error = err;
            o.onTelemetry?.({ type: "content_error", t_us: now_us(), feature: err.feature, message: err.message });
            o.onContentError?.(err);
          }
          return err;
        }
        if (abr === "nuwa") loadIndexes(text, url); // only the MPC reads them: the dash.js baselines send nothing extra
        if (fetch_ahead !== "off") for (const t of segmentTemplates(text, url)) templates.set(t.rep_id, t);
        return null;
      },
      ...((o.prefetch_init ?? abr === "nuwa") ? { initPrefetch: initSegmentPaths } : {}),
      retry_takeover_ms: (o.retry_takeover ?? abr === "nuwa") ? DEFAULT_LOADER_OPTIONS.retry_takeover_ms : 0,
      ...(fetch_ahead === "off"
        ? {}
        : {
            fetchAhead: (q) => fetchAheadPath(fetch_ahead, templates, src, q, fetch_ahead === "queue" ? 1000 * achievableKbps(src, history(q.media_type), share, false) : Number.NaN),
            onFetchAhead: (e) => o.onTelemetry?.({ type: "fetch_ahead", t_us: now_us(), ...e }),
          }),
    }),
    false,
  );
  // dash.js's own ThroughputController methods: under the extension (captured when dash.js builds it), or the player's.
  const own_throughput: { get: ((type: string) => number) | null } = { get: null };
  if ((o.estimate ?? "nuwa") === "nuwa") {
    player.extend(
      "ThroughputController",
      makeThroughputOverride(
        src,
        true,
        o.onDashjsEstimate,
        undefined,
        (parent) => {
          own_throughput.get = (type) => parent.getAverageThroughput(type);
        },
        abr === "dashjs" ? history : undefined, // dash.js's rules get what the flow can fetch; the MPC scores its own history
        smoothing ? smoothed : undefined,
        share,
      ),
      true,
    );
  } else {
    own_throughput.get = (type) => (player.getAverageThroughput ? player.getAverageThroughput(type) : Number.NaN);
  }
  if (abr !== "dashjs") {
    const SwitchRequest = dashjs.FactoryMaker.getClassFactoryByName("SwitchRequest");
    const buffer_level_s = (t: string) => player.getDashMetrics().getCurrentBufferLevel(t) || 0;
    const on_decision = (decision: AbrDecision) => o.onTelemetry?.({ type: "abr", t_us: now_us(), decision });
    const mpc_options: NuwaMpcOptions | undefined =
      abr === "nuwa" ? { ...o.mpc, history, segmentBytes: (t, rep, n) => (rep.id !== undefined && rep.id !== null ? sizes.upcomingBytes(String(rep.id), next_start_s.get(t) ?? 0, n) : null) } : undefined;
    const rule = makeNuwaAbrRule(src, (ctx) => SwitchRequest(ctx).create(), buffer_level_s, on_decision, mpc_options);
    // Nuwa's rule decides alone: dash.js's own rules would override it at low buffer
    // (InsufficientBufferRule), undo switches (SwitchHistoryRule) or abandon segments
    // with its own rule (AbandonRequestsRule; the MPC has its own, NuwaAbandonRule).
    const off = { active: false };
    player.updateSettings({
      streaming: {
        abr: { rules: { throughputRule: off, bolaRule: off, insufficientBufferRule: off, switchHistoryRule: off, droppedFramesRule: off, abandonRequestsRule: off, l2ARule: off, loLPRule: off } },
        // Fast switching replaces buffered segments after an up-switch: it re-downloaded up to
        // half of the bytes in our runs (docs/DESIGN.md §8) and keeps the buffer near empty.
        // The MPC plans with a 30 s buffer target (mpc.ts MPC_DEFAULTS.buffer_cap_s); the older rule keeps dash.js's 12 s.
        buffer: { fastSwitchEnabled: false, ...(abr === "nuwa" ? { bufferTimeDefault: o.mpc?.buffer_cap_s ?? MPC_DEFAULTS.buffer_cap_s } : {}) },
        // After an abandonment dash.js allows only down-switches for abandonLoadTimeout (10 s); the
        // MPC's own abandonment holds the replacement's rung itself (abr.ts makeNuwaAbandonRule).
        ...(abr === "nuwa" && o.abandon ? { abandonLoadTimeout: 0 } : {}),
      },
    });
    player.addABRCustomRule("qualitySwitchRules", "NuwaAbrRule", dashjs.FactoryMaker.getClassFactory(rule));
    if (mpc_options && o.abandon) {
      // The MPC's own abandonment (mpc.ts mpcAbandon) in place of dash.js's AbandonRequestsRule.
      const abandon = makeNuwaAbandonRule(src, (ctx) => SwitchRequest(ctx).create(), buffer_level_s, mpc_options, on_decision);
      player.addABRCustomRule("abandonFragmentRules", "NuwaAbandonRule", dashjs.FactoryMaker.getClassFactory(abandon));
    }
  }
  attachment = {
    session,
    current: () => manager.current,
    sessionCount: () => manager.count,
    // Parameters go to the open session and to the ones a reconnect opens later.
    setPreset: (p) => {
      cc.target_delay_ms = TD_PRESETS_MS[p];
      manager.current?.controller.setParams({ target_delay_ms: TD_PRESETS_MS[p] });
    },
    setParams: (p) => {
      // Validated even between sessions (a throwaway controller on the config the next one gets),
      // so a refused value (out of range, or k under the multiplicative step) throws here, always.
      (manager.current?.controller ?? new NuwaController(cc)).setParams(p);
      Object.assign(cc, p);
    },
    estimateBps: () => {
      const c = manager.current;
      return c ? c.controller.estimate(now_us()).bps : Number.NaN;
    },
    dashjsEstimateKbps: () => {
      const kbps = own_throughput.get ? own_throughput.get("video") : Number.NaN;
      return typeof kbps === "number" && kbps > 0 ? kbps : Number.NaN;
    },
    contentError: () => content_error,
    segmentSizes: sizes,
    close: () => {
      rl?.stop();
      manager.close();
    },
  };
  return attachment;
}
