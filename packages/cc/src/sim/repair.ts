/**
 * The simulator's one loss model (engine.ts; every driver): what QUIC does for a lost frame:
 * the sender repairs it (RFC 9002 §6.1: declared lost about 9/8 RTT after it was
 * sent, then retransmitted), the frame keeps its original send timestamp (it is
 * stream data written once), and the receiver reads the stream in order, so the
 * frames behind a lost one wait for its repair (head-of-line blocking). Without
 * this a lost frame never arrives and the grant's cumulative field stalls forever.
 */

/** A frame in a simulator: its place in the stream. */
export interface Sequenced {
  seq: number;
}

/** One frame as the bottleneck released it. */
export interface Departure<P> {
  depart_ms: number;
  enqueue_ms: number;
  data: P;
}

export class QuicRepair<P extends Sequenced> {
  private readonly pending: { at_ms: number; p: P }[] = [];
  private head = 0;
  private readonly held = new Map<number, Departure<P>>();
  private next_read_seq = 0;

  /** @param one_way_delay_ms propagation delay each way, ms (RTT = 2×) */
  constructor(private readonly one_way_delay_ms: number) {}

  /**
   * A frame was dropped at the bottleneck at `t_ms`; it had entered the propagation
   * line at `sent_ms` (sender time). Its retransmission re-enters that line at the
   * sender 9/8 RTT after the original send (RFC 9002 §6.1.2 time threshold).
   * @returns when the sender declares the frame lost and sends it again, ms (sender time; the
   *   retransmission reaches the bottleneck one one-way delay later)
   */
  onDrop(t_ms: number, sent_ms: number, p: P): number {
    const resend_ms = sent_ms + Math.ceil((9 / 8) * 2 * this.one_way_delay_ms);
    const at_ms = Math.max(t_ms + 1, resend_ms + this.one_way_delay_ms);
    this.pending.push({ at_ms, p });
    return at_ms - this.one_way_delay_ms;
  }

  /** Retransmissions that reach the bottleneck's input by `t_ms` (propagation included), in order. */
  due(t_ms: number): P[] {
    const out: P[] = [];
    while (this.head < this.pending.length && this.pending[this.head]!.at_ms <= t_ms) out.push(this.pending[this.head++]!.p);
    if (this.head > 8192) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
    return out;
  }

  /**
   * Frames the receiver can read after these departures, in stream order, each with
   * `read_ms` (when the in-order stream let it through: never before its departure).
   */
  read(departures: readonly Departure<P>[]): (Departure<P> & { read_ms: number })[] {
    const out: (Departure<P> & { read_ms: number })[] = [];
    for (const dep of departures) {
      this.held.set(dep.data.seq, dep);
      for (let h = this.held.get(this.next_read_seq); h !== undefined; h = this.held.get(this.next_read_seq)) {
        this.held.delete(this.next_read_seq++);
        out.push({ ...h, read_ms: Math.max(h.depart_ms, dep.depart_ms) });
      }
    }
    return out;
  }
}
