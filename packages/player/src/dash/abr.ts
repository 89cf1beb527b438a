/**
 * Nuwa's estimate inside dash.js, two ways (issue 4):
 * 1. an override of dash.js's ThroughputController so its built-in rules
 *    (Throughput, BOLA, DYNAMIC) see Nuwa's figure (NOTES.md: override
 *    getAverageThroughput, getSafeAverageThroughput and getAverageLatency together);
 * 2. a Nuwa ABR rule (dash.js FactoryMaker class, as dash.js's own
 *    rules/abr/ThroughputRule.js) that picks the highest representation whose
 *    bitrate fits the estimate discounted by its uncertainty and the buffer level,
 *    and returns the decision with its reason.
 */
import type { NuwaController } from "@nuwa/cc";

/** A source of the current estimate in kbit/s (dash.js's unit) and the latency in ms. */
export interface EstimateSource {
  controller: () => NuwaController | null;
  now_us: () => number;
}

/** Safety factor applied to the estimate, from buffer level (s) and the estimate's basis. */
export function abrSafetyFactor(buffer_s: number, basis: string): number {
  const uncertainty = basis === "delivery_rate" ? 0.1 : 0.25; // an app-limited figure is less certain
  const buffer_term = buffer_s < 4 ? 0.7 : buffer_s < 10 ? 0.85 : 1.0; // low buffer: play safe (BOLA's intuition, simplified)
  return (1 - uncertainty) * buffer_term;
}

/** Estimate in kbit/s, or NaN before any data (dash.js then uses its start bitrate). */
export function estimateKbps(src: EstimateSource): number {
  const c = src.controller();
  if (!c) return Number.NaN;
  const e = c.estimate(src.now_us());
  return e.bps > 0 ? e.bps / 1000 : Number.NaN;
}

/** dash.js's own ThroughputController methods (the parent the extension wraps). */
interface ThroughputParent {
  getAverageThroughput(type: string, mode?: unknown, n?: number): number;
  getSafeAverageThroughput(type: string, mode?: unknown, n?: number): number;
  getAverageLatency(type: string, mode?: unknown, n?: number): number;
}

/**
 * The ThroughputController extension (registered with `player.extend("ThroughputController", fn, true)`).
 * With `use_nuwa` the built-in rules see Nuwa's estimate; otherwise dash.js's own
 * figures pass through. Either way dash.js's own average (kbit/s) is reported to
 * `onDashjsEstimate`, so both can be scored against the real capacity.
 */
export function makeThroughputOverride(src: EstimateSource, use_nuwa: boolean, onDashjsEstimate?: (kbps: number) => void, safety_factor = 0.9): () => object {
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
    const own = (type: string, mode?: unknown, n?: number) => {
      const kbps = parent.getAverageThroughput(type, mode, n);
      if (type === "video") onDashjsEstimate?.(kbps);
      return kbps;
    };
    return {
      getAverageThroughput: (type: string, mode?: unknown, n?: number) => {
        const theirs = own(type, mode, n);
        return use_nuwa ? estimateKbps(src) : theirs;
      },
      getSafeAverageThroughput: (type: string, mode?: unknown, n?: number) => {
        own(type, mode, n);
        return use_nuwa ? estimateKbps(src) * safety_factor : parent.getSafeAverageThroughput(type, mode, n);
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
interface RulesContext {
  getMediaInfo(): unknown;
  getMediaType(): string;
  getAbrController(): { getOptimalRepresentationForBitrate(mediaInfo: unknown, kbps: number, includeCompatible: boolean): { bitrateInKbit?: number } | null };
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
): (() => object) & { __dashjs_factory_name: string } {
  const NuwaAbrRule = function (this: { context: unknown }) {
    const context = this.context;
    function getSwitchRequest(rules: RulesContext) {
      const sr = createSwitchRequest(context);
      const media_type = rules.getMediaType();
      const est = estimateKbps(src);
      if (!Number.isFinite(est)) return sr;
      const c = src.controller();
      const basis = c ? c.estimate(src.now_us()).basis : "none";
      const buffer_s = bufferLevelS(media_type);
      const budget = est * abrSafetyFactor(buffer_s, basis);
      const rep = rules.getAbrController().getOptimalRepresentationForBitrate(rules.getMediaInfo(), budget, true);
      sr.representation = rep ?? undefined;
      sr.priority = 0.5;
      const reason = `[NuwaAbrRule] estimate ${est.toFixed(0)} kbit/s (${basis}) × safety ${(budget / est).toFixed(2)} at buffer ${buffer_s.toFixed(1)} s → ${rep?.bitrateInKbit ?? "n/a"} kbit/s`;
      sr.reason = { message: reason, throughput: est };
      onDecision?.({ media_type, estimate_kbps: est, budget_kbps: budget, buffer_s, chosen_kbps: rep?.bitrateInKbit ?? null, reason });
      return sr;
    }
    return { getSwitchRequest, reset: () => {} };
  } as unknown as (() => object) & { __dashjs_factory_name: string };
  NuwaAbrRule.__dashjs_factory_name = "NuwaAbrRule";
  return NuwaAbrRule;
}
