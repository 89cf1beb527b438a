/**
 * The link's own waits: how long a frame that found the bottleneck queue empty of our
 * frames still waited there. Pure: every call takes the receiver time.
 *
 * A frame i with queuing delay Qd_i (Eq. 1) and inter-arrival gap g_i = recv_i − recv_{i−1}
 * reached the bottleneck after frame i−1 had left it exactly when Qd_i < g_i:
 *   arrival at the queue  = send_i + d_before,  departure of i−1 = recv_{i−1} − d_after,
 *   base one-way delay    = d_before + d_after,  so  send_i + base > recv_{i−1}  ⇔  Qd_i < g_i.
 * Such a frame queued behind none of ours: its Qd is the time to the link's next delivery
 * opportunity (a cellular scheduler's grant, a burst of a bursty link, the receiver's read
 * batching), or a queue of other flows' packets, not a queue our window built. On a smooth
 * link these waits are ~0; on a link delivering in bursts every G ms a frame arriving at a
 * random instant waits U(0, G) (median G/2); below one packet per base RTT the wait is up to
 * one packet's transmission time. Behind other flows' standing queue S every wait is S + its
 * jitter, and S grows if we target it: so each wait is kept as its excess over the least wait
 * of the last `floor_window_us` (500 ms: several burst gaps, shorter than a shared queue's
 * drift). The controller adds a quantile of these excesses to its target delay (docs/DESIGN.md §3,
 * "Adaptive Td"): a delay-based rule that targets less than the link's own waits reads
 * that jitter as congestion and starves (Arun et al., SIGCOMM 2022, "Starvation in
 * end-to-end congestion control").
 */
export class LinkWaitEstimator {
  private readonly at_us: Float64Array;
  private readonly wait_us: Float64Array;
  private head = -1;
  private count = 0;
  // sliding minimum of the raw waits over the last `floor_window_us` (monotone deque)
  private readonly fl_t: number[] = [];
  private readonly fl_v: number[] = [];

  /**
   * @param capacity how many samples are kept (the newest win)
   * @param max_age_us samples older than this are ignored, µs
   * @param floor_window_us span of the sliding minimum a wait is measured above, µs
   * @throws RangeError on a capacity < 1 or a non-positive age
   */
  constructor(
    capacity = 256,
    private readonly max_age_us = 10_000_000,
    private readonly floor_window_us = 500_000,
  ) {
    if (!(capacity >= 1) || !Number.isInteger(capacity)) throw new RangeError(`LinkWaitEstimator: capacity must be an integer ≥ 1, got ${capacity}`);
    if (!(max_age_us > 0)) throw new RangeError(`LinkWaitEstimator: max_age_us must be > 0, got ${max_age_us}`);
    this.at_us = new Float64Array(capacity);
    this.wait_us = new Float64Array(capacity);
  }

  /**
   * Offer one frame.
   * @param recv_time_us receiver time of the frame, µs
   * @param queuing_delay_us its Eq. 1 queuing delay, µs
   * @param gap_us time since the previous frame was received, µs (Infinity for the first)
   * @returns whether it counted (it found the queue empty of our frames: Qd < gap)
   */
  offer(recv_time_us: number, queuing_delay_us: number, gap_us: number): boolean {
    if (!(queuing_delay_us >= 0) || !(queuing_delay_us < gap_us)) return false;
    while (this.fl_v.length > 0 && this.fl_v[this.fl_v.length - 1]! >= queuing_delay_us) {
      this.fl_v.pop();
      this.fl_t.pop();
    }
    this.fl_v.push(queuing_delay_us);
    this.fl_t.push(recv_time_us);
    while (this.fl_t.length > 1 && recv_time_us - this.fl_t[0]! > this.floor_window_us) {
      this.fl_t.shift();
      this.fl_v.shift();
    }
    this.head = (this.head + 1) % this.at_us.length;
    this.at_us[this.head] = recv_time_us;
    this.wait_us[this.head] = queuing_delay_us - this.fl_v[0]!; // the wait above the recent floor
    this.count = Math.min(this.count + 1, this.at_us.length);
    return true;
  }

  /**
   * The q-quantile (nearest rank) of the waits (each above the least wait of the
   * `floor_window_us` before it) of the last `max_age_us`, µs; 0 with no sample.
   * @param q quantile in [0, 1]
   * @param now_us receiver time, µs
   */
  quantileUs(q: number, now_us: number): number {
    const xs: number[] = [];
    const n = this.at_us.length;
    for (let i = 0; i < this.count; i++) {
      const j = (this.head - i + n) % n;
      if (now_us - this.at_us[j]! > this.max_age_us) break;
      xs.push(this.wait_us[j]!);
    }
    if (xs.length === 0) return 0;
    xs.sort((a, b) => a - b);
    return xs[Math.min(xs.length - 1, Math.max(0, Math.round(q * (xs.length - 1))))]!;
  }

  /** Samples held (including expired ones). */
  get size(): number {
    return this.count;
  }
}
