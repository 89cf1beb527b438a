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

/** The ThroughputController extension (registered with `player.extend("ThroughputController", fn, true)`). */
export function makeThroughputOverride(src: EstimateSource, safety_factor = 0.9): () => object {
  return function NuwaThroughput() {
    return {
      getAverageThroughput: () => estimateKbps(src),
      getSafeAverageThroughput: () => estimateKbps(src) * safety_factor,
      getAverageLatency: () => {
        const c = src.controller();
        const rtt_us = c?.minRttSampleUs ?? Number.NaN;
        return Number.isFinite(rtt_us) ? rtt_us / 1000 : Number.NaN;
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
