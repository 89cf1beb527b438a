/**
 * When to send a grant (docs/DESIGN.md §2 step 5): grants are state, latest wins, so
 * they are cheap to repeat. Send one when enough new bytes arrived that the
 * sender would otherwise wait (every `every_frames` frames; on a path shorter than
 * `max_interval_us`, also half the window's bytes after one min RTT), when the window
 * moved by more than `window_change_fraction`, and at least every
 * `max_interval_us` regardless (a lost datagram is repaired by the next one).
 * A grant that carries news (frames arrived since the last one) goes out at most
 * `max_interval_us` after the previous grant. A grant that only repeats the last one
 * (nothing arrived, the window stayed put: an outage, a dark link, a player idle
 * between segments) waits `repeatIntervalUs`, which doubles per repeat up to
 * `idle_max_interval_us` and halves per grant with news (frames, or a larger window), down
 * to `max_interval_us`. A smaller window while nothing arrives (the silence decay of an
 * outage) is no news: the sender has already written what the last grant allowed and
 * writes again only when a grant moves the cumulative count, so it rides on the next
 * repeat, or on the grant the first returning frame triggers.
 * Each grant makes the server send an ACK, and on a near-dark link those ACKs wait
 * for the link's next delivery opportunity (seconds): a link that delivers one frame
 * a second must not be answered by a fresh burst of 10 ms repeats after every frame
 * (issue 14: on the UMTS trace these ACKs were a third of the packets we sent and
 * held the p95 queuing delay of all packets near 1 s). On a busy link frames arrive
 * every interval, every grant carries news, and the cadence stays `max_interval_us`.
 * Pure: the adapter passes the time.
 */
import { GRANT_INTERVAL_US } from "@nuwa/cc";

export interface GrantPolicyConfig {
  /** Send after this many frames since the last grant. */
  every_frames: number;
  /** Send when the window changed by more than this fraction. */
  window_change_fraction: number;
  /** Never wait longer than this between grants, µs. */
  max_interval_us: number;
  /** Never send two grants closer than this, µs (≤ 1 kHz keeps the server's flood guard quiet). */
  min_interval_us: number;
  /** Longest repeat interval while nothing arrives, µs (two repeats fit in the server's 1 s grant timeout). */
  idle_max_interval_us: number;
}

export const DEFAULT_GRANT_POLICY: Readonly<GrantPolicyConfig> = Object.freeze({
  every_frames: 8,
  window_change_fraction: 0.125,
  max_interval_us: GRANT_INTERVAL_US, // 10 ms
  min_interval_us: 1_000,
  idle_max_interval_us: 400_000,
});

export class GrantPolicy {
  private last_sent_us = Number.NEGATIVE_INFINITY;
  private last_window_bytes = 0;
  private frames_since = 0;
  private bytes_since = 0;
  private interval_us: number;

  /** @throws RangeError unless 0 < min_interval_us ≤ max_interval_us ≤ idle_max_interval_us. */
  constructor(private readonly cfg: GrantPolicyConfig = DEFAULT_GRANT_POLICY) {
    if (!(cfg.min_interval_us > 0 && cfg.min_interval_us <= cfg.max_interval_us && cfg.max_interval_us <= cfg.idle_max_interval_us)) {
      throw new RangeError(`GrantPolicy: need 0 < min_interval_us ≤ max_interval_us ≤ idle_max_interval_us, got ${cfg.min_interval_us}, ${cfg.max_interval_us}, ${cfg.idle_max_interval_us}`);
    }
    this.interval_us = cfg.max_interval_us;
  }

  /** Count received frames and their bytes (`bytes` NaN or omitted: frames only, the half-window rule off). */
  onFrames(n: number, bytes = Number.NaN): void {
    this.frames_since += n;
    this.bytes_since += bytes;
  }

  /** Current interval before a grant without news is repeated, µs (`max_interval_us` on a busy link, longer while nothing arrives). */
  get repeatIntervalUs(): number {
    return this.interval_us;
  }

  /**
   * Whether a grant for `window_bytes` is due at `now_us`. `min_rtt_us`: the path's min RTT, µs
   * (NaN when unknown): on a path shorter than `max_interval_us` a grant also goes once half the
   * window has arrived and one min RTT has passed since the last grant.
   */
  due(now_us: number, window_bytes: number, min_rtt_us = Number.NaN): boolean {
    const since = now_us - this.last_sent_us;
    if (since < this.cfg.min_interval_us) return false;
    if (since >= this.interval_us) return true;
    if (this.frames_since >= this.cfg.every_frames) return true;
    // Half the window arrived since the last grant: the sender, held to that grant's cumulative
    // count + window, is about to wait for the next one. On a path whose RTT is shorter than
    // max_interval_us (a nearby server, loopback) a small window otherwise turns over once per
    // interval, not per RTT; the controller's window validation (2 × delivery rate × RTT) then reads
    // the window as unused and holds it at the floor for good (thirty-fifth session: a WebSocket
    // session on loopback under CPU load sat at one frame, 0.8 Mbit/s, from 5 s to its end at 41 s).
    // On a longer path the news rule above already answers within max_interval_us < one RTT, and
    // answering sooner there raised the UMTS trace's p95 in two runs each (868 and 593 ms against 466 and 415).
    if (this.frames_since > 0 && min_rtt_us < this.cfg.max_interval_us && since >= min_rtt_us && 2 * this.bytes_since >= window_bytes) return true;
    if (this.frames_since > 0 && since >= this.cfg.max_interval_us) return true; // news: the sender may be waiting for it
    // A smaller window with nothing arrived since the last grant waits for the next grant: the sender
    // cannot act on it (the last grant's bytes are written; the server writes again only when a grant
    // moves the cumulative count, and the grant a returning frame triggers carries the newest window),
    // while each grant costs the downlink an ACK that waits out the dark spell in the queue.
    if (window_bytes < this.last_window_bytes && this.frames_since === 0) return false;
    return Math.abs(window_bytes - this.last_window_bytes) > this.cfg.window_change_fraction * this.last_window_bytes;
  }

  /**
   * µs until a grant held back only by `min_interval_us` may go, at `now_us`, on a path whose min RTT
   * (`min_rtt_us`) is shorter than `max_interval_us`: frames arrived since the last grant and it went out
   * less than `min_interval_us` ago; NaN otherwise (and on longer paths or an unknown RTT, where the news
   * rule answers within `max_interval_us` and the next frames re-check anyway). The adapter re-checks
   * `due` then rather than at its next periodic tick: on a path shorter than `min_interval_us` a small
   * window's frames all arrive inside that interval, and waiting for a 5 ms tick makes the window turn
   * over once per tick, not per round trip; the controller's window validation, which counts one min
   * RTT for the grant's wait, then reads that window as a quarter used and holds it where it is (a
   * window that fell to one frame at 100 Mbit/s on a 0.6 ms path stayed there at 2 Mbit/s:
   * grants-loop.test.ts).
   */
  retryInUs(now_us: number, min_rtt_us = Number.NaN): number {
    if (!(min_rtt_us < this.cfg.max_interval_us)) return Number.NaN;
    const since = now_us - this.last_sent_us;
    return this.frames_since > 0 && since < this.cfg.min_interval_us ? this.cfg.min_interval_us - since : Number.NaN;
  }

  /** Record that a grant went out. */
  sent(now_us: number, window_bytes: number): void {
    // nothing arrived and the window did not grow since the last grant: repeat less often
    if (this.frames_since === 0 && window_bytes <= this.last_window_bytes) {
      this.interval_us = Math.min(this.cfg.idle_max_interval_us, 2 * this.interval_us);
    } else {
      // news (frames arrived, or the window grew): halve, not reset, so that one frame in a dark
      // second buys one grant, not a burst of 10 ms repeats
      this.interval_us = Math.max(this.cfg.max_interval_us, this.interval_us / 2);
    }
    this.last_sent_us = now_us;
    this.last_window_bytes = window_bytes;
    this.frames_since = 0;
    this.bytes_since = 0;
  }
}
