/**
 * Bookkeeping of the gaps in a download that outlives its sessions (issue 13
 * item 5): the bulk page reconnects when a session dies (Chromium's blackhole
 * detection closes a QUIC connection during a long dark stretch: "session
 * closed during the request: connection lost") and records, for each loss,
 * when frames stopped and when they came back, on the server's clock (frame
 * send stamps, which the emulator's log shares) and on the page's clock.
 * lab/nuwa_lab/bulk_metrics.py turns them into `reconnects` and
 * `disconnected_s`. Pure: the caller passes every time.
 */

/** One disconnection: from the loss of a session to the first frame of a later one. */
export interface Disconnection {
  /** Why the session ended (the failed request's message). */
  reason: string;
  /** Page time the loss was noticed, µs (performance.now() × 1000). */
  lost_t_us: number;
  /** Server send time of the last frame received before the loss, µs (server clock); null if none had arrived. */
  last_send_us: number | null;
  /** Page time the first frame after the loss arrived, µs; null while still disconnected. */
  resumed_t_us: number | null;
  /** Server send time of that frame, µs (server clock); null while still disconnected. */
  first_send_us: number | null;
  /** Sessions lost within this disconnection (a reconnected session that dies before any frame counts here, not as a new entry). */
  sessions_lost: number;
}

export class DisconnectionLog {
  readonly entries: Disconnection[] = [];
  private last_send_us: number | null = null;
  private open: Disconnection | null = null;

  /** A frame arrived (any session): closes an open disconnection. Times in µs. */
  onFrame(send_time_us: number, t_us: number): void {
    if (this.open) {
      this.open.resumed_t_us = t_us;
      this.open.first_send_us = send_time_us;
      this.open = null;
    }
    this.last_send_us = send_time_us;
  }

  /** The session carrying the download died at page time `t_us` (µs). A loss while already disconnected extends the open entry. */
  onLost(t_us: number, reason: string): void {
    if (this.open) {
      this.open.sessions_lost++;
      return;
    }
    this.open = { reason, lost_t_us: t_us, last_send_us: this.last_send_us, resumed_t_us: null, first_send_us: null, sessions_lost: 1 };
    this.entries.push(this.open);
  }

  /** Whether a loss is open (no frame since). */
  get disconnected(): boolean {
    return this.open !== null;
  }

  /** Disconnections that ended with frames on a later session. */
  get reconnects(): number {
    return this.entries.filter((e) => e.first_send_us !== null).length;
  }
}
