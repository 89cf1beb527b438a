/**
 * Delivery-rate estimator at the receiver: bytes received per unit of receiver
 * time, in fixed bins, with a sliding mean and a sliding max filter
 * (the max filter is what SIMULATION.md found necessary on bursty LTE; BBR's
 * BtlBw max filter plays the same role, draft-cardwell-iccrg-bbr §4.5.2).
 * Pure: every call takes the receiver time.
 */
export class DeliveryRateEstimator {
  private readonly bins_bytes: Float64Array;
  private head_bin = Number.NaN; // absolute index of the newest bin
  private total_bytes = 0;

  /**
   * @param bin_us bin width, µs (default 10 ms)
   * @param history_us how much history is kept, µs (default 2 s)
   */
  constructor(
    private readonly bin_us = 10_000,
    history_us = 2_000_000,
  ) {
    if (!(bin_us > 0) || !(history_us >= bin_us)) throw new RangeError("DeliveryRateEstimator: need 0 < bin_us ≤ history_us");
    this.bins_bytes = new Float64Array(Math.ceil(history_us / bin_us));
  }

  private advance(now_us: number): void {
    const bin = Math.floor(now_us / this.bin_us);
    if (Number.isNaN(this.head_bin)) {
      this.head_bin = bin;
      return;
    }
    if (bin <= this.head_bin) return;
    const n = this.bins_bytes.length;
    const steps = Math.min(bin - this.head_bin, n);
    for (let i = 1; i <= steps; i++) this.bins_bytes[(this.head_bin + i) % n] = 0;
    this.head_bin = bin;
  }

  /** Record `size_bytes` received at receiver time `recv_time_us`. */
  onBytes(recv_time_us: number, size_bytes: number): void {
    this.advance(recv_time_us);
    const bin = Math.floor(recv_time_us / this.bin_us);
    if (bin < this.head_bin - this.bins_bytes.length + 1) return; // older than the history
    const n = this.bins_bytes.length;
    this.bins_bytes[((bin % n) + n) % n]! += size_bytes;
    this.total_bytes += size_bytes;
  }

  /** Mean delivery rate over the last `window_us` ending at `now_us`, bits per second. */
  rateBps(now_us: number, window_us: number): number {
    this.advance(now_us);
    if (Number.isNaN(this.head_bin)) return 0;
    const n = this.bins_bytes.length;
    const k = Math.max(1, Math.min(n, Math.round(window_us / this.bin_us)));
    let sum = 0;
    for (let i = 0; i < k; i++) sum += this.bins_bytes[(((this.head_bin - i) % n) + n) % n]!;
    return (sum * 8 * 1e6) / (k * this.bin_us);
  }

  /**
   * Max over the last `window_us` of the mean rate over `sub_us`-long spans, bits per second.
   * This is the "delivery rate, max-filtered over 200–500 ms" of SIMULATION.md.
   */
  maxRateBps(now_us: number, window_us: number, sub_us: number): number {
    this.advance(now_us);
    if (Number.isNaN(this.head_bin)) return 0;
    const n = this.bins_bytes.length;
    const k = Math.max(1, Math.min(n, Math.round(sub_us / this.bin_us)));
    const spans = Math.max(1, Math.min(n - k + 1, Math.round(window_us / this.bin_us)));
    let sum = 0;
    for (let i = 0; i < k; i++) sum += this.bins_bytes[(((this.head_bin - i) % n) + n) % n]!;
    let best = sum;
    for (let s = 1; s < spans; s++) {
      sum += this.bins_bytes[(((this.head_bin - s - k + 1) % n) + n) % n]! - this.bins_bytes[(((this.head_bin - s + 1) % n) + n) % n]!;
      if (sum > best) best = sum;
    }
    return (best * 8 * 1e6) / (k * this.bin_us);
  }

  /** All bytes recorded, bytes. */
  get totalBytes(): number {
    return this.total_bytes;
  }
}
