/**
 * When to send a grant (docs/DESIGN.md §2 step 5): grants are state, latest wins, so
 * they are cheap to repeat. Send one when enough new bytes arrived that the
 * sender would otherwise wait (every `every_frames` frames), when the window
 * moved by more than `window_change_fraction`, and at least every
 * `max_interval_us` regardless (a lost datagram is repaired by the next one).
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
}

export const DEFAULT_GRANT_POLICY: Readonly<GrantPolicyConfig> = Object.freeze({
  every_frames: 8,
  window_change_fraction: 0.125,
  max_interval_us: 10_000,
  min_interval_us: 1_000,
});

export class GrantPolicy {
  private last_sent_us = Number.NEGATIVE_INFINITY;
  private last_window_bytes = 0;
  private frames_since = 0;

  constructor(private readonly cfg: GrantPolicyConfig = DEFAULT_GRANT_POLICY) {}

  /** Count received frames. */
  onFrames(n: number): void {
    this.frames_since += n;
  }

  /** Whether a grant for `window_bytes` is due at `now_us`. */
  due(now_us: number, window_bytes: number): boolean {
    const since = now_us - this.last_sent_us;
    if (since < this.cfg.min_interval_us) return false;
    if (since >= this.cfg.max_interval_us) return true;
    if (this.frames_since >= this.cfg.every_frames) return true;
    return Math.abs(window_bytes - this.last_window_bytes) > this.cfg.window_change_fraction * this.last_window_bytes;
  }

  /** Record that a grant went out. */
  sent(now_us: number, window_bytes: number): void {
    this.last_sent_us = now_us;
    this.last_window_bytes = window_bytes;
    this.frames_since = 0;
  }
}
