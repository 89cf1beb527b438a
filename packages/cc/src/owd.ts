/**
 * One-way delay sampler: queuing delay from the sender's send timestamps and the
 * receiver's receive times, with no clock synchronisation.
 *
 * nuwa-icpads Eq. 1 prints D_c = (S_t − S_m) − (R_t − R_m), which is ≤ 0 when a
 * queue builds. The physical queuing delay is its negation:
 *   Qd = (R_t − R_m) − (S_t − S_m) = OWD_t − OWD_min, with OWD = R − S.
 * Any constant offset between the two clocks cancels in the difference.
 *
 * The base (minimum) one-way delay is kept until the queue has been seen
 * drained, never simply expired: a window whose minima expire while the
 * controller holds a standing queue of about Td turns that queue into the new
 * "zero" and ratchets the baseline up by about Td per expiry (docs/DESIGN.md §3).
 * Clock drift and route changes that raise the true base are followed by drain
 * probes (as BBR's ProbeRTT, draft-cardwell-iccrg-bbr-congestion-control §4.3.4):
 * if no sample near the base has been seen for `base_refresh_interval`, the
 * controller shrinks its grant, and the minimum seen during the probe becomes
 * the base, up or down. A lower sample lowers the base at once.
 */
export interface OwdSample {
  /** Raw one-way delay R − S, µs; includes the unknown clock offset. */
  owd_us: number;
  /** Queuing delay OWD − OWD_min, µs, ≥ 0 (Eq. 1 with the physical sign). */
  queuing_delay_us: number;
}

export class OneWayDelaySampler {
  private base_owd_us = Number.POSITIVE_INFINITY;
  private last_drained_recv_us = Number.NaN;
  private probe_min_owd_us = Number.POSITIVE_INFINITY;
  private probing = false;
  private last_recv_us = Number.NaN;
  private last_send_us = Number.NaN;

  /**
   * @param drain_threshold_us queuing delay at or below which the queue counts as drained, µs
   * @param base_refresh_interval_us after this long without a drained sample a probe is due, µs
   */
  constructor(
    private readonly drain_threshold_us: number,
    private readonly base_refresh_interval_us: number,
  ) {}

  /**
   * Take one frame's timestamps.
   * @param send_time_us sender clock at departure, µs (any epoch)
   * @param recv_time_us receiver clock at arrival, µs (any epoch, monotonic)
   * @throws RangeError if a timestamp is not finite or the receive clock runs backwards
   */
  sample(send_time_us: number, recv_time_us: number): OwdSample {
    if (!Number.isFinite(send_time_us) || !Number.isFinite(recv_time_us)) {
      throw new RangeError(`OneWayDelaySampler: non-finite timestamp (send ${send_time_us}, recv ${recv_time_us})`);
    }
    if (recv_time_us < this.last_recv_us) {
      throw new RangeError(`OneWayDelaySampler: receive time went backwards (${recv_time_us} < ${this.last_recv_us})`);
    }
    this.last_recv_us = recv_time_us;
    this.last_send_us = send_time_us;
    const owd_us = recv_time_us - send_time_us; // OWD_t = R_t − S_t
    if (owd_us < this.base_owd_us) this.base_owd_us = owd_us; // Algorithm 1 lines 9–12: new minimum (S_m, R_m)
    if (this.probing && owd_us < this.probe_min_owd_us) this.probe_min_owd_us = owd_us;
    const queuing_delay_us = owd_us - this.base_owd_us; // Eq. 1, sign corrected: (R_t − R_m) − (S_t − S_m)
    if (queuing_delay_us <= this.drain_threshold_us || Number.isNaN(this.last_drained_recv_us)) {
      this.last_drained_recv_us = recv_time_us;
    }
    return { owd_us, queuing_delay_us };
  }

  /** The current base one-way delay (minimum R − S), µs; +∞ before the first sample. */
  get baseOwdUs(): number {
    return this.base_owd_us;
  }

  /** Send time of the last sample, µs (sender clock). */
  get lastSendTimeUs(): number {
    return this.last_send_us;
  }

  /** Whether a drain probe is due at receiver time `now_us` (no drained sample for the refresh interval). */
  probeDue(now_us: number): boolean {
    return !this.probing && !Number.isNaN(this.last_drained_recv_us) && now_us - this.last_drained_recv_us > this.base_refresh_interval_us;
  }

  /** Begin collecting the minimum for a drain probe. */
  startProbe(): void {
    this.probing = true;
    this.probe_min_owd_us = Number.POSITIVE_INFINITY;
  }

  /**
   * End a drain probe: the minimum seen during it becomes the base (it may rise:
   * drift or a longer route). With `adopt` false the probe measured nothing (no frame
   * sent after its cut arrived, or the sender did not honour the cut: the queue it saw
   * was not allowed to drain) and the base stays. Either way the next probe is due a refresh interval from now.
   * Returns the base change, µs (0 if no sample came or nothing was adopted).
   */
  endProbe(now_us: number, adopt = true): number {
    this.probing = false;
    this.last_drained_recv_us = now_us;
    if (!adopt || !Number.isFinite(this.probe_min_owd_us)) return 0;
    const change_us = this.probe_min_owd_us - this.base_owd_us;
    this.base_owd_us = this.probe_min_owd_us;
    return change_us;
  }

  /** Whether a probe is in progress. */
  get isProbing(): boolean {
    return this.probing;
  }
}
