/**
 * The sender's pacer (RFC 9002 §7.7: rate = N × cwnd ÷ smoothed RTT): a token bucket refilled
 * every simulated ms at `gain` × window ÷ RTT, holding at most 2 ms of that rate or two frames,
 * whichever is more. The RTT is the base RTT given at construction unless `refill` is passed a
 * measured one (the server's grant pacer, grants.py `GrantState.pace_wait_us`: min(smoothed RTT,
 * latest RTT sample) of the grants' echoes). `gain` = Infinity turns pacing off (a whole window
 * may leave in one ms).
 */
export class Pacer {
  private tokens_bytes: number;

  /**
   * @param gain pacing gain, dimensionless (> 0; Infinity: no pacing)
   * @param rtt_ms base RTT the rate is computed over, ms (> 0)
   * @param frame_bytes one frame, bytes: the bucket starts with one
   * @throws RangeError on a gain or RTT ≤ 0
   */
  constructor(
    private readonly gain: number,
    private readonly rtt_ms: number,
    private readonly frame_bytes: number,
  ) {
    if (!(gain > 0)) throw new RangeError(`Pacer: pacing_gain must be > 0 (got ${gain})`);
    if (!(rtt_ms > 0)) throw new RangeError(`Pacer: rtt_ms must be > 0 (got ${rtt_ms})`);
    this.tokens_bytes = frame_bytes;
  }

  /**
   * Add one ms of tokens for a window of `window_bytes` in force (call once per simulated ms).
   * @param rtt_ms the RTT the rate is computed over, ms (default: the base RTT of the constructor)
   */
  refill(window_bytes: number, rtt_ms = this.rtt_ms): void {
    if (this.gain === Number.POSITIVE_INFINITY) return;
    const rate_per_ms = (this.gain * window_bytes) / Math.max(1, rtt_ms);
    this.tokens_bytes = Math.min(this.tokens_bytes + rate_per_ms, Math.max(2 * rate_per_ms, 2 * this.frame_bytes));
  }

  /** May a frame leave now? */
  get ready(): boolean {
    return this.gain === Number.POSITIVE_INFINITY || this.tokens_bytes >= this.frame_bytes;
  }

  /** A frame of `bytes` left. */
  take(bytes: number): void {
    if (this.gain !== Number.POSITIVE_INFINITY) this.tokens_bytes -= bytes;
  }
}
