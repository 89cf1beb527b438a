/**
 * Our own backlog at the bottleneck, seen from the receiver (docs/DESIGN.md §3 "Backlog delay").
 *
 * A frame's queuing delay Qd (Eq. 1) is the sum of two waits: behind our own earlier frames
 * (the backlog the window built, which a smaller window relieves) and for the link itself (a
 * delivery gap of a bursty cellular scheduler, other flows' packets). Delay-convergent
 * controllers that read the second as the first cut their window on non-congestive jitter and
 * starve (Arun et al., SIGCOMM 2022). The receiver can separate them: frame i, had it found no
 * queue, would have arrived at a_i = send_i + base OWD (receiver clock); the frames before it that
 * were received after a_i were still ahead of it in the queue when it got there. Their bytes,
 *   B_i = cum_received(before frame i) − cum_received(at a_i),
 * are our backlog ahead of frame i, and B_i / (our delivery rate) is the delay that backlog
 * costs (what the window rule should hold near Td). A link gap raises Qd for every frame that
 * waits through it but adds nothing to B. In a FIFO shared with other flows, our bytes ahead
 * drain at our share of the link, so B / (our rate) ≈ Qd and the signal is unchanged there.
 *
 * Pure: the caller passes every time. Memory: one entry per frame received in the last
 * `history_us`.
 */
export class BacklogEstimator {
  private recv_us: number[] = [];
  private cum_bytes: number[] = [];
  private head = 0; // index of the oldest live entry
  private cum_received_bytes = 0;
  private trimmed = false; // whether entries older than the history were dropped
  private service_delay_us = Number.NaN;

  /** @param history_us how far back a_i may lie, µs; older → NaN (no estimate). @throws RangeError unless > 0. */
  constructor(private readonly history_us = 5_000_000) {
    if (!(history_us > 0)) throw new RangeError(`BacklogEstimator: history_us must be > 0, got ${history_us}`);
  }

  /**
   * Take one received frame and return our bytes that were still ahead of it in the queue.
   * @param zero_queue_arrival_us a_i = send_time_us + base OWD: when the frame would have been
   *   received with no queue, receiver clock, µs
   * @param recv_time_us when it was received, receiver clock, µs (non-decreasing)
   * @param size_bytes its size, bytes
   * @returns backlog ahead of the frame, bytes (≥ 0), or NaN when a_i lies before the history
   *   kept (a wait longer than `history_us`)
   */
  onFrame(zero_queue_arrival_us: number, recv_time_us: number, size_bytes: number): number {
    const before = this.cum_received_bytes;
    // one search serves both signals: the last frame received by a_i, and the one after it (our
    // first delivery after a_i, or this frame)
    const i = this.lastAtOrBefore(zero_queue_arrival_us);
    const at = Number.isNaN(i) ? Number.NaN : i < this.head ? 0 : this.cum_bytes[i]!; // before the first frame: nothing received
    const first_after_us = i + 1 < this.recv_us.length ? this.recv_us[i + 1]! : recv_time_us;
    this.service_delay_us = Number.isNaN(i) ? Number.NaN : Math.max(0, recv_time_us - first_after_us);
    this.cum_received_bytes += size_bytes;
    this.recv_us.push(recv_time_us);
    this.cum_bytes.push(this.cum_received_bytes);
    this.trim(recv_time_us);
    return Number.isNaN(at) ? Number.NaN : Math.max(0, before - at);
  }

  /**
   * The service delay of the last frame, µs: from the first delivery of ours at or after the frame
   * reached the queue to its own, recv_i − min{recv_j : recv_j ≥ a_i} (the frame itself included;
   * docs/DESIGN.md §3 "Service delay"). The wait before that first delivery is the link's (a
   * delivery gap, a scheduler's grant, other flows' packets); what follows it is the link serving
   * our frames ahead (FIFO). NaN before the first `onFrame` or when a_i lies beyond the history.
   */
  get lastServiceDelayUs(): number {
    return this.service_delay_us;
  }

  /**
   * Index of the last frame received at or before `t_us`; `head − 1` when none is (t_us before every
   * frame kept, and none was ever dropped); NaN when the frames that would tell were dropped.
   */
  private lastAtOrBefore(t_us: number): number {
    const n = this.recv_us.length;
    if (n === 0 || t_us < this.recv_us[this.head]!) return this.trimmed ? Number.NaN : this.head - 1;
    let lo = this.head;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.recv_us[mid]! <= t_us) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private trim(now_us: number): void {
    while (this.head < this.recv_us.length - 1 && this.recv_us[this.head + 1]! < now_us - this.history_us) {
      this.head++;
      this.trimmed = true;
    }
    if (this.head > 4096 && this.head * 2 > this.recv_us.length) {
      this.recv_us = this.recv_us.slice(this.head);
      this.cum_bytes = this.cum_bytes.slice(this.head);
      this.head = 0;
    }
  }
}
