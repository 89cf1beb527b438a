/**
 * Typed, validated configuration of the Nuwa controller.
 *
 * Every default carries its unit. Values out of range throw a RangeError naming
 * the field, so a bad config fails at construction, not in the middle of a run.
 */

/**
 * Which queuing-delay signal drives the window rule: "raw" Eq. 1 Qd, "kalman" (journal Eq. 2–4),
 * "backlog": min(raw Qd, our bytes ahead of the frame ÷ our delivery rate), or "service" (the
 * default): the time from our first delivery after the frame reached the queue to its own
 * (backlog.ts `lastServiceDelayUs`; docs/DESIGN.md §3 "Service delay").
 */
export type QdSource = "raw" | "kalman" | "backlog" | "service";
/** How the congestion-avoidance step scales: the paper's additive rule or a multiplicative one. */
export type StepMode = "additive" | "multiplicative";

export interface NuwaConfig {
  /**
   * Target queuing delay Td, ms (nuwa-icpads §IV-B, "T_d"). With `adaptive_target_delay` this is the
   * standing queue allowed beyond the link's own waits: the Td in force is
   * min(target_delay_max_ms, target_delay_ms + the `link_wait_quantile` of the waits of frames that
   * found the queue empty), see waits.ts and docs/DESIGN.md §3 "Adaptive Td".
   */
  target_delay_ms: number;
  /** Whether Td adapts to the link's own waits (default false; false pins it at `target_delay_ms`: live or interactive callers). */
  adaptive_target_delay: boolean;
  /**
   * Upper bound of the Td in force, ms, adaptive or raised by `target_delay_min_packets` (an
   * application's delay budget caps it here; equal to `target_delay_ms`, it pins Td).
   */
  target_delay_max_ms: number;
  /**
   * Td in force is at least this many packets (`mss_bytes` each) of the link's time at the flow's
   * own delivery rate, mean over the last second: max(Td, min(n · MSS · 8 ÷ rate,
   * `target_delay_min_packets_max_factor` × Td)), at most `target_delay_max_ms`; 0 (the default)
   * turns it off. A window-clocked flow keeps a link busy across its delivery jitter only with
   * packets standing in the queue, and a fixed Td in ms holds fewer of them the slower the link
   * (25 ms at 2 Mbit/s is 5 packets, at 0.5 Mbit/s 1.3): on 3G the link's bursts find the queue
   * empty. Counted in packets, the floor costs no delay above 2.3 Mbit/s at n = 6 (the measured
   * setting). Until a second of data has been read, Td. Source: docs/DESIGN.md §3 "Td in packets".
   */
  target_delay_min_packets: number;
  /**
   * The packet floor raises Td at most to this multiple of `target_delay_ms` (≥ 1). Below n packets
   * per that time (n = 6, factor 2: under 1.15 Mbit/s) the link is slow enough that a longer queue
   * mostly waits through its dark spells; the one-frame window floor governs there (issue 14).
   */
  target_delay_min_packets_max_factor: number;
  /**
   * Td in force is at most this many packets (`mss_bytes` each) of the link's time at the flow's own
   * delivery rate over the slowest 100 ms of the last second: min(Td, max(n · MSS · 8 ÷ that rate,
   * `target_delay_max_packets_floor_ms`, the `target_delay_max_packets_wait_quantile` of the link's
   * own waits)); 0 turns it off. Td ms of standing queue is Td × rate of packets: 48 at 23 Mbit/s for
   * Td 25, and when a fast cellular link fades (23 → 1–7 Mbit/s for 300–500 ms on NYC LTE taxi) the
   * queue already standing takes that many packets' time at the faded rate to leave, whatever the
   * window does next: that set the p95 there. On a smooth fast link n packets cover the link's jitter;
   * a link whose rate swings within a second (its slowest 100 ms is slow) or whose own delivery gaps
   * are long (bursts, waits.ts) keeps the Td it needs. At n = 30 it acts where the slowest 100 ms ran
   * above 11.5 Mbit/s. Until a second of data has been read, Td. Source: docs/DESIGN.md §3 "A cap on Td
   * in packets" (issue 14).
   */
  target_delay_max_packets: number;
  /** The packet cap lowers Td at most to this, ms (≥ 0; a Td below it is not raised). */
  target_delay_max_packets_floor_ms: number;
  /**
   * Quantile of the link's own waits (waits.ts) below which the packet cap does not lower Td, in [0, 1]:
   * on a link that delivers in bursts a frame finding our queue empty waits up to a burst gap, and a Td
   * below those waits reads them as congestion (Arun et al., SIGCOMM 2022).
   */
  target_delay_max_packets_wait_quantile: number;
  /** Quantile of the link's own waits added to Td, in [0, 1]. */
  link_wait_quantile: number;
  /** Sensitivity ρ, ms: the tanh input is (Td − Qd)/ρ (nuwa-icpads Eq. 2). */
  sensitivity_ms: number;
  /**
   * Whether θ reads the queuing delay the window in force will hold rather than the one the frame saw
   * (default true since the forty-first session; multiplicative step only): Qd + (window now − the window one RTT ago) ÷ the
   * delivery rate (the window one RTT ago at least the pipe when that frame found no queue). A frame's
   * Qd is one RTT old and the window has moved since; a window-limited flow
   * holds window − BDP in the queue, so the queue will follow. The multiplicative step moves the queue
   * by θ·g·RTT per RTT, θ ≈ (Td − Qd)/ρ near Td: its loop gain per RTT is g·(min RTT + Td)/ρ, above 1
   * from about 35 ms each way (g 0.25, ρ 15 ms), and on stale evidence it overshoots into a limit cycle
   * (constant 10 Mbit/s, 50 ms each way: p95 45 ms at Td 25). Compensating the loop's dead time this way
   * is the Smith predictor (docs/DESIGN.md §3 "Loop gain"). Read only with the service delay (the
   * default `qd_source`): the move is divided by our own delivery rate, which is the rate our bytes
   * ahead are served at; on the raw or Kalman Qd (a queue shared with others, served at the link's
   * rate) it overstates a small flow's effect (5 flows on 6 Mbit/s, raw: Jain 0.99 → 0.61), and the
   * backlog signal lost fairness too (0.987 → 0.937). The additive step (the RL tuner's, RL_CC) never
   * reads it.
   */
  qd_prediction: boolean;
  /**
   * Whether a drain probe whose cut the sender did not honour keeps the base one-way delay (default true
   * since the forty-first session). Under a one-frame window an honest sender lets the next frame go a
   * round trip after the last; fresh frames closer than half a min RTT apart, or more than 2 × (2 + the
   * fresh span ÷ min RTT) one-frame windows of them, mean the queue the probe measured was not allowed to
   * drain (a Nuwa connection the server switched to sender-driven control, a server in its grant-timeout
   * fallback). On, the base stays right through a sender-driven stint next to a Cubic download: after the
   * download left, CI's mix form held p95 26.5–27.1 ms (five runs) against 44–48 with the base the
   * stint's probe raised by 440–480 ms. That raised base had also let a probe back to receiver-driven
   * control keep its window next to the download; with the base right the probe shrinks the window, and
   * the server's switcher now gives Cubic its stint's window back when the probe fails
   * (server/nuwa_server/cc/switching.py `restore_after_probe`): issue 18's pair gave Nuwa 0.43, 0.47,
   * 0.39 with both settings on (0.425, 0.434 with neither; 0.22–0.39 before the restore).
   * docs/BENCHMARKS.md, fortieth and forty-first sessions.
   */
  void_unhonoured_probe: boolean;
  /** Aggressiveness k, MSS per RTT (nuwa-icpads Eq. 3; the journal's Eq. 11 clamps it to [1, 9]). */
  aggressiveness_mss: number;
  /** Multiplicative gain g: window × (1 + θ·g) per RTT when step = "multiplicative". Dimensionless. */
  multiplicative_gain: number;
  /**
   * Additive part of the multiplicative step's increase, MSS per RTT: when Qd < Td the window
   * grows by θ·(g·w + a) per RTT, when Qd > Td it shrinks by θ·g·w. The window-independent
   * increase against a proportional decrease is what converges flows sharing a queue to equal
   * shares (Chiu & Jain 1989); with a = 0 any split of the link is an equilibrium.
   */
  additive_increase_mss: number;
  /** Step mode of congestion avoidance. */
  step: StepMode;
  /**
   * Which queuing delay drives the window: raw Eq. 1 sample, the Kalman estimate (journal Eq. 2–4),
   * the backlog delay (our bytes ahead ÷ our rate; backlog.ts), or the service delay (the part of Qd
   * spent after the link first served us: link gaps and waits excluded, a burst's bytes ahead cost
   * what the burst took; backlog.ts).
   */
  qd_source: QdSource;
  /** Window of the mean delivery rate that turns the backlog into a delay, ms (qd_source "backlog"). */
  backlog_rate_window_ms: number;
  /** Maximum segment size used to turn bytes into packet-equivalents, bytes. */
  mss_bytes: number;
  /** Initial window, bytes (RFC 9002 §7.2: 10 × max datagram size). */
  initial_window_bytes: number;
  /** Lower window bound, bytes. */
  min_window_bytes: number;
  /** Upper window bound, bytes. */
  max_window_bytes: number;
  /** Start-up ends when Qd exceeds this fraction of Td (the sender-side slow start the paper keeps). */
  startup_exit_fraction: number;
  /** Delivery-rate cap: when Qd > Td, window ≤ max-filtered delivery rate (over `rate_cap_filter_ms`) × (min RTT + Td). */
  rate_cap: boolean;
  /** Window validation: when Qd ≤ Td the window grows to at most this × (max delivery rate × (min RTT + Qd), plus one min RTT on a path shorter than the grant interval); Infinity disables (RFC 7661). */
  window_validation_factor: number;
  /** Window of the delivery-rate max filter, ms (docs/DESIGN.md §3: 200–500 ms): window validation, the Qd prediction, the estimate's max rate. */
  rate_filter_ms: number;
  /**
   * Window of the max filter under the delivery-rate cap, ms (at most the 2 s the estimator keeps).
   * Longer than `rate_filter_ms`: on a link that delivers in bursts with gaps of 100–270 ms, the
   * 100 ms spans of a 300 ms window miss the link's bursts and the cap cut the window below what
   * one burst carries (docs/DESIGN.md §3 "Delivery-rate cap"). BBR's bottleneck-bandwidth max
   * filter spans 10 round trips (Linux tcp_bbr.c `bbr_bw_rtts`; Cardwell et al., ACM Queue 2016);
   * 1000 ms is 10 round trips of 100 ms.
   */
  rate_cap_filter_ms: number;
  /** Queuing delay at or below which the queue counts as drained, ms. */
  drain_threshold_ms: number;
  /** If the queue has not been seen drained for this long, the controller probes (drains) to refresh the base one-way delay, ms. */
  base_refresh_interval_ms: number;
  /** Least duration of a drain probe, ms (BBR ProbeRTT uses 200 ms). */
  probe_min_duration_ms: number;
  /** No arrival for max(this, 2 × max(smoothed RTT, min RTT + the last frame's Qd)) while data is expected counts as silence (outage), ms (RFC 6298 §2: a timeout scaled to the RTT as measured). */
  silence_ms: number;
  /** RTT assumed until a sample arrives, ms. */
  initial_rtt_ms: number;
}

/** Defaults. Td, k and ρ are chosen by the in-process trace simulation (see README and docs/BENCHMARKS.md). */
export const DEFAULT_CONFIG: Readonly<NuwaConfig> = Object.freeze({
  // Td 25 ms, ρ 15 ms: the simulator sweep over the repo's 8 traces (docs/BENCHMARKS.md) gave
  // utilization ≥ 0.90 on all of them at p95 ≤ 1.3× the causal oracle's on bursty LTE; the
  // papers' Td 20 / ρ 50 left the Saturator LTE traces at 0.78–0.83.
  target_delay_ms: 25, // ms
  // Off by default: it fills bursty links further (simulated on the one engine: burst variants 0.66 →
  // 0.85 mean utilization over the backlog signal alone), but where several Nuwa flows share one
  // queue it breaks fairness (20 flows on 24 Mbit/s: Jain 0.986 → 0.557; on the raw Qd it inflated
  // the queue instead, 5 flows p95 67 → 106 ms); docs/DESIGN.md §3 "Adaptive Td" and "Backlog
  // delay". A page that knows it is alone on its link turns it on. (Thirty-seventh session: the
  // fairness break was the window validation's fixed point, fixed since: backlog + adaptive 20 flows
  // Jain 0.983, p95 42 ms; on the default service delay it still deepens the queue, 20 flows p95 135
  // → 317 ms, Jain 0.955.)
  adaptive_target_delay: false,
  target_delay_max_ms: 200, // ms
  // Off by default (forty-fourth session; docs/DESIGN.md §3 "Td in packets"). Measured at 6 packets, at most
  // 2 × Td: end to end on the 18 dev traces UMTS utilization 0.928 → 0.947 (0.96× Cubic), NYC LTE walking-3201711
  // 0.793 → 0.809, no trace lower by more than a run's spread; its prices: UMTS's p95 over all packets 329–380 →
  // 447–516 ms (issue 14's near-dark bound is 500), HSDPA p95 +20–28 ms, and where Nuwa flows share a queue
  // each holds n packets (simulated, 5 flows on 6 Mbit/s p95 79 → 131 ms). A page alone on its link turns it on.
  target_delay_min_packets: 0, // packets
  target_delay_min_packets_max_factor: 2, // × target_delay_ms
  // On (fifty-sixth session; docs/DESIGN.md §3 "A cap on Td in packets"). Simulated on the 18 dev traces
  // (60 s, deep queue): mean utilization / p95 0.955 / 90 → 0.956 / 88 ms (from 20 s and 40 s into each
  // trace: 0.953 / 102 → 0.954 / 100, 0.955 / 81 → 0.955 / 79); NYC LTE taxi 0.978 / 54 → 0.984 / 48 (issue
  // 14's bound 50), 5G low-band 0.987 / 30 → 0.998 / 14, Lumos LTE 0.988 / 37 → 0.983 / 26; its price,
  // T-Mobile LTE short 0.948 → 0.945 (from 40 s in 0.939 → 0.932). Burst variants unchanged (0.920); flows
  // sharing a fast link fairer (3 on 60 Mbit/s Jain 0.929 → 0.999) at about 1 point of utilization.
  target_delay_max_packets: 30, // packets
  target_delay_max_packets_floor_ms: 10, // ms
  target_delay_max_packets_wait_quantile: 0.9,
  link_wait_quantile: 0.5,
  sensitivity_ms: 15, // ms
  // On (forty-first session; measured in the fortieth and left opt-in then): constant 10 Mbit/s at 50/100
  // ms each way p95 46/56 → 27/28 ms (simulated; end to end at 50 ms 45 → 30 ms, utilization 0.989 →
  // 0.985); 18 dev traces 0.944 → 0.947 at p95 89 → 87 ms, burst variants 0.864 → 0.873 at 152 → 151
  // (simulated, with void_unhonoured_probe); 5 sessions on 6 Mbit/s end to end Jain 0.991, 0.970 (0.977,
  // 0.967 off). Its price: 100 ms each way, utilization 0.967 → 0.928 (simulated). docs/BENCHMARKS.md.
  qd_prediction: true,
  void_unhonoured_probe: true,
  aggressiveness_mss: 9, // MSS per RTT
  multiplicative_gain: 0.25, // per RTT
  // a = 4: mean Jain 0.80 → 0.94 over shared-bottleneck simulations (3–20 flows, staggered
  // starts), for +2–9 ms single-flow p95 on 3G (sim/shared.ts); with the one simulator engine
  // (issue 16: paced senders) 0.46 → 0.96 (docs/BENCHMARKS.md, "SIMULATED: the one simulator engine").
  additive_increase_mss: 4, // MSS per RTT
  step: "multiplicative",
  // "service" (thirteenth session): bytes of ours ahead of a frame cost the time the link took to
  // serve them, not their size ÷ our mean rate (which, on a link that delivers in bursts, counts the
  // gaps again). Simulated on the one engine against "backlog": burst variants of four LTE traces
  // 0.664 → 0.876 mean utilization (p95 105 → 149 ms, the bursts' own gaps); 18 dev traces
  // unchanged (14/18 at ≥ 0.95× Cubic, mean 0.944 → 0.945, p95 91 → 90 ms); 5 flows sharing 6
  // Mbit/s Jain 0.987 → 0.997 at p95 58 → 78 ms. End to end on T-Mobile LTE's burst variant:
  // 0.439 → 0.890 (Cubic 0.863). "backlog" (before: burst 0.23 → 0.66 over "raw") stays selectable.
  qd_source: "service",
  backlog_rate_window_ms: 1000, // ms
  mss_bytes: 1200, // bytes (QUIC max datagram payload we frame against)
  initial_window_bytes: 12_000, // bytes
  // One frame: the server lets one frame go whenever nothing is outstanding (PROTOCOL.md "Grants"),
  // so below one packet per RTT the queue holds at most one of ours, not seconds of them (issue 14).
  min_window_bytes: 1200, // bytes
  max_window_bytes: 64 * 1024 * 1024, // bytes
  startup_exit_fraction: 0.5, // of Td
  rate_cap: true,
  rate_filter_ms: 300, // ms
  rate_cap_filter_ms: 1000, // ms
  window_validation_factor: 2, // × packets in flight
  drain_threshold_ms: 2, // ms
  base_refresh_interval_ms: 10_000, // ms
  probe_min_duration_ms: 200, // ms
  silence_ms: 200, // ms
  initial_rtt_ms: 100, // ms
});

function check(ok: boolean, field: keyof NuwaConfig, why: string, value: unknown): void {
  if (!ok) throw new RangeError(`NuwaConfig.${field} ${why} (got ${String(value)})`);
}

/**
 * Merge partial settings over the defaults and validate them.
 * @throws RangeError naming the first field out of range.
 */
export function resolveConfig(partial: Partial<NuwaConfig> = {}): NuwaConfig {
  const c: NuwaConfig = { ...DEFAULT_CONFIG, ...partial };
  const finite = (f: keyof NuwaConfig) => Number.isFinite(c[f] as number);
  const positive = (f: keyof NuwaConfig) => check(finite(f) && (c[f] as number) > 0, f, "must be a finite number > 0", c[f]);
  check(finite("target_delay_ms") && c.target_delay_ms >= 0 && c.target_delay_ms <= 10_000, "target_delay_ms", "must be in [0, 10000] ms", c.target_delay_ms);
  check(typeof c.adaptive_target_delay === "boolean", "adaptive_target_delay", "must be a boolean", c.adaptive_target_delay);
  check(finite("target_delay_max_ms") && c.target_delay_max_ms >= c.target_delay_ms && c.target_delay_max_ms <= 10_000, "target_delay_max_ms", "must be in [target_delay_ms, 10000] ms", c.target_delay_max_ms);
  check(finite("target_delay_min_packets") && c.target_delay_min_packets >= 0 && c.target_delay_min_packets <= 1000, "target_delay_min_packets", "must be in [0, 1000] packets", c.target_delay_min_packets);
  check(finite("target_delay_min_packets_max_factor") && c.target_delay_min_packets_max_factor >= 1 && c.target_delay_min_packets_max_factor <= 100, "target_delay_min_packets_max_factor", "must be in [1, 100] (× target_delay_ms)", c.target_delay_min_packets_max_factor);
  check(finite("target_delay_max_packets") && c.target_delay_max_packets >= 0 && c.target_delay_max_packets <= 100_000, "target_delay_max_packets", "must be in [0, 100000] packets", c.target_delay_max_packets);
  check(finite("target_delay_max_packets_floor_ms") && c.target_delay_max_packets_floor_ms >= 0 && c.target_delay_max_packets_floor_ms <= 10_000, "target_delay_max_packets_floor_ms", "must be in [0, 10000] ms", c.target_delay_max_packets_floor_ms);
  check(finite("target_delay_max_packets_wait_quantile") && c.target_delay_max_packets_wait_quantile >= 0 && c.target_delay_max_packets_wait_quantile <= 1, "target_delay_max_packets_wait_quantile", "must be in [0, 1]", c.target_delay_max_packets_wait_quantile);
  check(finite("link_wait_quantile") && c.link_wait_quantile >= 0 && c.link_wait_quantile <= 1, "link_wait_quantile", "must be in [0, 1]", c.link_wait_quantile);
  positive("sensitivity_ms");
  check(typeof c.qd_prediction === "boolean", "qd_prediction", "must be a boolean", c.qd_prediction);
  check(typeof c.void_unhonoured_probe === "boolean", "void_unhonoured_probe", "must be a boolean", c.void_unhonoured_probe);
  check(finite("aggressiveness_mss") && c.aggressiveness_mss >= 0.01 && c.aggressiveness_mss <= 1000, "aggressiveness_mss", "must be in [0.01, 1000] MSS/RTT", c.aggressiveness_mss);
  check(finite("multiplicative_gain") && c.multiplicative_gain > 0 && c.multiplicative_gain <= 1, "multiplicative_gain", "must be in (0, 1]", c.multiplicative_gain);
  check(finite("additive_increase_mss") && c.additive_increase_mss >= 0 && c.additive_increase_mss <= 1000, "additive_increase_mss", "must be in [0, 1000] MSS/RTT", c.additive_increase_mss);
  check(c.step === "additive" || c.step === "multiplicative", "step", "must be 'additive' or 'multiplicative'", c.step);
  check(c.qd_source === "raw" || c.qd_source === "kalman" || c.qd_source === "backlog" || c.qd_source === "service", "qd_source", "must be 'raw', 'kalman', 'backlog' or 'service'", c.qd_source);
  check(finite("backlog_rate_window_ms") && c.backlog_rate_window_ms >= 10 && c.backlog_rate_window_ms <= 2000, "backlog_rate_window_ms", "must be in [10, 2000] ms (the delivery-rate history)", c.backlog_rate_window_ms);
  check(Number.isInteger(c.mss_bytes) && c.mss_bytes >= 500 && c.mss_bytes <= 65_536, "mss_bytes", "must be an integer in [500, 65536]", c.mss_bytes);
  check(finite("min_window_bytes") && c.min_window_bytes >= c.mss_bytes, "min_window_bytes", "must be ≥ mss_bytes", c.min_window_bytes);
  check(finite("max_window_bytes") && c.max_window_bytes >= c.min_window_bytes && c.max_window_bytes <= 2 ** 40, "max_window_bytes", "must be in [min_window_bytes, 2^40]", c.max_window_bytes);
  check(finite("initial_window_bytes") && c.initial_window_bytes >= c.min_window_bytes && c.initial_window_bytes <= c.max_window_bytes, "initial_window_bytes", "must be within [min_window_bytes, max_window_bytes]", c.initial_window_bytes);
  check(finite("startup_exit_fraction") && c.startup_exit_fraction > 0 && c.startup_exit_fraction <= 1, "startup_exit_fraction", "must be in (0, 1]", c.startup_exit_fraction);
  check(c.window_validation_factor >= 1, "window_validation_factor", "must be ≥ 1 (Infinity disables)", c.window_validation_factor);
  check(typeof c.rate_cap === "boolean", "rate_cap", "must be a boolean", c.rate_cap);
  positive("rate_filter_ms");
  check(finite("rate_cap_filter_ms") && c.rate_cap_filter_ms >= 10 && c.rate_cap_filter_ms <= 2000, "rate_cap_filter_ms", "must be in [10, 2000] ms (the delivery-rate history)", c.rate_cap_filter_ms);
  check(finite("drain_threshold_ms") && c.drain_threshold_ms >= 0, "drain_threshold_ms", "must be ≥ 0", c.drain_threshold_ms);
  positive("base_refresh_interval_ms");
  positive("probe_min_duration_ms");
  positive("silence_ms");
  positive("initial_rtt_ms");
  return c;
}
