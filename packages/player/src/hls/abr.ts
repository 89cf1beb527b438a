/**
 * Nuwa's estimate and rule inside hls.js's ABR (hls.js 1.x `config.abrController`, a class
 * hls.js constructs with the Hls instance). `makeNuwaHlsAbr` subclasses hls.js's own
 * AbrController (`Hls.DefaultConfig.abrController`), so everything it does not override
 * (fragment tracking, level bookkeeping, events) stays hls.js's:
 * - the estimate: its `bwEstimator` (an EwmaBandWidthEstimator: `getEstimate()` bit/s,
 *   `canEstimate()`, `sample()`, `sampleTTFB()`, `getEstimateTTFB()`) is wrapped so that
 *   `getEstimate()` answers Nuwa's figure while hls.js keeps sampling its own EWMA underneath
 *   (`hlsjsEstimateBps()` reads that one, for scoring both at the same instant). Replaced
 *   again after `resetEstimator()` (hls.js's `bandwidthEstimate` setter builds a new one);
 * - the rule (`abr: "nuwa"`): `nextAutoLevel` and `firstAutoLevel` return the level of
 *   Nuwa's RobustMPC (dash/abr.ts `decideMpc`, Yin et al., SIGCOMM 2015, over the levels'
 *   BANDWIDTH and the completed-fragment history), clamped to hls.js's min/max auto level,
 *   and hls.js's emergency abandonment (`_abandonRulesCheck`) is off, as dash.js's
 *   AbandonRequestsRule is under the same rule (dash/attach.ts). The MPC's own abandonment
 *   (dash/abr.ts makeNuwaAbandonRule) is wired into dash.js only: not yet here.
 *
 * One decision per fragment (`decide: "per_fragment"`, the default). hls.js reads
 * `nextAutoLevel` on every tick of its stream controller (100 ms) and whenever it sets the level
 * to load, not once per fragment; its own AbrController answers the same until its estimate
 * changes, and its EWMA changes only when a fragment is sampled. Nuwa's estimate moves with
 * every grant, so a rule that decided afresh on each read (`"per_read"`, the behaviour before
 * the fifty-fourth session: a new MPC decision whenever the estimate moved 1 % or the buffer
 * 0.5 s) flapped between neighbouring levels within one fragment, and each flap to a level
 * whose playlist hls.js had not loaded yet made it load that playlist and, when it arrived,
 * abort the fragment in flight (hls.js 1.7 StreamController `onLevelLoaded`: a loading fragment
 * of another level is aborted). End to end (`./nuwa play --player hlsjs`, Verizon LTE, the
 * fifty-fourth session's first run): levels 1, 2, 1, 0 within 0.3 s after the first fragment,
 * four aborted requests for the same fragment and a playlist loaded for nothing. Now the MPC
 * decides once per completed main fragment (`MpcHistory.recorded`) and answers that level
 * until the next one completes, as dash.js asks the same rule once per segment (its
 * ScheduleController); hls.js's auto-level bounds changing also asks again.
 */
import { achievableKbps, decideMpc, type EstimateSource, estimateKbps } from "../dash/abr.js";
import { MPC_DEFAULTS, type MpcHistory } from "../dash/mpc.js";

/** hls.js's EwmaBandWidthEstimator, the methods its AbrController calls (bit/s, ms). */
export interface HlsBwEstimatorLike {
  sample(duration_ms: number, bytes: number): void;
  sampleTTFB(ttfb_ms: number): void;
  canEstimate(): boolean;
  getEstimate(): number;
  getEstimateTTFB(): number;
  update(slow: number, fast: number): void;
  readonly defaultEstimate: number;
  destroy(): void;
}

/** The slice of an Hls instance the controller reads. */
export interface HlsInstanceLike {
  levels: { bitrate: number; details?: { targetduration?: number } }[];
  media: HTMLMediaElement | null;
  minAutoLevel: number;
  maxAutoLevel: number;
}

/** hls.js's AbrController as a class (the base we extend; ambient: no code emitted). */
declare class HlsAbrBase {
  constructor(hls: unknown);
  protected hls: HlsInstanceLike | null;
  bwEstimator: HlsBwEstimatorLike;
  resetEstimator(abrEwmaDefaultEstimate?: number): void;
  get nextAutoLevel(): number;
  set nextAutoLevel(level: number);
  get firstAutoLevel(): number;
}

/** The AbrController class to hand hls.js as `config.abrController`, plus what it exposes. */
export interface NuwaHlsAbr {
  /** hls.js's own EWMA under the wrapper, bit/s (NaN before its first sample). */
  hlsjsEstimateBps(): number;
}

export interface NuwaHlsAbrOptions {
  /** `nuwa`: Nuwa's MPC picks the level; `hlsjs`: hls.js's rules do (fed Nuwa's estimate). */
  abr: "nuwa" | "hlsjs";
  /** Completed main-fragment downloads (fed by the loader, hls/attach.ts). */
  history: MpcHistory;
  /** Each MPC decision: the level index and why. */
  onDecision?: (d: { level: number; estimate_kbps: number; buffer_s: number; reason: string }) => void;
  /** Called with each controller hls.js constructs (one per Hls instance). */
  onCreate?: (abr: NuwaHlsAbr) => void;
  /**
   * When the MPC decides again (module doc): `per_fragment` (default) once per completed main
   * fragment; `per_read` whenever hls.js reads the level and the estimate moved 1 % or the buffer
   * 0.5 s since the last decision (the behaviour before the fifty-fourth session; lab comparisons).
   */
  decide?: "per_fragment" | "per_read";
}

/** Seconds of media buffered ahead of the playhead (0 without media or buffer). */
export function bufferAheadS(media: Pick<HTMLMediaElement, "currentTime" | "buffered"> | null): number {
  if (!media) return 0;
  const t = media.currentTime;
  const b = media.buffered;
  for (let i = 0; i < b.length; i++) if (b.start(i) <= t + 0.1 && t < b.end(i)) return b.end(i) - t; // 0.1 s: hls.js's maxBufferHole-like slack at a start gap
  return 0;
}

/**
 * Wrap hls.js's estimator: `getEstimate()` is `nuwa_bps()` when that is finite and > 0,
 * else hls.js's own; every sample still reaches hls.js's own EWMA.
 */
export function wrapEstimator(own: HlsBwEstimatorLike, nuwa_bps: () => number): HlsBwEstimatorLike & { own: HlsBwEstimatorLike } {
  const ours = () => {
    const bps = nuwa_bps();
    return Number.isFinite(bps) && bps > 0 ? bps : Number.NaN;
  };
  return {
    own,
    sample: (d, b) => own.sample(d, b),
    sampleTTFB: (t) => own.sampleTTFB(t),
    canEstimate: () => Number.isFinite(ours()) || own.canEstimate(),
    getEstimate: () => {
      const bps = ours();
      return Number.isFinite(bps) ? bps : own.getEstimate();
    },
    getEstimateTTFB: () => own.getEstimateTTFB(),
    update: (s, f) => own.update(s, f),
    get defaultEstimate() {
      return own.defaultEstimate;
    },
    destroy: () => own.destroy(),
  };
}

/**
 * Build the AbrController subclass.
 * @param Base hls.js's AbrController class (`Hls.DefaultConfig.abrController`)
 * @param src Nuwa's controller and clock
 */
export function makeNuwaHlsAbr(Base: new (hls: never) => unknown, src: EstimateSource, o: NuwaHlsAbrOptions): new (hls: never) => unknown {
  const B = Base as unknown as typeof HlsAbrBase;
  const nuwaBps = () => (o.abr === "nuwa" ? estimateKbps(src) : achievableKbps(src, o.history)) * 1000; // hls.js's rules get what the flow can fetch (dash/abr.ts achievableKbps)
  class NuwaAbrController extends B implements NuwaHlsAbr {
    private own!: HlsBwEstimatorLike;
    private last: { key: string; level: number } | null = null;
    constructor(hls: unknown) {
      super(hls);
      this.wrap();
      if (o.abr === "nuwa") (this as unknown as { _abandonRulesCheck: () => void })._abandonRulesCheck = () => {};
      o.onCreate?.(this);
    }
    private wrap(): void {
      this.own = this.bwEstimator;
      this.bwEstimator = wrapEstimator(this.own, nuwaBps);
    }
    override resetEstimator(abrEwmaDefaultEstimate?: number): void {
      super.resetEstimator(abrEwmaDefaultEstimate);
      if (this.bwEstimator !== this.own) this.wrap();
    }
    hlsjsEstimateBps(): number {
      return this.own.canEstimate() ? this.own.getEstimate() : Number.NaN;
    }
    override get nextAutoLevel(): number {
      return o.abr === "nuwa" ? this.mpcLevel() : super.nextAutoLevel;
    }
    override set nextAutoLevel(level: number) {
      super.nextAutoLevel = level;
    }
    override get firstAutoLevel(): number {
      return o.abr === "nuwa" ? this.mpcLevel() : super.firstAutoLevel;
    }
    /** The MPC's level now: decided again once a main fragment completed (or, `per_read`, when the estimate moved 1 % or the buffer 0.5 s). */
    private mpcLevel(): number {
      const hls = this.hls;
      if (!hls || hls.levels.length === 0) return 0;
      const c = src.controller();
      const e = c ? c.estimate(src.now_us()) : null;
      const est_kbps = e && e.bps > 0 ? e.bps / 1000 : Number.NaN;
      const buffer_s = bufferAheadS(hls.media);
      const key =
        o.decide === "per_read"
          ? `${o.history.samples.length}_${Math.round(Math.log(est_kbps) * 100)}_${Math.round(buffer_s * 2)}`
          : `${o.history.recorded}_${hls.minAutoLevel}_${hls.maxAutoLevel}`; // once per completed fragment (module doc)
      if (this.last?.key === key) return this.last.level;
      const seg_s = hls.levels[0]?.details?.targetduration;
      const reps = hls.levels.map((l) => ({ bitrateInKbit: l.bitrate / 1000, segmentDuration: seg_s }));
      const m = decideMpc(src, reps, est_kbps, e?.basis ?? "none", buffer_s, o.history, { history: () => o.history, buffer_cap_s: MPC_DEFAULTS.buffer_cap_s });
      let level = hls.levels.findIndex((l) => l.bitrate / 1000 === m.rep.bitrateInKbit);
      level = Math.min(Math.max(level, hls.minAutoLevel), hls.maxAutoLevel);
      this.last = { key, level };
      o.onDecision?.({ level, estimate_kbps: est_kbps, buffer_s, reason: `[NuwaHlsAbr] level ${level} (${m.rep.bitrateInKbit} kbit/s) at buffer ${buffer_s.toFixed(1)} s: ${m.why}` });
      return level;
    }
  }
  return NuwaAbrController as unknown as new (hls: never) => unknown;
}
