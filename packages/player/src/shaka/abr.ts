/**
 * Nuwa's estimate in shaka-player's ABR (`config.abrFactory`): a subclass of
 * shaka's own SimpleAbrManager whose `getBandwidthEstimate()` returns what this
 * flow can fetch by Nuwa's figure, so shaka's rules (switch interval,
 * bandwidthUpgradeTarget 0.85 / DowngradeTarget 0.95, restrictions, startup
 * wait for 128 kB of samples) decide on it unchanged. SimpleAbrManager's
 * `chooseVariant` and `suggestStreams_` read the estimate through
 * `this.getBandwidthEstimate()` (lib/abr/simple_abr_manager.js; the method is
 * exported, so the compiled build calls it by name too). shaka's own EWMA keeps
 * being fed by `segmentDownloaded` and stays readable (`shakaEstimateBps`), so
 * both estimates can be sampled at the same instant.
 *
 * The figure is the one dash.js's rules get with `estimate: "nuwa"` (dash/abr.ts
 * `achievableKbps`): Nuwa's capacity × the share of it completed segment
 * downloads measured (issue 15: the raw capacity made a player's rules
 * up-switch beyond what the flow could fetch under our window).
 */
import { achievableKbps, type EstimateSource } from "../dash/abr.js";
import type { MpcHistory } from "../dash/mpc.js";
import type { ShakaAbrManagerLike, ShakaLike } from "./types.js";

/** The AbrManager the factory builds: shaka's SimpleAbrManager on Nuwa's estimate. */
export interface NuwaAbrManager extends ShakaAbrManagerLike {
  /** shaka's own estimate (its EWMA over the progress events, or its default before 128 kB), bit/s. */
  shakaEstimateBps(): number;
}

/**
 * Nuwa's estimate for shaka, bit/s: `achievableKbps` × 1000, NaN before any data.
 * @param history completed video segment downloads (the scheme plugin's completions)
 */
export function nuwaShakaEstimateBps(src: EstimateSource, history: MpcHistory): number {
  const kbps = achievableKbps(src, history);
  return kbps > 0 ? kbps * 1000 : Number.NaN;
}

/**
 * An `abrFactory` for shaka's config. Before Nuwa has an estimate (no data yet) the
 * manager answers with shaka's own figure.
 * @param shaka the shaka namespace (its SimpleAbrManager is the base class)
 * @param estimate_bps Nuwa's estimate now, bit/s (NaN when none)
 * @param onCreate receives each manager shaka builds (shaka builds one per load)
 */
export function makeNuwaAbrFactory(shaka: Pick<ShakaLike, "abr">, estimate_bps: () => number, onCreate?: (m: NuwaAbrManager) => void): () => NuwaAbrManager {
  class NuwaShakaAbrManager extends shaka.abr.SimpleAbrManager implements NuwaAbrManager {
    shakaEstimateBps(): number {
      return super.getBandwidthEstimate();
    }
    override getBandwidthEstimate(): number {
      const bps = estimate_bps();
      return bps > 0 ? bps : super.getBandwidthEstimate();
    }
  }
  return () => {
    const m = new NuwaShakaAbrManager();
    onCreate?.(m);
    return m;
  };
}
