/**
 * The server's loss-based ceiling as the simulator models it (session.py: the window in force is
 * min(grant, cwnd)): a Reno-style AIMD congestion window in bytes — slow start, then about one
 * frame per RTT (RFC 5681 §3.1) — with Cubic's multiplicative decrease β = 0.7 (RFC 9438 §4.6),
 * cut at most once per RTT when the sender declares a loss. A stand-in for the server's aioquic
 * Cubic (ceiling.py), not Cubic's curve.
 */
export class AimdCeiling {
  /** Congestion window, bytes (RFC 9002 §7.2 initial window: 10 frames). */
  cwnd_bytes: number;
  private ssthresh_bytes = Number.POSITIVE_INFINITY;
  private recovery_end_ms = -1;

  /**
   * @param frame_bytes one frame, bytes (the increase unit and, ×2, the floor)
   * @param rtt_ms base RTT, ms: one cut per RTT
   */
  constructor(
    private readonly frame_bytes: number,
    private readonly rtt_ms: number,
  ) {
    this.cwnd_bytes = 10 * frame_bytes;
  }

  /** `acked_bytes` newly acknowledged: grow (RFC 5681 §3.1: slow start, then about one frame per RTT). */
  onAcked(acked_bytes: number): void {
    this.cwnd_bytes += this.cwnd_bytes < this.ssthresh_bytes ? acked_bytes : (this.frame_bytes * acked_bytes) / this.cwnd_bytes;
  }

  /** The sender declared a loss at `t_ms`: cut by β = 0.7 (RFC 9438 §4.6) unless already cut within the last RTT. */
  onLoss(t_ms: number): void {
    if (t_ms < this.recovery_end_ms) return;
    this.cwnd_bytes = Math.max(2 * this.frame_bytes, 0.7 * this.cwnd_bytes);
    this.ssthresh_bytes = this.cwnd_bytes;
    this.recovery_end_ms = t_ms + this.rtt_ms;
  }
}
