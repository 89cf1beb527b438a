/**
 * Nuwa's estimate inside dash.js, two ways (issue 4):
 * 1. an override of dash.js's ThroughputController so its built-in rules
 *    (Throughput, BOLA, DYNAMIC) see Nuwa's figure (docs/DESIGN.md §8: override
 *    getAverageThroughput, getSafeAverageThroughput and getAverageLatency together);
 * 2. a Nuwa ABR rule (dash.js FactoryMaker class, as dash.js's own
 *    rules/abr/ThroughputRule.js) that picks the highest representation whose
 *    bitrate fits the estimate discounted by its uncertainty and the buffer level,
 *    and returns the decision with its reason.
 */
import type { NuwaController } from "@nuwa/cc";
import { firstProbeRung, MPC_DEFAULTS, type MpcHistory, type MpcInput, mpcAbandon, mpcHysteresis, mpcPlan, robustThroughputKbps, transferShare } from "./mpc.js";

/** A source of the current estimate in kbit/s (dash.js's unit) and the latency in ms. */
export interface EstimateSource {
  controller: () => NuwaController | null;
  now_us: () => number;
}

/** Safety factor applied to the estimate, from buffer level (s) and the estimate's basis. */
export function abrSafetyFactor(buffer_s: number, basis: string): number {
  const uncertainty = basis === "busy_period" || basis === "delivery_rate" ? 0.1 : 0.25; // an app-limited figure is less certain
  const buffer_term = buffer_s < 4 ? 0.6 : buffer_s < 8 ? 0.8 : 1.0; // low buffer: play safe (BOLA's intuition, simplified)
  return (1 - uncertainty) * buffer_term;
}

/** Estimate in kbit/s (NaN before any data: dash.js then uses its start bitrate) with its basis. */
export function estimateWithBasis(src: EstimateSource): { kbps: number; basis: string } {
  const c = src.controller();
  if (!c) return { kbps: Number.NaN, basis: "none" };
  const e = c.estimate(src.now_us());
  return { kbps: e.bps > 0 ? e.bps / 1000 : Number.NaN, basis: e.basis };
}

/** Estimate in kbit/s, or NaN before any data (dash.js then uses its start bitrate). */
export function estimateKbps(src: EstimateSource): number {
  return estimateWithBasis(src).kbps;
}

/**
 * The throughput a segment download of this flow can get, kbit/s (NaN before any data), for
 * dash.js's own rules fed Nuwa's estimate (issue 15). Nuwa's capacity figure is the link's, but
 * a download under the window we grant, with a request RTT and the window's ramp after each
 * idle gap, gets only a share of it (mpc.ts `flowShare`, measured per segment; 0.55–0.8 end to
 * end): handing dash.js the raw capacity made its rules up-switch beyond what the flow
 * could fetch, then abandon and re-download (15–25 MB per run on T-Mobile LTE). So the figure
 * handed out is capacity × measured share (RobustMPC's predictor without its error discount:
 * dash.js applies its own safety factor). On an app-limited basis the realized segment
 * throughput raises the floor (mpc.ts `robustThroughputKbps`). Sets the history's
 * `next_predicted_kbps` so the next completed segment scores the share.
 * Tried and measured worse (twenty-third session, docs/BENCHMARKS.md): dividing the figure by
 * 1 + the prediction's recent error, as the MPC plans: on T-Mobile UMTS dash.js's fast switching
 * still refetched buffered segments at higher rungs after each dark spell, and on LTE the rules
 * picked lower rungs (mean QoE 1.92 against dash.js's own estimate's 2.11 in one invocation).
 * `share`: `"download"` measures the share over each download from its request less one RTT
 * (mpc.ts `flowShare`, what the MPC plans with); `"transfer"` over the first body byte to the
 * last (mpc.ts `transferShare`), the figure dash.js's own sample measures and its rules expect
 * (its latency is averaged apart). `record` (default true): set the history's
 * `next_predicted_kbps`; false reads the figure without changing what the next segment is scored on.
 */
export function achievableKbps(src: EstimateSource, history: MpcHistory, share: "download" | "transfer" = "download", record = true): number {
  const { kbps, basis } = estimateWithBasis(src);
  if (!(kbps > 0)) return Number.NaN;
  const { rtt_s, capacity_basis, peak_kbps } = predictorInputs(src, basis);
  if (record) history.next_predicted_kbps = capacity_basis === "busy_period" ? kbps : Number.NaN;
  if (share === "transfer" && capacity_basis === "busy_period") return kbps * transferShare(history);
  return robustThroughputKbps(kbps, capacity_basis, history, rtt_s, peak_kbps).predicted_kbps;
}

/**
 * What the share/error predictor (mpc.ts `robustThroughputKbps`) needs besides the estimate:
 * the controller's min RTT, s (50 ms before a sample), the estimate's basis as a capacity
 * figure (once the controller has measured a busy period its estimate is max(busy-period rate,
 * 500 ms delivery rate) whichever basis it names: controller.ts estimate), and the peak
 * one-RTT delivery rate, kbit/s (NaN without a controller), the floor of an app-limited basis.
 */
function predictorInputs(src: EstimateSource, basis: string): { rtt_s: number; capacity_basis: string; peak_kbps: number } {
  const c = src.controller();
  const rtt_us = c?.minRttSampleUs ?? Number.NaN;
  const rtt_s = Number.isFinite(rtt_us) && rtt_us > 0 ? rtt_us / 1e6 : 0.05;
  const e = c?.estimate(src.now_us());
  const capacity_basis = basis === "busy_period" || Number.isFinite(e?.busy_rate_bps ?? Number.NaN) ? "busy_period" : basis;
  return { rtt_s, capacity_basis, peak_kbps: e ? e.peak_rtt_rate_bps / 1000 : Number.NaN };
}

/**
 * The sample a completed segment hands dash.js's average with `estimate_sample:
 * "min_over_download"` (attachNuwa): the lower of the figure when its request left and the one
 * when it completed, kbit/s, so a rise enters the average only once it has lasted a whole
 * download, and a fall at once. Either figure missing (NaN or ≤ 0): the other; both: NaN.
 * Why (docs/BENCHMARKS.md, thirty-third session): dash.js's fast switching refetches the
 * buffer after an up-switch, and an abandoned first replacement continues at a lower rung over
 * the better copies buffered; an up-switch the next download cannot sustain starts that.
 */
export function sustainedSampleKbps(at_request_kbps: number, at_complete_kbps: number): number {
  const ok = (x: number) => Number.isFinite(x) && x > 0;
  if (ok(at_request_kbps) && ok(at_complete_kbps)) return Math.min(at_request_kbps, at_complete_kbps);
  if (ok(at_complete_kbps)) return at_complete_kbps;
  return ok(at_request_kbps) ? at_request_kbps : Number.NaN;
}

/**
 * dash.js 5.2's default throughput average (`streaming.abr.throughput.averageCalculationMode`
 * EWMA; read from the shipped dash.all.min.js 5.2.1, ThroughputModel's EWMA update and
 * ThroughputController's EWMA estimate): two exponentially weighted averages of per-segment
 * samples, each sample weighted `weight_per_ms` × its download time in ms, half-lives `fast_half_life`
 * and `slow_half_life` in those weight units, each corrected for its start at zero, and the lower
 * of the two handed out (a fall shows within the fast half-life, a rise only as the slow average
 * follows). dash.js's rules are tuned on that figure; with `estimate: "nuwa"` and `estimate_smoothing:
 * "dashjs_ewma"` Nuwa's per-segment figure goes through the same average, so the comparison with
 * dash.js's own estimate changes the samples only (issue 15's one factor).
 */
export class DashjsEwma {
  private fast_kbps = 0;
  private slow_kbps = 0;
  private total_weight = 0;
  /** dash.js 5.2.1 defaults (`streaming.abr.throughput.ewma`: throughputFastHalfLifeSeconds 3, throughputSlowHalfLifeSeconds 8, weightDownloadTimeMultiplicationFactor 0.0015). */
  constructor(
    readonly fast_half_life = 3,
    readonly slow_half_life = 8,
    readonly weight_per_ms = 0.0015,
  ) {}

  /**
   * Add one segment's sample.
   * @param kbps the sample, kbit/s (finite, > 0; others are ignored, as dash.js drops them)
   * @param download_ms the segment's download time, ms (> 0; others are ignored)
   */
  add(kbps: number, download_ms: number): void {
    if (!(Number.isFinite(kbps) && kbps > 0 && Number.isFinite(download_ms) && download_ms > 0)) return;
    const w = this.weight_per_ms * download_ms;
    const a_fast = 0.5 ** (w / this.fast_half_life);
    const a_slow = 0.5 ** (w / this.slow_half_life);
    this.fast_kbps = (1 - a_fast) * kbps + a_fast * this.fast_kbps;
    this.slow_kbps = (1 - a_slow) * kbps + a_slow * this.slow_kbps;
    this.total_weight += w;
  }

  /** The lower of the two bias-corrected averages, kbit/s; NaN before any sample. */
  estimateKbps(): number {
    if (!(this.total_weight > 0)) return Number.NaN;
    const fast = this.fast_kbps / (1 - 0.5 ** (this.total_weight / this.fast_half_life));
    const slow = this.slow_kbps / (1 - 0.5 ** (this.total_weight / this.slow_half_life));
    return Math.min(fast, slow);
  }
}

/** dash.js's own ThroughputController methods (the parent the extension wraps). */
export interface ThroughputParent {
  getAverageThroughput(type: string, mode?: unknown, n?: number): number;
  getSafeAverageThroughput(type: string, mode?: unknown, n?: number): number;
  getAverageLatency(type: string, mode?: unknown, n?: number): number;
}

/**
 * The ThroughputController extension (registered with `player.extend("ThroughputController", fn, true)`).
 * With `use_nuwa` the built-in rules see Nuwa's estimate; otherwise dash.js's own
 * figures pass through. Either way dash.js's own average (kbit/s) is reported to
 * `onDashjsEstimate`, so both can be scored against the real capacity.
 * `onParent` receives dash.js's original methods (bound) once dash.js builds the controller.
 * With `history` (completed segment downloads per media type) the figure handed out is what
 * the flow can get (`achievableKbps`: capacity × measured share), not the raw capacity.
 * With `smoothed` as well (per media type; attachNuwa adds each completed segment's
 * `achievableKbps` to it), the figure is that average (`DashjsEwma`: dash.js's own smoothing)
 * once it has a sample, and the figure now before. `share` is `achievableKbps`'s.
 */
export function makeThroughputOverride(
  src: EstimateSource,
  use_nuwa: boolean,
  onDashjsEstimate?: (kbps: number) => void,
  safety_factor = 0.9,
  onParent?: (parent: ThroughputParent) => void,
  history?: (media_type: string) => MpcHistory,
  smoothed?: (media_type: string) => DashjsEwma,
  share: "download" | "transfer" = "download",
): () => object {
  return function NuwaThroughput(this: { parent: ThroughputParent }) {
    // dash.js (FactoryMaker, override=true) copies our methods onto the parent
    // instance after this function returns, so `this.parent.getAverageThroughput`
    // would later be our own function: capture the originals now, bound.
    const p = this.parent;
    const parent: ThroughputParent = {
      getAverageThroughput: p.getAverageThroughput.bind(p),
      getSafeAverageThroughput: p.getSafeAverageThroughput.bind(p),
      getAverageLatency: p.getAverageLatency.bind(p),
    };
    onParent?.(parent); // dash.js's own figures, for sampling both estimates at the same instant
    const own = (type: string, mode?: unknown, n?: number) => {
      const kbps = parent.getAverageThroughput(type, mode, n);
      if (type === "video") onDashjsEstimate?.(kbps);
      return kbps;
    };
    const ours = (type: string) => {
      if (!history) return estimateKbps(src);
      const now_kbps = achievableKbps(src, history(type), share); // also sets the next sample's predicted capacity
      const avg_kbps = smoothed ? smoothed(type).estimateKbps() : Number.NaN;
      return Number.isFinite(avg_kbps) ? avg_kbps : now_kbps;
    };
    return {
      getAverageThroughput: (type: string, mode?: unknown, n?: number) => {
        const theirs = own(type, mode, n);
        return use_nuwa ? ours(type) : theirs;
      },
      getSafeAverageThroughput: (type: string, mode?: unknown, n?: number) => {
        own(type, mode, n);
        return use_nuwa ? ours(type) * safety_factor : parent.getSafeAverageThroughput(type, mode, n);
      },
      getAverageLatency: (type: string, mode?: unknown, n?: number) => {
        if (!use_nuwa) return parent.getAverageLatency(type, mode, n);
        const rtt_us = src.controller()?.minRttSampleUs ?? Number.NaN;
        return Number.isFinite(rtt_us) ? rtt_us / 1000 : parent.getAverageLatency(type, mode, n);
      },
    };
  };
}

/** Minimal dash.js surfaces the rule touches. */
export interface RepresentationLike {
  /** Representation@id (dash.js 5 Representation.id). */
  id?: string | number | null;
  bitrateInKbit?: number;
  /** Segment duration, s (dash.js 5 Representation; NaN/absent when unknown). */
  segmentDuration?: number;
}
interface RulesContext {
  getMediaInfo(): unknown;
  getMediaType(): string;
  getRepresentation?(): RepresentationLike | null | undefined;
  getAbrController(): {
    getOptimalRepresentationForBitrate(mediaInfo: unknown, kbps: number, includeCompatible: boolean): RepresentationLike | null;
    getPossibleVoRepresentationsFilteredBySettings?(mediaInfo: unknown, includeCompatible: boolean): RepresentationLike[] | null;
  };
}

/** Last decision of the Nuwa rule, for telemetry. */
export interface AbrDecision {
  media_type: string;
  estimate_kbps: number;
  budget_kbps: number;
  buffer_s: number;
  chosen_kbps: number | null;
  reason: string;
}

/** Buffer levels (s) that shape the rule's switching. */
export const ABR_BUFFER_S = {
  /** Below this, no up-switch (the buffer is built first). */
  no_up: 4,
  /** Below this, go up at most one rung per segment. */
  cautious_up: 8,
  /** At or above this, hold the current bitrate while the raw estimate still carries it. */
  hold_down: 4,
} as const;

/**
 * Nuwa's bitrate choice for the next segment (pure; unit-tested).
 * The budget is the estimate × abrSafetyFactor(buffer, basis). Up: never while the
 * buffer is below ABR_BUFFER_S.no_up (after the first segment); then to the highest
 * rung within the budget, one rung at a time while the buffer is below
 * ABR_BUFFER_S.cautious_up. Down: to the highest rung within the budget, unless
 * the buffer is at least ABR_BUFFER_S.hold_down and the raw estimate still covers
 * the current bitrate (the buffer absorbs the safety margin, so no switch is spent
 * on it; Pensieve's QoE charges every switch).
 * @param ladder_kbps available bitrates, kbit/s, any order (non-empty)
 * @param current_kbps bitrate of the last segment, kbit/s (null before the first)
 * @param estimate_kbps Nuwa's estimate, kbit/s (finite, > 0)
 * @throws RangeError on an empty ladder or a non-positive estimate
 */
export function chooseBitrateKbps(ladder_kbps: readonly number[], current_kbps: number | null, estimate_kbps: number, basis: string, buffer_s: number): { kbps: number; budget_kbps: number; why: string } {
  if (ladder_kbps.length === 0) throw new RangeError("chooseBitrateKbps: empty ladder");
  if (!(estimate_kbps > 0)) throw new RangeError(`chooseBitrateKbps: estimate must be > 0 kbit/s, got ${estimate_kbps}`);
  const ladder = [...ladder_kbps].sort((a, b) => a - b);
  const budget_kbps = estimate_kbps * abrSafetyFactor(buffer_s, basis);
  let target = ladder[0]!;
  for (const r of ladder) if (r <= budget_kbps) target = r;
  if (current_kbps === null) return { kbps: target, budget_kbps, why: "first segment: highest rung within budget" };
  const cur_i = Math.max(0, ladder.findIndex((r) => r >= current_kbps));
  const cur = ladder[cur_i]!;
  if (target > cur) {
    if (buffer_s < ABR_BUFFER_S.no_up) return { kbps: cur, budget_kbps, why: `stay: buffer ${buffer_s.toFixed(1)} s < ${ABR_BUFFER_S.no_up} s, build it first` };
    if (buffer_s < ABR_BUFFER_S.cautious_up) return { kbps: ladder[cur_i + 1]!, budget_kbps, why: `up one rung (buffer ${buffer_s.toFixed(1)} s < ${ABR_BUFFER_S.cautious_up} s)` };
    return { kbps: target, budget_kbps, why: "up to the highest rung within budget" };
  }
  if (target < cur) {
    if (buffer_s >= ABR_BUFFER_S.hold_down && estimate_kbps >= cur) return { kbps: cur, budget_kbps, why: `hold: buffer ${buffer_s.toFixed(1)} s absorbs the safety margin` };
    return { kbps: target, budget_kbps, why: "down to the highest rung within budget" };
  }
  return { kbps: cur, budget_kbps, why: "stay" };
}

/**
 * Build the rule's class function for `dashjs.FactoryMaker.getClassFactory`.
 * @param createSwitchRequest returns a new dash.js SwitchRequest (FactoryMaker.getClassFactoryByName("SwitchRequest")(context).create())
 * @param bufferLevelS the buffer level of a media type, s
 */
export function makeNuwaAbrRule(
  src: EstimateSource,
  createSwitchRequest: (context: unknown) => { representation?: unknown; priority?: number; reason?: unknown },
  bufferLevelS: (media_type: string) => number,
  onDecision?: (d: AbrDecision) => void,
  mpc?: NuwaMpcOptions,
): (() => object) & { __dashjs_factory_name: string } {
  const NuwaAbrRule = function (this: { context: unknown }) {
    const context = this.context;
    function getSwitchRequest(rules: RulesContext) {
      const sr = createSwitchRequest(context);
      const media_type = rules.getMediaType();
      const { kbps: est, basis } = estimateWithBasis(src); // one estimate per decision
      if (!Number.isFinite(est)) return sr;
      const buffer_s = bufferLevelS(media_type);
      const abr = rules.getAbrController();
      const reps = (abr.getPossibleVoRepresentationsFilteredBySettings?.(rules.getMediaInfo(), true) ?? []).filter((r) => typeof r.bitrateInKbit === "number");
      let rep: RepresentationLike | null;
      let budget: number;
      let why: string;
      if (reps.length > 1 && mpc) {
        const m = decideMpc(src, reps, est, basis, buffer_s, mpc.history(media_type), mpc, media_type);
        rep = m.rep;
        budget = m.budget_kbps;
        why = m.why;
      } else if (reps.length > 0) {
        const current = rules.getRepresentation?.()?.bitrateInKbit ?? null;
        const choice = chooseBitrateKbps(
          reps.map((r) => r.bitrateInKbit!),
          current,
          est,
          basis,
          buffer_s,
        );
        rep = reps.find((r) => r.bitrateInKbit === choice.kbps) ?? null;
        budget = choice.budget_kbps;
        why = choice.why;
      } else {
        budget = est * abrSafetyFactor(buffer_s, basis);
        rep = abr.getOptimalRepresentationForBitrate(rules.getMediaInfo(), budget, true);
        why = "highest rung within budget";
      }
      sr.representation = rep ?? undefined;
      sr.priority = 0.5;
      const reason = `[NuwaAbrRule] estimate ${est.toFixed(0)} kbit/s (${basis}) × safety ${(budget / est).toFixed(2)} at buffer ${buffer_s.toFixed(1)} s → ${rep?.bitrateInKbit ?? "n/a"} kbit/s: ${why}`;
      sr.reason = { message: reason, throughput: est };
      onDecision?.({ media_type, estimate_kbps: est, budget_kbps: budget, buffer_s, chosen_kbps: rep?.bitrateInKbit ?? null, reason });
      return sr;
    }
    return { getSwitchRequest, reset: () => {} };
  } as unknown as (() => object) & { __dashjs_factory_name: string };
  NuwaAbrRule.__dashjs_factory_name = "NuwaAbrRule";
  return NuwaAbrRule;
}

/** Options of the MPC rule (mpc.ts) inside makeNuwaAbrRule. */
export interface NuwaMpcOptions {
  /** The completed-segment history of a media type (fed by the loader's onComplete). */
  history: (media_type: string) => MpcHistory;
  horizon?: number;
  buffer_cap_s?: number;
  /**
   * Real bytes of a representation's next segments (mean over up to `n`), or null when unknown
   * (attach.ts: from SegmentList ranges and sidx boxes, mpd.ts SegmentSizes); unknown rungs are
   * planned with nominal bitrate × the measured size ratio.
   */
  segmentBytes?: (media_type: string, rep: RepresentationLike, n: number) => number | null;
  /*
   * Variants screened in the video simulator (sim/video.ts, `./nuwa video-sim --variants`);
   * docs/BENCHMARKS.md "Twenty-eighth session". None is on by default.
   */
  /** Cap on the prediction's relative error (robustThroughputKbps `max_error`; default MPC_DEFAULTS.max_error). */
  max_error?: number;
  /**
   * From this buffer level up, s, the error cap is `deep_max_error` (defaults MPC_DEFAULTS.deep_buffer_s,
   * Infinity: never, RobustMPC's discount at every buffer level, and .deep_max_error, 0.25).
   */
  deep_from_s?: number;
  deep_max_error?: number;
  /**
   * Buffer the plan should end its horizon with, s, and its charge per second short in units of the
   * rebuffer penalty (MpcInput `reserve_s`, `reserve_weight`; defaults MPC_DEFAULTS.reserve_s, 10 s, capped
   * at a third of `buffer_cap_s`, and .reserve_weight, 0.5; `reserve_s: 0` turns it off).
   */
  reserve_s?: number;
  reserve_weight?: number;
  /**
   * From this buffer level up, s, an up-switch is judged sustainable on the point prediction
   * (MpcInput `sustain_kbps`) instead of its robust lower bound; undefined (default): never.
   */
  sustain_on_predicted_from_s?: number;
  /** Switch hysteresis (mpc.ts mpcHysteresis; defaults MPC_DEFAULTS.down_switch_margin, .up_hold_segments). */
  down_switch_margin?: number;
  up_hold_segments?: number;
  /** The first segment at firstProbeRung's rung at least (mpc.ts; default MPC_DEFAULTS.first_probe, false: opt-in). */
  first_probe?: boolean;
}

/**
 * What the next request's first byte waits behind at the bottleneck, s: the queuing delay the
 * controller read last (`rawQueuingDelayMs`, on the download that just ended) above its target
 * delay in force (`targetDelayInForceMs`, 0 where unknown), 0 without a reading. Our own queue is held near the
 * target and drains when a download ends; what stands above it is someone else's bytes, which a
 * buffer-filling competitor keeps there (seconds on a 3G link next to a Cubic download), so
 * every request pays it once before its bytes flow. RobustMPC's download time (Yin et al.,
 * SIGCOMM 2015, §4: size ÷ throughput) plus the request's round trip plus this wait is what
 * the plan charges a segment, and what the abandonment rule charges a restart.
 */
export function standingWaitS(src: EstimateSource): number {
  const c = src.controller();
  if (!c) return 0;
  const qd_ms = c.rawQueuingDelayMs;
  const td_ms = Number.isFinite(c.targetDelayInForceMs) ? c.targetDelayInForceMs : 0;
  if (!Number.isFinite(qd_ms) || qd_ms <= td_ms) return 0;
  return (qd_ms - td_ms) / 1000;
}

/**
 * One MPC decision (mpc.ts) from the rule's inputs: the ladder (real rungs), Nuwa's estimate
 * and basis, the buffer and the history. Before any segment and any capacity measurement
 * the plan starts on the app-limited estimate (lowest rung, quickest start-up). Pure but for
 * reading the controller's min RTT. Segment sizes: `o.segmentBytes` where it knows them (the
 * index, issue 19), else nominal bitrate × the history's size ratio. Each planned download
 * costs the controller's min RTT, plus the queue standing above the target delay
 * (`standingWaitS`), plus its bytes at the planned throughput.
 * Returns the representation, the throughput planned with, and why.
 */
export function decideMpc(
  src: EstimateSource,
  reps: RepresentationLike[],
  est_kbps: number,
  basis: string,
  buffer_s: number,
  history: MpcHistory,
  o: NuwaMpcOptions,
  media_type = "video",
): { rep: RepresentationLike; budget_kbps: number; why: string; predicted_kbps: number } {
  // An abandoned segment is fetched again at the abandonment's rung: no higher until it completes.
  const all = [...reps].sort((a, b) => a.bitrateInKbit! - b.bitrateInKbit!);
  const capped = all.filter((r) => r.bitrateInKbit! <= history.cap_kbps);
  const sorted = capped.length > 0 ? capped : all.slice(0, 1);
  const ladder = sorted.map((r) => r.bitrateInKbit!);
  const { rtt_s, capacity_basis, peak_kbps } = predictorInputs(src, basis);
  // RobustMPC's error discount, capped lower once the buffer is deep (opt-in: MPC_DEFAULTS.deep_buffer_s)
  const deep = buffer_s >= (o.deep_from_s ?? MPC_DEFAULTS.deep_buffer_s);
  const max_error = deep ? (o.deep_max_error ?? MPC_DEFAULTS.deep_max_error) : (o.max_error ?? MPC_DEFAULTS.max_error);
  const rob = robustThroughputKbps(Number.isFinite(est_kbps) ? est_kbps : 0, capacity_basis, history, rtt_s, peak_kbps, max_error);
  history.next_predicted_kbps = capacity_basis === "busy_period" ? est_kbps : Number.NaN; // the flow's share and the error are scored on capacity figures only
  const last = history.samples.at(-1);
  const last_rung = last && last.bitrate_kbps > 0 ? ladder.findIndex((k) => Math.abs(k - last.bitrate_kbps) < 1e-6) : -1;
  const seg_s = Number.isFinite(sorted[0]!.segmentDuration) && sorted[0]!.segmentDuration! > 0 ? sorted[0]!.segmentDuration! : Number.isFinite(last?.segment_s) && last!.segment_s > 0 ? last!.segment_s : 2;
  const ratio = history.sizeRatio();
  const horizon = o.horizon ?? MPC_DEFAULTS.horizon;
  const real = sorted.map((r) => o.segmentBytes?.(media_type, r, horizon) ?? null);
  const segment_bytes = sorted.map((r, i) => real[i] ?? (r.bitrateInKbit! * 1000 * seg_s * ratio) / 8);
  const n_real = real.filter((b) => b !== null).length;
  const wait_s = standingWaitS(src);
  if (!(rob.kbps > 0)) return { rep: sorted[0]!, budget_kbps: 0, why: "mpc: no throughput figure yet: lowest rung", predicted_kbps: rob.predicted_kbps };
  const recent_kbps = history.samples.map((s) => s.bitrate_kbps);
  const buffer_cap_s = o.buffer_cap_s ?? MPC_DEFAULTS.buffer_cap_s;
  // the terminal buffer reserve (MPC_DEFAULTS.reserve_s), never over a third of the buffer the player keeps
  const reserve_s = Math.min(o.reserve_s ?? MPC_DEFAULTS.reserve_s, buffer_cap_s / 3);
  const hysteresis = { down_switch_margin: o.down_switch_margin ?? MPC_DEFAULTS.down_switch_margin, up_hold_segments: o.up_hold_segments ?? MPC_DEFAULTS.up_hold_segments };
  const input: MpcInput = {
    ladder_kbps: ladder,
    last_rung: last_rung >= 0 ? last_rung : null,
    buffer_s,
    throughput_kbps: rob.kbps,
    segment_bytes,
    segment_s: seg_s,
    rtt_s: rtt_s + wait_s,
    horizon,
    buffer_cap_s,
    startup: history.samples.length === 0,
    sustain_kbps: o.sustain_on_predicted_from_s !== undefined && buffer_s >= o.sustain_on_predicted_from_s && rob.predicted_kbps > rob.kbps ? rob.predicted_kbps : undefined,
    reserve_s,
    reserve_weight: o.reserve_weight ?? MPC_DEFAULTS.reserve_weight,
  };
  let plan = mpcHysteresis(input, recent_kbps, hysteresis);
  // The first segment measures the link for the second decision (mpc.ts firstProbeRung).
  const probe = history.samples.length === 0 && (o.first_probe ?? MPC_DEFAULTS.first_probe) ? firstProbeRung(ladder, segment_bytes, seg_s, rtt_s) : -1;
  if (probe > plan.rung) plan = mpcPlan({ ...input, first_rung: probe }); // the best plan that starts there
  return {
    rep: sorted[plan.rung]!,
    budget_kbps: rob.kbps,
    predicted_kbps: rob.predicted_kbps,
    why: `mpc: predicted ${rob.predicted_kbps.toFixed(0)} kbit/s (share ${rob.share.toFixed(2)}) ÷ (1 + error ${rob.error.toFixed(2)}), size ratio ${ratio.toFixed(2)}${n_real > 0 ? ` (real sizes of ${n_real}/${sorted.length} rungs from the index)` : ""}, plan [${plan.plan.map((r) => ladder[r]).join(",")}] QoE ${plan.qoe.toFixed(2)}${reserve_s > 0 ? ` (reserve ${reserve_s.toFixed(1)} s)` : ""}${plan.held ? ` (kept by the switch hysteresis: ${plan.held === "up_hold" ? "up-switch hold" : "down-switch margin"})` : ""}${wait_s > 0 ? `, each request waits ${wait_s.toFixed(2)} s behind the queue` : ""}${probe >= 0 && probe === plan.rung ? ", first segment sized to measure the top rung (firstProbeRung)" : ""}`,
  };
}

/** dash.js's FragmentRequest fields the abandonment rule reads (dash.js 5 FragmentRequest, updated by HTTPLoader on progress). */
export interface FragmentRequestLike {
  index?: number;
  bytesLoaded?: number;
  bytesTotal?: number;
  /**
   * When the first progress event came (HTTPLoader `_onprogress`). dash.js sets `startDate` only when
   * the request ends (`_updateRequestTimingInfo`), so a rule judging a download in progress has this.
   */
  firstByteDate?: Date | null;
  representation?: RepresentationLike | null;
}
interface AbandonRulesContext extends RulesContext {
  getCurrentRequest?(): FragmentRequestLike | null | undefined;
}

/**
 * A download is judged only this long after its first byte, ms, and its own rate is read over the
 * last this long: past the window's ramp after an idle gap (dash.js waits 500 ms from the first
 * byte, minSegmentDownloadTimeThresholdInMs).
 */
export const ABANDON_MIN_ELAPSED_MS = 1000;

/**
 * A download's own delivery rate over its last `window_ms`, kbit/s, from its progress samples
 * (wall time ms, bytes loaded; ascending): bytes since the newest sample at least `window_ms`
 * old (the first byte's time, 0 bytes, if none is) over the time since. Progress events come only
 * when data arrives, so a link gone dark shows here at its next byte, while a capacity estimate
 * made of the frames that arrived holds its last figure (the busy-period estimator keeps samples
 * 5 s). Exported for tests.
 */
export function recentRateKbps(samples: readonly { t_ms: number; loaded: number }[], start_ms: number, now_ms: number, window_ms = ABANDON_MIN_ELAPSED_MS): number {
  let ref = { t_ms: start_ms, loaded: 0 };
  for (const s of samples) if (s.t_ms <= now_ms - window_ms) ref = s;
  const last = samples.at(-1);
  if (!last || !(now_ms > ref.t_ms)) return Number.NaN;
  return ((last.loaded - ref.loaded) * 8) / (now_ms - ref.t_ms); // bytes × 8 / ms = kbit/s
}

/**
 * Build the MPC's abandonment rule for `player.addABRCustomRule("abandonFragmentRules", ...)`
 * (attachNuwa registers it with `abandon: true`; off by default, docs/BENCHMARKS.md):
 * dash.js calls `shouldAbandon` on each progress event of a segment download; for video, once
 * the download has run ABANDON_MIN_ELAPSED_MS, it asks `mpcAbandon` (mpc.ts) whether to restart
 * that segment at a lower rung, with the throughput the flow gets now (the lower of what the MPC
 * predicts, Nuwa's capacity × the flow's measured share, and the download's own rate over the
 * last ABANDON_MIN_ELAPSED_MS: `recentRateKbps`), the buffer, the segment's real sizes where the
 * index gives them (else the download's size scaled by bitrate), and a restart's overhead of one
 * RTT plus the queuing delay standing now. Each segment is abandoned at most once (as dash.js's
 * AbandonRequestsRule). dash.js then aborts the download and requests the segment at the rung
 * returned; the MPC (makeNuwaAbrRule) goes no higher until that replacement completes
 * (`MpcHistory.cap_kbps`) and decides freely after it. attachNuwa sets dash.js's
 * `abandonLoadTimeout` to 0 with this rule: dash.js's own hold after an abandonment (10 s of
 * down-switches only) kept the lowest rung for 10 s while the fast 300 kbit/s segments filled
 * the whole buffer with it (Verizon LTE: 19 segments, QoE 0.88 against 2.2–2.4).
 * @param now_ms wall clock, ms (dash.js stamps `firstByteDate` with Date)
 */
export function makeNuwaAbandonRule(
  src: EstimateSource,
  createSwitchRequest: (context: unknown) => { representation?: unknown; priority?: number; reason?: unknown },
  bufferLevelS: (media_type: string) => number,
  mpc: NuwaMpcOptions,
  onDecision?: (d: AbrDecision) => void,
  now_ms: () => number = () => Date.now(),
): (() => object) & { __dashjs_factory_name: string } {
  const NuwaAbandonRule = function (this: { context: unknown }) {
    const context = this.context;
    const abandoned = new Set<number>();
    const progress = new Map<number, { t_ms: number; loaded: number }[]>(); // per segment index, the last ~2 windows
    function shouldAbandon(rules: AbandonRulesContext) {
      const sr = createSwitchRequest(context);
      const media_type = rules.getMediaType();
      const req = rules.getCurrentRequest?.();
      if (media_type !== "video" || !req) return sr; // audio segments are a few kB
      const index = req.index ?? Number.NaN;
      const total = req.bytesTotal ?? Number.NaN;
      const loaded = req.bytesLoaded ?? Number.NaN;
      const started_ms = req.firstByteDate?.getTime() ?? Number.NaN;
      const now = now_ms();
      const elapsed_ms = now - started_ms;
      if (!Number.isFinite(index) || abandoned.has(index) || !(total > 0) || !(loaded >= 0) || loaded >= total || !Number.isFinite(elapsed_ms)) return sr;
      const trail = progress.get(index) ?? [];
      trail.push({ t_ms: now, loaded });
      while (trail.length > 2 && trail[1]!.t_ms <= now - 2 * ABANDON_MIN_ELAPSED_MS) trail.shift();
      progress.set(index, trail);
      if (progress.size > 4) progress.delete(progress.keys().next().value!); // segments long done
      if (!(elapsed_ms >= ABANDON_MIN_ELAPSED_MS)) return sr;
      const reps = (rules.getAbrController().getPossibleVoRepresentationsFilteredBySettings?.(rules.getMediaInfo(), true) ?? []).filter((r) => typeof r.bitrateInKbit === "number");
      const sorted = [...reps].sort((a, b) => a.bitrateInKbit! - b.bitrateInKbit!);
      const ladder = sorted.map((r) => r.bitrateInKbit!);
      const cur_kbps = req.representation?.bitrateInKbit ?? Number.NaN;
      const rung = ladder.findIndex((k) => Math.abs(k - cur_kbps) < 1e-6);
      if (rung <= 0) return sr; // lowest rung (nothing lower) or not a rung of this ladder
      const { kbps: est, basis } = estimateWithBasis(src);
      const { rtt_s, capacity_basis } = predictorInputs(src, basis);
      const history = mpc.history(media_type);
      // The lower of what the MPC predicts (capacity × share) and what this download got over the last second.
      const own_kbps = recentRateKbps(trail, started_ms, now);
      const predicted_kbps = capacity_basis === "busy_period" && est > 0 ? robustThroughputKbps(est, capacity_basis, history, rtt_s).predicted_kbps : Number.NaN;
      const throughput_kbps = Math.min(Number.isFinite(predicted_kbps) ? predicted_kbps : Number.POSITIVE_INFINITY, Number.isFinite(own_kbps) ? own_kbps : Number.POSITIVE_INFINITY);
      if (!Number.isFinite(throughput_kbps)) return sr;
      // a download that got nothing for a second: plan with one packet per window (the mpcAbandon needs > 0)
      const tput_kbps = Math.max(throughput_kbps, (1500 * 8) / (ABANDON_MIN_ELAPSED_MS + rtt_s * 1000));
      const segment_bytes = sorted.map((r) => mpc.segmentBytes?.(media_type, r, 1) ?? (total * r.bitrateInKbit!) / cur_kbps);
      const last = history.samples.at(-1);
      const prev = last ? ladder.findIndex((k) => Math.abs(k - last.bitrate_kbps) < 1e-6) : -1;
      const buffer_s = bufferLevelS(media_type);
      // The restart's first byte waits behind the queue standing now (seconds next to a buffer-filling download).
      const restart_s = rtt_s + standingWaitS(src);
      const d = mpcAbandon({ ladder_kbps: ladder, rung, prev_rung: prev >= 0 ? prev : null, bytes_total: total, bytes_loaded: loaded, buffer_s, throughput_kbps: tput_kbps, segment_bytes, rtt_s: restart_s });
      if (d.rung === null) return sr;
      abandoned.add(index);
      history.cap_kbps = ladder[d.rung]!; // the MPC keeps the replacement at this rung (decideMpc)
      sr.representation = sorted[d.rung];
      sr.priority = 0.5;
      const reason = `[NuwaAbandonRule] segment ${index} at ${cur_kbps} kbit/s: ${((total - loaded) / 1000).toFixed(0)} kB left at ${tput_kbps.toFixed(0)} kbit/s = ${d.remaining_s.toFixed(1)} s against a buffer of ${buffer_s.toFixed(1)} s → restart at ${ladder[d.rung]} kbit/s (QoE ${d.best_qoe.toFixed(2)} vs ${d.keep_qoe.toFixed(2)} kept)`;
      sr.reason = { message: reason, throughput: tput_kbps };
      onDecision?.({ media_type, estimate_kbps: est, budget_kbps: tput_kbps, buffer_s, chosen_kbps: ladder[d.rung]!, reason });
      return sr;
    }
    const reset = () => {
      abandoned.clear();
      progress.clear();
    };
    return { shouldAbandon, reset };
  } as unknown as (() => object) & { __dashjs_factory_name: string };
  NuwaAbandonRule.__dashjs_factory_name = "NuwaAbandonRule";
  return NuwaAbandonRule;
}
