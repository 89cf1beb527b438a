/**
 * Delivery-rate estimator at the receiver: bytes received per unit of receiver
 * time, in fixed bins, with a sliding mean and a sliding max filter
 * (the max filter is what docs/DESIGN.md §3 found necessary on bursty LTE; BBR's
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
   * This is the "delivery rate, max-filtered over 200–500 ms" of docs/DESIGN.md §3.
   */
  maxRateBps(now_us: number, window_us: number, sub_us: number): number {
    return this.spanRateBps(now_us, sub_us, () => Math.round(window_us / this.bin_us), true);
  }

  /**
   * Min over the last `window_us` of the mean rate over `sub_us`-long spans that lie inside it, bits
   * per second: the slowest stretch of the window (0 when any span of it carried nothing).
   */
  minRateBps(now_us: number, window_us: number, sub_us: number): number {
    return this.spanRateBps(now_us, sub_us, (k) => Math.round(window_us / this.bin_us) - k + 1, false);
  }

  /** The largest (`largest`) or smallest mean rate over `sub_us` spans, the newest first, `spans(k)` of them (k bins a span). */
  private spanRateBps(now_us: number, sub_us: number, spans: (k: number) => number, largest: boolean): number {
    this.advance(now_us);
    if (Number.isNaN(this.head_bin)) return 0;
    const n = this.bins_bytes.length;
    const k = Math.max(1, Math.min(n, Math.round(sub_us / this.bin_us)));
    const m = Math.max(1, Math.min(n - k + 1, spans(k)));
    let sum = 0;
    for (let i = 0; i < k; i++) sum += this.bins_bytes[(((this.head_bin - i) % n) + n) % n]!;
    let pick = sum;
    for (let s = 1; s < m; s++) {
      sum += this.bins_bytes[(((this.head_bin - s - k + 1) % n) + n) % n]! - this.bins_bytes[(((this.head_bin - s + 1) % n) + n) % n]!;
      if (largest ? sum > pick : sum < pick) pick = sum;
    }
    return (pick * 8 * 1e6) / (k * this.bin_us);
  }

  /** All bytes recorded, bytes. */
  get totalBytes(): number {
    return this.total_bytes;
  }
}

/**
 * Capacity from busy periods: the bottleneck's service rate measured only while
 * it was busy with our data. A frame that waited in the bottleneck queue for
 * Qd ≥ the gap since the previous frame's arrival was already queued when the
 * previous frame left, so the link spent that whole gap serving it: bytes over
 * such gaps are the link's capacity, not the sender's or the application's pace.
 * This is the receiver-side dispersion estimate of packet trains (Jain &
 * Dovrolis, pathload; Sprout and PBE-CC use the same busy-period reasoning), and
 * it stays valid when the player is application-limited (on-off segment
 * downloads), where a plain delivery rate understates the capacity.
 *
 * Pure: every call takes the receiver time.
 */
export class BusyPeriodRateEstimator {
  private readonly recv_us: Float64Array;
  private readonly gap_us: Float64Array;
  private readonly bytes: Float64Array;
  private head = 0; // next slot
  private count = 0;
  private last_recv_us = Number.NaN;

  /**
   * @param busy_window_us how much busy time the estimate averages over, µs (default 500 ms)
   * @param max_age_us samples older than this are ignored, µs (default 5 s)
   * @param capacity_samples ring size (frames)
   * @throws RangeError on non-positive windows
   */
  constructor(
    private readonly busy_window_us = 500_000,
    private readonly max_age_us = 5_000_000,
    capacity_samples = 8192,
  ) {
    if (!(busy_window_us > 0) || !(max_age_us > 0) || !(capacity_samples > 0)) throw new RangeError("BusyPeriodRateEstimator: windows must be > 0");
    this.recv_us = new Float64Array(capacity_samples);
    this.gap_us = new Float64Array(capacity_samples);
    this.bytes = new Float64Array(capacity_samples);
  }

  /**
   * One received frame.
   * @param recv_time_us receiver time of its last byte, µs (non-decreasing)
   * @param queuing_delay_us its queuing delay (Eq. 1), µs
   * @param size_bytes its size, bytes
   * @param min_queue_us queues at or below this count as empty (the drain threshold), µs
   */
  onFrame(recv_time_us: number, queuing_delay_us: number, size_bytes: number, min_queue_us: number): void {
    const gap_us = Number.isNaN(this.last_recv_us) ? Number.POSITIVE_INFINITY : recv_time_us - this.last_recv_us;
    this.last_recv_us = recv_time_us;
    if (!(gap_us >= 0) || !Number.isFinite(gap_us)) return;
    if (queuing_delay_us <= min_queue_us || queuing_delay_us < gap_us) return; // the link may have idled in this gap
    this.recv_us[this.head] = recv_time_us;
    this.gap_us[this.head] = gap_us;
    this.bytes[this.head] = size_bytes;
    this.head = (this.head + 1) % this.recv_us.length;
    this.count = Math.min(this.count + 1, this.recv_us.length);
  }

  /**
   * Capacity over the most recent `busy_window_us` of busy time, bits per second,
   * with the busy time it rests on (µs) and the age of its newest sample (µs).
   * Returns bps NaN when fewer than `min_busy_us` of busy time is on record.
   */
  estimate(now_us: number, min_busy_us = 50_000): { bps: number; busy_us: number; age_us: number } {
    const n = this.recv_us.length;
    let busy_us = 0;
    let bytes = 0;
    let newest = Number.NaN;
    for (let i = 1; i <= this.count && busy_us < this.busy_window_us; i++) {
      const j = (this.head - i + n) % n;
      if (now_us - this.recv_us[j]! > this.max_age_us) break;
      if (Number.isNaN(newest)) newest = this.recv_us[j]!;
      busy_us += this.gap_us[j]!;
      bytes += this.bytes[j]!;
    }
    const bps = busy_us >= min_busy_us ? (bytes * 8 * 1e6) / busy_us : Number.NaN;
    return { bps, busy_us, age_us: Number.isNaN(newest) ? Number.POSITIVE_INFINITY : now_us - newest };
  }
}
