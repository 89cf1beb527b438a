/**
 * When to send a grant (docs/DESIGN.md §2 step 5): grants are state, latest wins, so
 * they are cheap to repeat. Send one when enough new bytes arrived that the
 * sender would otherwise wait (every `every_frames` frames), when the window
 * moved by more than `window_change_fraction`, and at least every
 * `max_interval_us` regardless (a lost datagram is repaired by the next one).
 * While nothing arrives and the window stays put (an outage, a dark link, a player
 * idle between segments) the repeat interval doubles per grant up to
 * `idle_max_interval_us`: each grant makes the server send an ACK, and on a dark link
 * those ACKs are packets of ours queued for the whole outage (issue 14). The first
 * frame to arrive resets the interval to `max_interval_us`.
 * Pure: the adapter passes the time.
 */
export interface GrantPolicyConfig {
  /** Send after this many frames since the last grant. */
  every_frames: number;
  /** Send when the window changed by more than this fraction. */
  window_change_fraction: number;
  /** Never wait longer than this between grants, µs. */
  max_interval_us: number;
  /** Never send two grants closer than this, µs (≤ 1 kHz keeps the server's flood guard quiet). */
  min_interval_us: number;
  /** Longest repeat interval while nothing arrives, µs (well under the server's 1 s grant timeout). */
  idle_max_interval_us: number;
}

export const DEFAULT_GRANT_POLICY: Readonly<GrantPolicyConfig> = Object.freeze({
  every_frames: 8,
  window_change_fraction: 0.125,
  max_interval_us: 10_000,
  min_interval_us: 1_000,
  idle_max_interval_us: 100_000,
});

export class GrantPolicy {
  private last_sent_us = Number.NEGATIVE_INFINITY;
  private last_window_bytes = 0;
  private frames_since = 0;
  private interval_us: number;

  /** @throws RangeError unless 0 < min_interval_us ≤ max_interval_us ≤ idle_max_interval_us. */
  constructor(private readonly cfg: GrantPolicyConfig = DEFAULT_GRANT_POLICY) {
    if (!(cfg.min_interval_us > 0 && cfg.min_interval_us <= cfg.max_interval_us && cfg.max_interval_us <= cfg.idle_max_interval_us)) {
      throw new RangeError(`GrantPolicy: need 0 < min_interval_us ≤ max_interval_us ≤ idle_max_interval_us, got ${cfg.min_interval_us}, ${cfg.max_interval_us}, ${cfg.idle_max_interval_us}`);
    }
    this.interval_us = cfg.max_interval_us;
  }

  /** Count received frames. */
  onFrames(n: number): void {
    this.frames_since += n;
    if (n > 0) this.interval_us = this.cfg.max_interval_us;
  }

  /** Current repeat interval, µs (`max_interval_us`, longer while nothing arrives). */
  get repeatIntervalUs(): number {
    return this.interval_us;
  }

  /** Whether a grant for `window_bytes` is due at `now_us`. */
  due(now_us: number, window_bytes: number): boolean {
    const since = now_us - this.last_sent_us;
    if (since < this.cfg.min_interval_us) return false;
    if (since >= this.interval_us) return true;
    if (this.frames_since >= this.cfg.every_frames) return true;
    return Math.abs(window_bytes - this.last_window_bytes) > this.cfg.window_change_fraction * this.last_window_bytes;
  }

  /** Record that a grant went out. */
  sent(now_us: number, window_bytes: number): void {
    // nothing arrived and the window did not move since the last grant: repeat less often
    if (this.frames_since === 0 && window_bytes === this.last_window_bytes) {
      this.interval_us = Math.min(this.cfg.idle_max_interval_us, 2 * this.interval_us);
    } else {
      this.interval_us = this.cfg.max_interval_us;
    }
    this.last_sent_us = now_us;
    this.last_window_bytes = window_bytes;
    this.frames_since = 0;
  }
}
