/**
 * Time-binned series for the demo's plots (pure: no DOM, no clock).
 *
 * Every series shares one x axis: bin i covers link time [i·bin_ms, (i+1)·bin_ms)
 * on the emulator's clock (ms after its T0). Values are `null` until set, which
 * uPlot draws as a gap. Only the last `keep_bins` bins are kept.
 */

/** Names of the plotted series. `k` and `rho` are sampled from the controller's config, so a tuner that changes them shows up. */
export const SERIES = [
  "qd_page_ms",
  "qd_emu_ms",
  "td_ms",
  "window_kb",
  "grant_kb",
  "capacity_mbps",
  "delivered_mbps",
  "nuwa_mbps",
  "dashjs_mbps",
  "buffer_s",
  "bitrate_mbps",
  "k_mss",
  "rho_ms",
] as const;
export type SeriesName = (typeof SERIES)[number];

export class BinStore {
  /** Index of the first kept bin (null until the first value). */
  first: number | null = null;
  /** x values, seconds of link time (bin starts). */
  readonly x: number[] = [];
  readonly y: Record<SeriesName, (number | null)[]>;
  private readonly qd_acc = new Map<number, { sum: number; n: number }>();

  /** @throws RangeError if bin_ms <= 0 or keep_bins < 1 */
  constructor(
    readonly bin_ms: number,
    readonly keep_bins = 600,
  ) {
    if (!(bin_ms > 0)) throw new RangeError(`bin_ms must be > 0 (got ${bin_ms})`);
    if (!(keep_bins >= 1)) throw new RangeError(`keep_bins must be >= 1 (got ${keep_bins})`);
    this.y = Object.fromEntries(SERIES.map((s) => [s, [] as (number | null)[]])) as unknown as Record<SeriesName, (number | null)[]>;
  }

  /** Bin index of a link time, ms. */
  binOf(link_ms: number): number {
    return Math.floor(link_ms / this.bin_ms);
  }

  /** Make sure bins up to `i` exist; returns the array index of bin i, or -1 if it was dropped already. */
  private slot(i: number): number {
    if (this.first === null) this.first = i;
    if (i < this.first) return -1;
    while (this.first + this.x.length <= i) {
      this.x.push(((this.first + this.x.length) * this.bin_ms) / 1000);
      for (const s of SERIES) this.y[s].push(null);
    }
    const drop = this.x.length - this.keep_bins;
    if (drop > 0) {
      this.x.splice(0, drop);
      for (const s of SERIES) this.y[s].splice(0, drop);
      this.first += drop;
    }
    return i - this.first;
  }

  /** Set series `s` at bin `i` (last write wins). Non-finite values are stored as null. */
  set(s: SeriesName, i: number, v: number | null): void {
    const j = this.slot(i);
    if (j >= 0) this.y[s][j] = v !== null && Number.isFinite(v) ? v : null;
  }

  /** Add one page-side queuing delay sample (one frame) to bin i; the bin shows their mean. */
  addQd(i: number, qd_ms: number): void {
    if (!Number.isFinite(qd_ms)) return;
    const a = this.qd_acc.get(i) ?? { sum: 0, n: 0 };
    a.sum += qd_ms;
    a.n++;
    this.qd_acc.set(i, a);
    this.set("qd_page_ms", i, a.sum / a.n);
    if (this.qd_acc.size > 4 * this.keep_bins) this.qd_acc.delete(this.qd_acc.keys().next().value as number);
  }

  /** Number of bins where series s has a value. */
  filled(s: SeriesName): number {
    return this.y[s].reduce<number>((n, v) => n + (v === null ? 0 : 1), 0);
  }
}
