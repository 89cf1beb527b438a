/**
 * The Nuwa receiver-side controller: frames in, window (grant) out.
 *
 * Pure: it owns no clock and does no I/O. Every call carries the times it
 * needs (send times on the sender's clock, receive times on the receiver's),
 * so the same code runs in Node, in the browser and under a simulated clock.
 *
 * Pipeline per received frame (docs/DESIGN.md §2, step 4):
 *   (send_time_us, recv_time_us, size_bytes)
 *     → OneWayDelaySampler  (nuwa-icpads Eq. 1, sign corrected)
 *     → QueuingDelayKalman  (nuwa-rl-journal Eq. 2–4)      [reported; drives only if qd_source = "kalman"]
 *     → BacklogEstimator    (service delay: from our first delivery after the frame reached the queue
 *                            to its own)                  [drives with qd_source = "service", the default:
 *                            min(Qd, service delay), so a link's own waits and bursts do not cut the window;
 *                            "backlog": our bytes ahead ÷ our rate, the signal before]
 *     → window rule         (θ = tanh((Td − Qd)/ρ), Eq. 2; additive step w ← w + θ·k/w, Eq. 3/6;
 *                            multiplicative step w ← w·(1 + θ·g) + max(θ, 0)·a per RTT)
 *     → window bounds, delivery-rate cap
 */
import { BacklogEstimator } from "./backlog.js";
import { type NuwaConfig, resolveConfig } from "./config.js";
import { QueuingDelayKalman } from "./kalman.js";
import { OneWayDelaySampler } from "./owd.js";
import { GRANT_INTERVAL_US } from "./protocol.js";
import { BusyPeriodRateEstimator, DeliveryRateEstimator } from "./rate.js";
import { LinkWaitEstimator } from "./waits.js";

/** Phase of the window state machine. */
export type Phase = "startup" | "avoidance" | "probe_drain" | "silence";

/** What the controller decided, with the numbers behind it (STYLE habit 11). */
export interface Decision {
  /** Window the receiver grants, bytes. */
  window_bytes: number;
  phase: Phase;
  /** Queuing delay that drove this decision, ms. */
  queuing_delay_ms: number;
  /** Raw Eq. 1 queuing delay of the last frame, ms. */
  raw_queuing_delay_ms: number;
  /** Kalman-filtered queuing delay, ms. */
  kalman_queuing_delay_ms: number;
  /** Delay of our own backlog ahead of the last frame, ms: the service delay (qd_source "service"), bytes ÷ our delivery rate ("backlog"); the raw Qd when unknown or under "raw"/"kalman". */
  backlog_delay_ms: number;
  /** θ = tanh((Td − Qd)/ρ) of the last update (0 when not in avoidance). */
  theta: number;
  /** Td in force, ms: the configured Td plus the link's own waits when adaptive (waits.ts). */
  target_delay_ms: number;
  /** Why the window is what it is. */
  reason: string;
}

/** The bandwidth estimate handed to the player and to dash.js's ABR. */
export interface BandwidthEstimate {
  /** Estimated available bandwidth, bits per second. */
  bps: number;
  /** What the figure rests on. */
  basis: "busy_period" | "delivery_rate" | "window_per_rtt" | "kalman_capacity" | "none";
  /** Capacity measured over the link's busy periods (rate.ts BusyPeriodRateEstimator), bits per second (NaN without enough busy time). */
  busy_rate_bps: number;
  /** Mean delivery rate over the last second, bits per second. */
  delivery_rate_bps: number;
  /** Max-filtered delivery rate (config.rate_filter_ms), bits per second. */
  max_delivery_rate_bps: number;
  /** Window divided by (min RTT + Qd), bits per second. */
  window_rate_bps: number;
  /** Capacity from the Kalman 1/C state, bits per second (weakly observable; see kalman.ts). */
  kalman_capacity_bps: number;
  /** Whether the link was seen backlogged (queue above the drain threshold) in the last 500 ms. */
  backlogged: boolean;
  /**
   * Peak delivery rate over spans of one min RTT within the last 2 s, bits per second: bytes that
   * arrived within one round trip are at most what the link carries in one, so this is a lower
   * bound on the capacity; unlike a download's mean it is not diluted by the window's ramp (the
   * slow start of a short download on a fast link, before any busy period: the MPC's floor, mpc.ts). At
   * most the window per min RTT.
   */
  peak_rtt_rate_bps: number;
}

const PROBE_FRESH_FRAMES = 2; // frames sent after the cut grant reached the sender that end a drain probe (onFrame)
const RATE_SPAN_US = 100_000; // µs: span of one delivery-rate sample inside the max filter
const TD_REFRESH_US = 20_000; // µs: the adaptive Td is recomputed at most this often
const RESTART_RATE_WINDOW_US = 2_000_000; // µs: delivery rate that sizes the window after a silence
const TD_RATE_WINDOW_US = 1_000_000; // µs: delivery rate that sizes the packet floor of Td
const PEAK_RATE_WINDOW_US = 2_000_000; // µs: history of the peak one-RTT delivery rate (the rate estimator keeps 2 s)

export class NuwaController {
  readonly config: NuwaConfig;
  private readonly sampler: OneWayDelaySampler;
  private readonly kalman = new QueuingDelayKalman();
  private readonly rate = new DeliveryRateEstimator();
  private readonly busy = new BusyPeriodRateEstimator();
  private readonly waits = new LinkWaitEstimator();
  private readonly backlog = new BacklogEstimator();
  private td_ms: number;
  private td_refreshed_us = Number.NEGATIVE_INFINITY;
  private td_cap_ms = Number.POSITIVE_INFINITY; // the packet cap on Td (targetDelayMs), ms
  private probe_ended_us = Number.NEGATIVE_INFINITY; // receiver time the last drain probe ended, µs
  private window_bytes: number;
  private phase: Phase = "startup";
  private theta = 0;
  private reason = "initial window (RFC 9002 §7.2)";
  private raw_qd_ms = 0;
  private kalman_qd_ms = 0;
  private backlog_delay_ms = 0;
  private min_delay_frame_bytes = 0;
  private cum_received_bytes = 0;
  private frames = 0;
  private last_recv_us = Number.NaN;
  private first_recv_us = Number.NaN; // receiver time of the first frame, µs
  private last_backlogged_us = Number.NEGATIVE_INFINITY;
  // RTT (RFC 6298 §2 smoothing, α = 1/8).
  private min_rtt_us = Number.POSITIVE_INFINITY;
  private smoothed_rtt_us = Number.NaN;
  // Drain probe.
  private probe_end_us = Number.NaN;
  private probe_start_us = Number.NaN;
  private probe_fresh_frames = 0;
  private probe_fresh_bytes = 0;
  private probe_last_fresh_us = Number.NaN; // receive time of the probe's last fresh frame
  private probe_crowded = false; // two fresh frames closer than half a min RTT: the cut was not honoured
  private window_before_probe_bytes = 0;
  // Outage (silence) handling.
  private silence_since_us = Number.NaN;
  private last_decay_us = Number.NaN;
  private stale_before_us = Number.NEGATIVE_INFINITY; // receiver-clock zero-queue arrival time before which frames are stale
  // The window after each frame, (receive time µs, bytes), oldest first, while qd_prediction is on.
  private readonly window_history_us: number[] = [];
  private readonly window_history_bytes: number[] = [];
  private window_history_head = 0; // entries before it are expired (recordWindow)
  /** Whether θ reads `predictedQdMs`: `qd_prediction`, under the multiplicative step and the service delay (config.ts; none of the three changes after construction). */
  private readonly predicts: boolean;

  /** @throws RangeError on an invalid config (see resolveConfig). */
  constructor(config: Partial<NuwaConfig> = {}) {
    this.config = resolveConfig(config);
    this.predicts = this.config.qd_prediction && this.config.step === "multiplicative" && this.config.qd_source === "service";
    this.window_bytes = this.config.initial_window_bytes;
    this.td_ms = this.config.target_delay_ms;
    this.sampler = new OneWayDelaySampler(this.config.drain_threshold_ms * 1000, this.config.base_refresh_interval_ms * 1000);
  }

  /**
   * Change Td, ρ, k or g while running (application presets, the RL tuner).
   * k (`aggressiveness_mss`) acts only in the additive step (Eq. 3/6); g
   * (`multiplicative_gain`) only in the multiplicative one. Setting the knob the
   * step in force does not read is refused rather than silently ignored.
   * @throws RangeError if the result is invalid, or on k under the multiplicative step or g
   *   under the additive step; the old values stay in force.
   */
  setParams(
    p: Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss" | "multiplicative_gain" | "adaptive_target_delay" | "target_delay_max_ms" | "target_delay_min_packets" | "target_delay_min_packets_max_factor" | "target_delay_max_packets" | "target_delay_max_packets_floor_ms" | "target_delay_max_packets_wait_quantile">>,
  ): void {
    if (p.aggressiveness_mss !== undefined && this.config.step !== "additive") {
      throw new RangeError(`NuwaController.setParams: aggressiveness_mss (k) has no effect under step "${this.config.step}" (the window moves by θ·(g·w + a) per RTT); set multiplicative_gain, or construct the controller with step "additive" (as RL_CC does) to tune k`);
    }
    if (p.multiplicative_gain !== undefined && this.config.step !== "multiplicative") {
      throw new RangeError(`NuwaController.setParams: multiplicative_gain (g) has no effect under step "${this.config.step}" (w ← w + θ·k/w per packet, Eq. 3); set aggressiveness_mss instead`);
    }
    const next = resolveConfig({ ...this.config, ...p });
    Object.assign(this.config, next);
    if (p.target_delay_ms !== undefined || p.adaptive_target_delay !== undefined || p.target_delay_max_ms !== undefined || p.target_delay_min_packets !== undefined || p.target_delay_min_packets_max_factor !== undefined || p.target_delay_max_packets !== undefined || p.target_delay_max_packets_floor_ms !== undefined || p.target_delay_max_packets_wait_quantile !== undefined) {
      this.td_refreshed_us = Number.NEGATIVE_INFINITY; // recomputed at the next frame
      this.td_ms = this.config.target_delay_ms;
    }
  }

  /**
   * Td in force at receiver time `now_us`, ms: the configured Td, plus, when adaptive, the
   * `link_wait_quantile` of the link's own waits (waits.ts); at least `target_delay_min_packets`
   * packets at the flow's delivery rate (mean over the last second, once a second of data has been
   * read), that floor at most `target_delay_min_packets_max_factor` × Td; at most
   * `target_delay_max_ms`; and, before the floor, at most `target_delay_max_packets` packets at the
   * slowest 100 ms delivery rate of the last second, unless the `target_delay_max_packets_wait_quantile`
   * of the link's own waits or `target_delay_max_packets_floor_ms` is longer. Recomputed at most every 20 ms.
   * Derivation (docs/DESIGN.md §3 "Adaptive Td"): the rule holds Qd near Td; a frame's Qd is the
   * standing queue S plus the link's own wait W, so Td = Td₀ + median(W) holds S near Td₀ on any
   * link, where a fixed Td below W's spread cuts the window on non-congestive waits and starves.
   * The packet floor (docs/DESIGN.md §3 "Td in packets"): the queue the rule holds is Td × the rate
   * the link serves us, so n packets need Td ≥ n · MSS · 8 ÷ rate. The packet cap (docs/DESIGN.md §3
   * "A cap on Td in packets"): the same queue, bounded above: when the link fades to a rate C', the
   * queue standing at rate C takes Td · C ÷ C' to leave. Where the last second's slowest 100 ms is close
   * to its mean (a smooth fast link) Td ≤ n packets at that rate keeps the standing queue near n packets.
   */
  private targetDelayMs(now_us: number): number {
    const c = this.config;
    if (!c.adaptive_target_delay && c.target_delay_min_packets === 0 && c.target_delay_max_packets === 0) return c.target_delay_ms;
    if (now_us - this.td_refreshed_us >= TD_REFRESH_US) {
      this.td_refreshed_us = now_us;
      let td_ms = c.target_delay_ms;
      if (c.adaptive_target_delay) td_ms += this.waits.quantileUs(c.link_wait_quantile, now_us) / 1000;
      const rate_bps = now_us - this.first_recv_us >= TD_RATE_WINDOW_US ? this.rate.rateBps(now_us, TD_RATE_WINDOW_US) : 0;
      if (c.target_delay_max_packets > 0 && rate_bps > 0) {
        // The cap in packets: n packets' time at the slowest 100 ms of the last second, unless the link's own
        // waits need more. On a link whose rate swings within a second that stretch is slow and Td stands; on
        // a smooth fast link it is the link's rate. A drain probe's dip is our own doing, not the link's: the
        // cap from before it holds until a second after it.
        if (this.phase !== "probe_drain" && now_us - this.probe_ended_us >= TD_RATE_WINDOW_US) {
          const slow_bps = this.rate.minRateBps(now_us, TD_RATE_WINDOW_US, RATE_SPAN_US);
          this.td_cap_ms = slow_bps > 0 ? (c.target_delay_max_packets * c.mss_bytes * 8 * 1000) / slow_bps : Number.POSITIVE_INFINITY;
        }
        const cap_ms = this.td_cap_ms;
        const waits_ms = this.waits.quantileUs(c.target_delay_max_packets_wait_quantile, now_us) / 1000;
        td_ms = Math.min(td_ms, Math.max(cap_ms, c.target_delay_max_packets_floor_ms, waits_ms));
      }
      if (c.target_delay_min_packets > 0) {
        if (rate_bps > 0) {
          const floor_ms = (c.target_delay_min_packets * c.mss_bytes * 8 * 1000) / rate_bps; // ms of n packets at the rate
          td_ms = Math.max(td_ms, Math.min(floor_ms, c.target_delay_min_packets_max_factor * c.target_delay_ms));
        }
      }
      this.td_ms = Math.min(c.target_delay_max_ms, td_ms);
    }
    return this.td_ms;
  }

  /** An RTT sample, µs, measured by the adapter (request → first byte, or a server echo). */
  onRttSample(rtt_us: number): void {
    if (!(rtt_us > 0) || !Number.isFinite(rtt_us)) return;
    if (rtt_us < this.min_rtt_us) this.min_rtt_us = rtt_us;
    this.smoothed_rtt_us = Number.isNaN(this.smoothed_rtt_us) ? rtt_us : 0.875 * this.smoothed_rtt_us + 0.125 * rtt_us; // RFC 6298 §2.3
  }

  private get minRttUs(): number {
    return Number.isFinite(this.min_rtt_us) ? this.min_rtt_us : this.config.initial_rtt_ms * 1000;
  }

  /**
   * Take one received frame.
   * @param send_time_us the frame header's send time, sender clock, µs
   * @param recv_time_us when its last byte was read, receiver clock, µs (non-decreasing)
   * @param size_bytes frame size on the wire (header + payload), bytes
   * @throws RangeError on non-finite times, a receive clock that runs backwards, or a negative size
   */
  onFrame(send_time_us: number, recv_time_us: number, size_bytes: number): Decision {
    if (!(size_bytes >= 0) || !Number.isFinite(size_bytes)) throw new RangeError(`NuwaController.onFrame: bad size_bytes ${size_bytes}`);
    const s = this.sampler.sample(send_time_us, recv_time_us);
    const c = this.config;
    this.frames++;
    this.cum_received_bytes += size_bytes;
    this.rate.onBytes(recv_time_us, size_bytes);
    if (Number.isNaN(this.first_recv_us)) this.first_recv_us = recv_time_us;
    const gap_us = Number.isNaN(this.last_recv_us) ? Number.POSITIVE_INFINITY : recv_time_us - this.last_recv_us;
    this.last_recv_us = recv_time_us;
    this.raw_qd_ms = s.queuing_delay_us / 1000;
    if (s.queuing_delay_us === 0) this.min_delay_frame_bytes = size_bytes;
    if (this.raw_qd_ms > c.drain_threshold_ms) this.last_backlogged_us = recv_time_us;

    // Resuming after silence: frames that left the sender before our post-outage grants
    // could reach it carry the outage in their delay, not our window's queue.
    if (!Number.isNaN(this.silence_since_us)) {
      this.silence_since_us = Number.NaN;
      this.stale_before_us = recv_time_us + this.minRttUs;
      this.kalman.reset(0);
    }
    const zero_queue_arrival_us = send_time_us + this.sampler.baseOwdUs;
    const stale = zero_queue_arrival_us < this.stale_before_us;
    if (!stale && this.phase !== "probe_drain") this.busy.onFrame(recv_time_us, s.queuing_delay_us, size_bytes, c.drain_threshold_ms * 1000);
    // a frame that found the queue empty of ours (Qd < gap): its Qd is the link's own wait (waits.ts);
    // collected only while the adaptive Td or the Td cap reads it (turned on mid-session, it learns from then on)
    if (!stale && (c.adaptive_target_delay || c.target_delay_max_packets > 0)) this.waits.offer(recv_time_us, s.queuing_delay_us, gap_us);
    const td_ms = this.targetDelayMs(recv_time_us);

    this.kalman_qd_ms = this.kalman.update(this.raw_qd_ms, size_bytes - this.min_delay_frame_bytes);
    // What our own bytes ahead of this frame cost it (backlog.ts), kept only while it drives the rule (no
    // per-frame history for nothing). "service": the time from our first delivery after the frame reached the
    // queue (a_i) to its own: the wait before that first delivery is the link's (a gap, a scheduler's grant,
    // other flows' packets), and bytes of ours that a burst delivers in one instant cost that instant
    // (docs/DESIGN.md §3 "Service delay"). "backlog": those bytes ÷ our mean rate, the rate only when bytes are ahead.
    if (c.qd_source === "service") {
      this.backlog.onFrame(zero_queue_arrival_us, recv_time_us, size_bytes);
      const d_us = this.backlog.lastServiceDelayUs;
      this.backlog_delay_ms = Number.isFinite(d_us) ? d_us / 1000 : this.raw_qd_ms;
    } else if (c.qd_source === "backlog") {
      const backlog_bytes = this.backlog.onFrame(zero_queue_arrival_us, recv_time_us, size_bytes);
      if (!Number.isFinite(backlog_bytes)) this.backlog_delay_ms = this.raw_qd_ms;
      else if (backlog_bytes === 0) this.backlog_delay_ms = 0;
      else this.backlog_delay_ms = (backlog_bytes * 8 * 1000) / this.rate.rateBps(recv_time_us, c.backlog_rate_window_ms * 1000); // > 0: this frame's bytes are in
    } else {
      this.backlog_delay_ms = this.raw_qd_ms;
    }
    const qd_ms = this.drivingQdMs();
    const packets = size_bytes / c.mss_bytes; // packet-equivalents of this frame
    let w_pkts = this.window_bytes / c.mss_bytes;

    switch (this.phase) {
      case "silence":
      case "startup": {
        this.phase = "startup";
        if (!stale && qd_ms > c.startup_exit_fraction * td_ms) {
          this.phase = "avoidance";
          this.reason = `startup exit: Qd ${qd_ms.toFixed(1)} ms > ${c.startup_exit_fraction}·Td`;
          w_pkts = this.applyRateCap(w_pkts, recv_time_us, true, td_ms);
        } else {
          w_pkts += packets; // slow start: +1 MSS per MSS delivered (RFC 5681 §3.1)
          this.theta = 0;
          this.reason = stale ? "startup (post-outage, stale frames)" : "startup: +1 MSS per MSS received";
          // A doubling window is 2× what is in flight by design; validate at twice the usual factor.
          if (w_pkts * c.mss_bytes > 4 * c.initial_window_bytes) w_pkts = this.validate(w_pkts, qd_ms, recv_time_us, 2);
        }
        break;
      }
      case "avoidance": {
        if (stale) {
          this.reason = "avoidance hold: stale post-outage frame";
          break;
        }
        // the multiplicative step reads the queue its window will hold (config.ts qd_prediction)
        const rule_qd_ms = this.predicts ? this.predictedQdMs(qd_ms, recv_time_us) : qd_ms;
        const theta = Math.tanh((td_ms - rule_qd_ms) / c.sensitivity_ms); // Eq. 2: θ = tanh((Td − Qd)/ρ)
        this.theta = theta;
        if (c.step === "additive") {
          w_pkts += (packets * theta * c.aggressiveness_mss) / w_pkts; // Eq. 3/6: w ← w + θ·k/w per packet
        } else {
          // + θ·a MSS per RTT on increase only: a window-independent increase against a proportional
          // decrease converges flows sharing a queue to equal windows (Chiu & Jain 1989, AIMD).
          const additive_pkts = theta > 0 ? (packets * theta * c.additive_increase_mss) / w_pkts : 0;
          w_pkts += packets * theta * c.multiplicative_gain + additive_pkts; // ×(1 + θ·g) per RTT (docs/DESIGN.md §3)
        }
        this.reason = `avoidance: Qd ${qd_ms.toFixed(1)} ms, Td ${td_ms.toFixed(1)} ms, θ ${theta.toFixed(3)}`;
        if (qd_ms > td_ms) w_pkts = this.applyRateCap(w_pkts, recv_time_us, false, td_ms);
        else w_pkts = this.validate(w_pkts, qd_ms, recv_time_us);
        break;
      }
      case "probe_drain":
        this.reason = "drain probe: refreshing the base one-way delay";
        // A frame that left the sender after the cut grant reached it (sent one up-path delay, plus up
        // to one grant interval, after the probe began: its zero-queue arrival is ≥ start + min RTT +
        // GRANT_INTERVAL_US) found the queue empty of ours: under a one-frame window the sender lets it
        // go only once all our earlier frames are read, so its Qd is what others' packets and the
        // link's waits hold. After PROBE_FRESH_FRAMES of them the probe has what it is for and ends;
        // waiting on for the timed end (1.5 × min RTT + 2 × the raw Qd at the start: seconds after an
        // outage) starves the flow at one frame per RTT. Two, not one: end to end, 5 sessions on 6
        // Mbit/s (`./nuwa load --sessions 5 --link-mbps 6 --duration 20`), the probe's minimum over
        // one fresh frame adopted more of the others' queue as base delay (up to 56 ms for 25 ms) and
        // Jain's index fell to 0.952 on average over 12 runs (0.852 lowest); over two, 0.980 in 6
        // runs, as before the change (0.979 in 8).
        if (zero_queue_arrival_us >= this.probe_start_us + this.minRttUs + GRANT_INTERVAL_US) {
          this.probe_fresh_frames++;
          this.probe_fresh_bytes += size_bytes;
          // under a one-frame window the next fresh frame leaves only once this one is granted: a round trip
          if (recv_time_us - this.probe_last_fresh_us < 0.5 * this.minRttUs) this.probe_crowded = true;
          this.probe_last_fresh_us = recv_time_us;
        }
        if (this.probe_fresh_frames >= PROBE_FRESH_FRAMES && recv_time_us - this.probe_start_us >= c.probe_min_duration_ms * 1000) {
          this.endProbe(recv_time_us);
          w_pkts = this.window_bytes / c.mss_bytes; // the window from before the probe, as endProbe restored it
        }
        break;
    }
    if (this.phase !== "probe_drain") this.window_bytes = this.clamp(w_pkts * c.mss_bytes);
    if (this.predicts) this.recordWindow(recv_time_us);
    this.timers(recv_time_us);
    return this.decision(qd_ms);
  }

  /**
   * The queuing delay the window in force will hold, ms: the frame's Qd plus what the window moved
   * since the window that sent it, (window now − window one RTT ago) ÷ the max-filtered delivery
   * rate C (a window-limited flow holds window − BDP in the queue), the window one RTT ago taken as
   * at least the pipe, C × min RTT. One RTT = min RTT + the frame's raw Qd. Not below 0. Without a rate
   * or a history it is the frame's Qd (config.ts `qd_prediction`).
   */
  private predictedQdMs(qd_ms: number, now_us: number): number {
    const rtt_us = this.minRttUs + this.raw_qd_ms * 1000;
    const ts = this.window_history_us;
    let lo = this.window_history_head;
    if (ts.length <= lo || ts[lo]! > now_us - rtt_us) return qd_ms;
    let hi = ts.length - 1;
    while (lo < hi) {
      // the last entry at or before now − RTT
      const mid = (lo + hi + 1) >> 1;
      if (ts[mid]! <= now_us - rtt_us) lo = mid;
      else hi = mid - 1;
    }
    const rate_bps = this.rate.maxRateBps(now_us, this.config.rate_filter_ms * 1000, RATE_SPAN_US);
    if (!(rate_bps > 0)) return qd_ms;
    // The window that sent the frame; when that frame found no queue of ours, at least the pipe (C × min
    // RTT): a window below it (after a drain probe, a silence) held no queue, and growing it back to the
    // pipe adds none. Only then: with a queue standing, a max-filtered C above our mean rate would read a
    // window below C × min RTT as a queue about to fall, and the flow whose delivery is burstiest would
    // grow on it (end to end, 5 flows on 6 Mbit/s: one took 2.6 Mbit/s, Jain 0.71).
    const w_then = this.window_history_bytes[lo]!;
    const then_bytes = qd_ms <= this.config.drain_threshold_ms ? Math.max(w_then, (rate_bps / 8) * (this.minRttUs / 1e6)) : w_then;
    return Math.max(0, qd_ms + ((this.window_bytes - then_bytes) * 8 * 1000) / rate_bps);
  }

  /**
   * Append the window in force to the history `predictedQdMs` reads, keeping 2 × the RTT (at least 1 s)
   * and at most 16384 entries: the entries before `window_history_head` are dropped, compacted in one
   * splice once they are half the arrays (amortised O(1) a frame).
   */
  private recordWindow(now_us: number): void {
    const ts = this.window_history_us;
    ts.push(now_us);
    this.window_history_bytes.push(this.window_bytes);
    const keep_us = Math.max(1_000_000, 2 * (this.minRttUs + this.raw_qd_ms * 1000));
    // keep one entry older than the horizon, so a look-up one RTT back always finds one
    let head = Math.max(this.window_history_head, ts.length - 16_384);
    while (head + 1 < ts.length && ts[head + 1]! < now_us - keep_us) head++;
    this.window_history_head = head;
    if (head > 1024 && head * 2 > ts.length) {
      ts.splice(0, head);
      this.window_history_bytes.splice(0, head);
      this.window_history_head = 0;
    }
  }

  /** The queuing delay that drives the rule (config.qd_source), ms. */
  private drivingQdMs(): number {
    const c = this.config;
    if (c.qd_source === "kalman") return this.kalman_qd_ms;
    if (c.qd_source === "backlog" || c.qd_source === "service") return Math.min(this.raw_qd_ms, this.backlog_delay_ms); // a wait our window did not build is no congestion
    return this.raw_qd_ms;
  }

  private applyRateCap(w_pkts: number, now_us: number, always: boolean, td_ms: number): number {
    const c = this.config;
    if (!c.rate_cap && !always) return w_pkts;
    // max over config.rate_cap_filter_ms, not rate_filter_ms: on a bursty link the short filter's few
    // 100 ms spans miss the bursts and the cap cut the window below one burst (docs/DESIGN.md §3)
    const rate_bps = this.rate.maxRateBps(now_us, c.rate_cap_filter_ms * 1000, RATE_SPAN_US);
    if (!(rate_bps > 0)) return w_pkts;
    // window ≤ delivery rate × (min RTT + Td)  (docs/DESIGN.md §3, "delivery-rate cap")
    const cap_pkts = (rate_bps / 8) * ((this.minRttUs + td_ms * 1000) / 1e6) / c.mss_bytes;
    if (cap_pkts < w_pkts) {
      this.reason += `; rate cap ${(rate_bps / 1e6).toFixed(2)} Mbit/s × (minRTT + Td)`;
      return cap_pkts;
    }
    return w_pkts;
  }

  /**
   * Window validation (RFC 7661 §4.3 in spirit): a window the sender does not use carries no
   * information about the path; growing it anyway (the sender held back by its own loss-based
   * ceiling, say) lets a later burst of the whole window into the queue. The window is held at
   * most `window_validation_factor` × the bytes the path carries: max-filtered delivery rate ×
   * the time a window takes to turn over, min RTT + the raw Qd (the whole queue ahead, others'
   * packets included), plus one min RTT on a path whose min RTT is below the grant interval
   * (`GRANT_INTERVAL_US`).
   */
  private validate(w_pkts: number, qd_ms: number, now_us: number, phase_factor = 1): number {
    const c = this.config;
    if (!Number.isFinite(c.window_validation_factor)) return w_pkts;
    const rate_bps = this.rate.maxRateBps(now_us, c.rate_filter_ms * 1000, RATE_SPAN_US);
    if (!(rate_bps > 0)) return w_pkts;
    // A window turns over in min RTT + Qd plus the wait for the grant that frees the next one. On a
    // path shorter than the grant interval the grant policy answers once per min RTT (half the window
    // after one min RTT), so the turnaround is about 2 × min RTT + Qd: counted as min RTT + Qd, a window
    // in full use reads as half used, and once the turnaround exceeds twice that the 2× bound admits no
    // growth at all (grants-loop.test.ts: 0.6 ms RTT at 20 Mbit/s held near one frame, 9 Mbit/s). On a
    // longer path the grant comes within GRANT_INTERVAL_US, inside the factor's allowance: not counted.
    const feedback_us = this.minRttUs < GRANT_INTERVAL_US ? this.minRttUs : 0;
    // The turnaround counts the queue the frames wait in, the raw Qd, not the (smaller) Qd that drives
    // the rule: with other flows' packets ahead, a window of one frame turns over in min RTT + their
    // queue while its service delay reads 0. Counted as min RTT + 0, a flow behind a standing queue
    // longer than its min RTT read its one frame as half used and could not grow (8 flows on 6 Mbit/s,
    // 5 ms each way, end to end: two held at 0.14 Mbit/s, Jain 0.817; docs/BENCHMARKS.md,
    // thirty-seventh session).
    const turn_qd_ms = Math.max(qd_ms, this.raw_qd_ms);
    const used_pkts = ((rate_bps / 8) * ((this.minRttUs + feedback_us + turn_qd_ms * 1000) / 1e6)) / c.mss_bytes;
    const limit_pkts = phase_factor * c.window_validation_factor * used_pkts;
    if (w_pkts > limit_pkts) {
      this.reason += `; window validation: ≤ ${phase_factor * c.window_validation_factor}× the ${used_pkts.toFixed(0)} packets in flight`;
      return limit_pkts;
    }
    return w_pkts;
  }

  private clamp(bytes: number): number {
    const c = this.config;
    const w = Math.min(c.max_window_bytes, Math.max(c.min_window_bytes, bytes));
    if (!(w >= c.min_window_bytes && w <= c.max_window_bytes)) throw new Error(`window invariant broken: ${w}`);
    return w;
  }

  /**
   * Advance timers without a frame: outages, drain probes. Call it periodically
   * (every few ms to every RTT). The window keeps evolving when nothing arrives.
   * @param now_us receiver clock, µs
   * @param expecting_data whether a response is in progress (an idle player is not an outage)
   */
  tick(now_us: number, expecting_data = true): Decision {
    const c = this.config;
    // Silence: nothing for twice the round trip the last frame saw, min RTT + its Qd, and at least
    // silence_ms (a timeout scaled to the RTT as measured, queue included: RFC 6298 §2, RFC 9002
    // §6.2.1). The request's RTT sample (smoothed_rtt_us) is taken when the queue is short, so alone it
    // let a standing queue read as an outage: a window of one frame (a drain probe, the floor) sees
    // one frame per min RTT + Qd, and another flow's burst adds its length to the gap; the restart in
    // start-up then added a window of stale-frame growth to the shared queue, and the other flows saw
    // that burst as silence in turn (12 sessions on 6 Mbit/s, 50 ms each way, end to end: p50 1.2 s,
    // loss 2.3 %; docs/BENCHMARKS.md, thirty-seventh session).
    const rtt_now_us = Math.max(Number.isNaN(this.smoothed_rtt_us) ? 0 : this.smoothed_rtt_us, this.minRttUs + this.raw_qd_ms * 1000);
    const silence_us = Math.max(c.silence_ms * 1000, 2 * rtt_now_us);
    if (expecting_data && !Number.isNaN(this.last_recv_us) && now_us - this.last_recv_us > silence_us) {
      if (Number.isNaN(this.silence_since_us)) {
        this.silence_since_us = now_us;
        this.last_decay_us = now_us;
        if (this.phase === "probe_drain") this.endProbe(now_us);
        this.phase = "silence";
        this.reason = `silence: nothing for ${((now_us - this.last_recv_us) / 1000).toFixed(0)} ms; restart with start-up when data returns`;
      }
      // Restart after idle (RFC 7661 §4.1 spirit): halve per silence period toward the restart window,
      // never above the window before the silence: what the delivery rate of the last 2 s carries in
      // min RTT + Td, at most the initial window (RFC 7661 §4.3: a window matched to the rate in use).
      // On a link that carries a few packets a second a ten-packet restart is seconds of queue (issue 14).
      if (now_us - this.last_decay_us >= silence_us) {
        const rate_bps = this.rate.rateBps(now_us, RESTART_RATE_WINDOW_US);
        const restart_bytes = Math.min(c.initial_window_bytes, (rate_bps / 8) * ((this.minRttUs + this.td_ms * 1000) / 1e6));
        while (now_us - this.last_decay_us >= silence_us) {
          this.last_decay_us += silence_us;
          this.window_bytes = this.clamp(Math.min(this.window_bytes, Math.max(restart_bytes, this.window_bytes / 2)));
        }
      }
    }
    this.timers(now_us);
    return this.decision(this.drivingQdMs());
  }

  private timers(now_us: number): void {
    if (this.phase === "probe_drain" && now_us >= this.probe_end_us) this.endProbe(now_us);
    if (this.phase === "avoidance" && this.sampler.probeDue(now_us)) {
      this.phase = "probe_drain";
      this.window_before_probe_bytes = this.window_bytes;
      this.window_bytes = this.config.min_window_bytes;
      // Long enough for the cut grant to reach the sender, the queue to drain and fresh frames to return.
      this.probe_start_us = now_us;
      this.probe_fresh_frames = 0;
      this.probe_fresh_bytes = 0;
      this.probe_last_fresh_us = Number.NaN;
      this.probe_crowded = false;
      this.probe_end_us = now_us + Math.max(this.config.probe_min_duration_ms * 1000, 1.5 * this.minRttUs + this.raw_qd_ms * 2000);
      this.sampler.startProbe();
      this.reason = "drain probe: queue not seen empty for the refresh interval";
    }
  }

  /**
   * End a drain probe: its minimum one-way delay becomes the base, unless no frame sent after the cut
   * could reach the sender arrived (the probe ended at its timer or at a silence first): every frame it
   * saw left before the cut and carries the queue the cut was to drain, and taking that as the base is a
   * ratchet (docs/DESIGN.md §3, "An expiring minimum ratchets"; end to end, a silence during a probe next
   * to a 900 ms queue set the base 434 ms high this way). One fresh frame is enough to keep the probe:
   * behind other flows' queue a one-frame window reads a frame per round trip, and probes ended at their
   * timer with one are the base refresh of flows sharing a queue (the simulator's 5 flows on 6 Mbit/s
   * fell from Jain 0.998 to 0.979 when they were voided too). With `void_unhonoured_probe` (config.ts),
   * also a probe whose cut the sender did not honour: fresh frames closer than half a min RTT apart (an
   * honest sender lets the next go only once the last is granted, a round trip later), or more than
   * 2 × (2 + the fresh span ÷ min RTT) one-frame windows of them.
   */
  private endProbe(now_us: number): void {
    const c = this.config;
    const fresh_span_us = Math.max(0, now_us - (this.probe_start_us + this.minRttUs + GRANT_INTERVAL_US));
    const honoured_bytes = 2 * c.min_window_bytes * (2 + fresh_span_us / Math.max(500, this.minRttUs));
    const honoured = !c.void_unhonoured_probe || (this.probe_fresh_bytes <= honoured_bytes && !this.probe_crowded);
    const fresh = this.probe_fresh_frames > 0;
    const change_us = this.sampler.endProbe(now_us, honoured && fresh);
    this.probe_ended_us = now_us;
    this.phase = "avoidance";
    this.window_bytes = this.clamp(this.window_before_probe_bytes);
    if (!fresh) this.reason = "drain probe void: no frame sent after the cut arrived (the queue before it was all it saw); base kept";
    else if (!honoured) this.reason = `drain probe void: the sender did not honour the cut (${this.probe_crowded ? "two fresh frames within half a min RTT" : `${(this.probe_fresh_bytes / 1000).toFixed(0)} kB fresh, at most ${(honoured_bytes / 1000).toFixed(0)} kB allowed`}); base kept`;
    else this.reason = `drain probe done: base one-way delay moved ${(change_us / 1000).toFixed(2)} ms`;
  }

  private decision(qd_ms: number): Decision {
    return {
      window_bytes: this.window_bytes,
      phase: this.phase,
      queuing_delay_ms: qd_ms,
      raw_queuing_delay_ms: this.raw_qd_ms,
      kalman_queuing_delay_ms: this.kalman_qd_ms,
      backlog_delay_ms: this.backlog_delay_ms,
      theta: this.theta,
      target_delay_ms: this.td_ms,
      reason: this.reason,
    };
  }

  /**
   * The bandwidth estimate at receiver time `now_us`.
   * First choice: the capacity measured over the link's recent busy periods
   * (frames that queued behind their predecessors), raised to the last 500 ms
   * delivery rate if that is higher (a delivery rate is a lower bound on the
   * capacity). Without busy periods on record: backlogged link, the delivery
   * rate; otherwise the window over (min RTT + Qd) bounded by the delivery rates.
   */
  estimate(now_us: number): BandwidthEstimate {
    const c = this.config;
    const delivery_rate_bps = this.rate.rateBps(now_us, 1_000_000);
    const max_delivery_rate_bps = this.rate.maxRateBps(now_us, c.rate_filter_ms * 1000, RATE_SPAN_US);
    const rtt_s = (this.minRttUs + this.raw_qd_ms * 1000) / 1e6;
    const window_rate_bps = (this.window_bytes * 8) / rtt_s;
    const backlogged = now_us - this.last_backlogged_us <= 500_000;
    const kalman_capacity_bps = this.kalman.capacityBps;
    const busy = this.busy.estimate(now_us);
    let bps = 0;
    let basis: BandwidthEstimate["basis"] = "none";
    if (this.frames > 0) {
      if (Number.isFinite(busy.bps)) {
        bps = Math.max(busy.bps, this.rate.rateBps(now_us, 500_000));
        basis = bps === busy.bps ? "busy_period" : "delivery_rate";
      } else if (backlogged) {
        bps = delivery_rate_bps;
        basis = "delivery_rate";
      } else if (window_rate_bps > delivery_rate_bps) {
        bps = Math.min(window_rate_bps, Math.max(delivery_rate_bps, max_delivery_rate_bps));
        basis = bps === window_rate_bps ? "window_per_rtt" : "delivery_rate";
      } else {
        bps = delivery_rate_bps;
        basis = "delivery_rate";
      }
    }
    // at most a window per round trip: reads that a busy page batched into one span do not count twice
    const peak_rtt_rate_bps = Math.min(this.rate.maxRateBps(now_us, PEAK_RATE_WINDOW_US, this.minRttUs), (this.window_bytes * 8) / (this.minRttUs / 1e6));
    return { bps, basis, busy_rate_bps: busy.bps, delivery_rate_bps, max_delivery_rate_bps, window_rate_bps, kalman_capacity_bps, backlogged, peak_rtt_rate_bps };
  }

  /** Window to grant, bytes. */
  get windowBytes(): number {
    return this.window_bytes;
  }
  /** All frame bytes received so far, bytes (the grant's cumulative field). */
  get cumReceivedBytes(): number {
    return this.cum_received_bytes;
  }
  /** Current phase. */
  get currentPhase(): Phase {
    return this.phase;
  }
  /** Minimum RTT seen, µs (NaN before a sample). */
  get minRttSampleUs(): number {
    return Number.isFinite(this.min_rtt_us) ? this.min_rtt_us : Number.NaN;
  }
  /** Queuing delay of the last frame received (Eq. 1, unfiltered), ms; 0 before any frame. */
  get rawQueuingDelayMs(): number {
    return this.raw_qd_ms;
  }
  /** Td in force, ms (the configured Td plus the link's own waits when adaptive). */
  get targetDelayInForceMs(): number {
    return this.td_ms;
  }
  /** Base one-way delay (includes the clock offset), µs. */
  get baseOwdUs(): number {
    return this.sampler.baseOwdUs;
  }
}
