/**
 * Nuwa MPC (issue 15): RobustMPC (Yin et al., "A Control-Theoretic Approach for Dynamic
 * Adaptive Video Streaming over HTTP", SIGCOMM 2015, §4–5) on what only Nuwa has:
 * - the controller's capacity estimate (what the flow gets under the window we grant: the
 *   window holds the queue at Td, so the flow's delivery rate is the capacity it measures);
 * - the realized throughput of the last video segments (bytes ÷ (download time − one RTT),
 *   so small segments are not read as a slow link), which is also what the estimate's
 *   error is measured against: RobustMPC's lower bound Ĉ / (1 + max recent error) (§5);
 * - real segment sizes: the rung's nominal bitrate × the mean ratio of real to nominal
 *   bytes seen so far.
 * The decision maximizes Pensieve's linear QoE (Mao et al., SIGCOMM 2017, §5.1: bitrate
 * Mbit/s − 4.3 × rebuffer s − |Δ bitrate| Mbit/s) over the next `horizon` segments,
 * searched exactly (depth first, pruned with an upper bound) among plans that only switch up
 * to a sustainable rung (mpcAllowed); `bruteForcePlan` is the
 * unpruned enumeration the tests check it against.
 */

/** Pensieve's QoE_lin rebuffer penalty, per second (play_metrics.py REBUFFER_PENALTY). */
export const MPC_REBUFFER_PENALTY = 4.3;

/** One MPC problem: the state at a decision and the model of the next segments. */
export interface MpcInput {
  /** Rung bitrates, kbit/s, ascending (non-empty). */
  ladder_kbps: readonly number[];
  /** Index of the rung of the last segment, or null before the first. */
  last_rung: number | null;
  /** Buffer level, s (≥ 0). */
  buffer_s: number;
  /** Predicted throughput for the next downloads, kbit/s (> 0): already the robust lower bound. */
  throughput_kbps: number;
  /** Predicted bytes of each rung's next segment (same length as the ladder). */
  segment_bytes: readonly number[];
  /** Segment duration, s (> 0). */
  segment_s: number;
  /** Per-request overhead (one RTT), s. */
  rtt_s: number;
  /** Segments looked ahead (1–6). */
  horizon: number;
  /** The buffer the player stops filling at, s (downloads then wait; no QoE cost). */
  buffer_cap_s: number;
  /** Playback has not started: the first download's time counts as a stall (RobustMPC's start-up term, §4). */
  startup: boolean;
  /** Throughput the up-switch rule (mpcAllowed) judges a rung sustainable at, kbit/s (default `throughput_kbps`). */
  sustain_kbps?: number;
  /** Buffer the plan should end the horizon with, s (0 or absent: none, RobustMPC as published; decideMpc passes MPC_DEFAULTS.reserve_s); see `reserve_weight`. */
  reserve_s?: number;
  /** QoE charged per second the plan ends below `reserve_s` (in units of the rebuffer penalty; default 1). */
  reserve_weight?: number;
  /** Force the plan's first step to this rung (default: searched); `mpcHysteresis`'s hold arm. */
  first_rung?: number;
}

/** The first rung of the best plan, the plan and its QoE (sum over the horizon). */
export interface MpcPlan {
  rung: number;
  plan: number[];
  qoe: number;
  /** Set by mpcHysteresis when it kept the last rung against the best plan: which rule did. */
  held?: "down_margin" | "up_hold";
}

function validate(i: MpcInput): void {
  if (i.ladder_kbps.length === 0) throw new RangeError("mpc: empty ladder");
  if (i.segment_bytes.length !== i.ladder_kbps.length) throw new RangeError("mpc: segment_bytes must match the ladder");
  if (!(i.throughput_kbps > 0)) throw new RangeError(`mpc: throughput must be > 0 kbit/s, got ${i.throughput_kbps}`);
  if (!(i.segment_s > 0)) throw new RangeError(`mpc: segment_s must be > 0, got ${i.segment_s}`);
  if (!(i.horizon >= 1 && i.horizon <= 6)) throw new RangeError(`mpc: horizon must be 1..6, got ${i.horizon}`);
  if (i.reserve_s !== undefined && !(i.reserve_s >= 0 && Number.isFinite(i.reserve_s))) throw new RangeError(`mpc: reserve_s must be a finite number >= 0, got ${i.reserve_s}`);
  if (i.reserve_weight !== undefined && !(i.reserve_weight >= 0 && Number.isFinite(i.reserve_weight))) throw new RangeError(`mpc: reserve_weight must be a finite number >= 0, got ${i.reserve_weight}`);
}

/** One segment step of the model: (QoE of the step, buffer after). Exported for tests. */
export function mpcStep(i: MpcInput, prev: number | null, r: number, buffer_s: number, first: boolean): { qoe: number; buffer_s: number } {
  const dl_s = i.rtt_s + (i.segment_bytes[r]! * 8) / (i.throughput_kbps * 1000);
  const rebuffer_s = first && i.startup ? dl_s : Math.max(0, dl_s - buffer_s);
  let b = first && i.startup ? i.segment_s : Math.max(0, buffer_s - dl_s) + i.segment_s;
  if (b > i.buffer_cap_s) b = i.buffer_cap_s; // the player waits before the next request
  return { qoe: chunkQoe(i.ladder_kbps, prev, r, rebuffer_s), buffer_s: b };
}

/** Pensieve's QoE_lin of one chunk at rung `r` after rung `prev` (null: no switch charged) with `rebuffer_s` of stall. */
function chunkQoe(ladder_kbps: readonly number[], prev: number | null, r: number, rebuffer_s: number): number {
  const q = ladder_kbps[r]! / 1000 - MPC_REBUFFER_PENALTY * rebuffer_s;
  return prev === null ? q : q - Math.abs(ladder_kbps[r]! - ladder_kbps[prev]!) / 1000;
}

/** The terminal charge of a plan that ends the horizon with `buffer_s` (MpcInput.reserve_s). */
function reserveCost(i: MpcInput, buffer_s: number): number {
  const r = i.reserve_s ?? 0;
  return r > buffer_s ? (i.reserve_weight ?? 1) * MPC_REBUFFER_PENALTY * (r - buffer_s) : 0;
}

/**
 * Whether a plan may go from `prev` to `r`: down or staying always; up only to a rung whose
 * segment downloads within its own duration at the planned throughput (a sustainable rung).
 * Our addition to RobustMPC: without it a finite horizon spends the buffer on a rung the link
 * cannot carry and oscillates between the two rungs around a steady throughput.
 */
export function mpcAllowed(i: MpcInput, prev: number | null, r: number): boolean {
  if (prev === null || r <= prev) return true;
  return i.rtt_s + (i.segment_bytes[r]! * 8) / ((i.sustain_kbps ?? i.throughput_kbps) * 1000) <= i.segment_s;
}

/**
 * The best plan over the horizon, exactly (depth-first search, a branch is cut when even
 * the top rung at every remaining step, with no rebuffer nor switch, cannot beat the best).
 * Ties go to the lower rung. @throws RangeError on bad input (validate)
 */
export function mpcPlan(i: MpcInput): MpcPlan {
  validate(i);
  const n = i.ladder_kbps.length;
  const top = i.ladder_kbps[n - 1]! / 1000;
  let best: MpcPlan = { rung: 0, plan: [], qoe: Number.NEGATIVE_INFINITY };
  const path: number[] = [];
  const dfs = (depth: number, prev: number | null, buffer_s: number, acc: number) => {
    if (depth === i.horizon) {
      acc -= reserveCost(i, buffer_s);
      if (acc > best.qoe + 1e-9) best = { rung: path[0]!, plan: [...path], qoe: acc };
      return;
    }
    if (acc + (i.horizon - depth) * top <= best.qoe + 1e-9) return;
    for (let r = 0; r < n; r++) {
      if (depth === 0 && i.first_rung !== undefined && r !== i.first_rung) continue;
      if (!mpcAllowed(i, prev, r)) continue;
      const s = mpcStep(i, prev, r, buffer_s, depth === 0);
      path.push(r);
      dfs(depth + 1, r, s.buffer_s, acc + s.qoe);
      path.pop();
    }
  };
  dfs(0, i.last_rung, i.buffer_s, 0);
  return best;
}

/** Switch hysteresis of the MPC (MPC_DEFAULTS `down_switch_margin`, `up_hold_segments`). */
export interface MpcHysteresis {
  /**
   * A down-switch is taken only when the best plan beats the best plan that holds the last rung
   * for one more segment by more than this × the switch's own |Δ bitrate| (Mbit/s, QoE units).
   */
  down_switch_margin: number;
  /** No up-switch until the last rung has been held this many segments (1: none). */
  up_hold_segments: number;
}

/**
 * The MPC's decision with switch hysteresis (our addition to RobustMPC, Yin et al., SIGCOMM
 * 2015, which re-plans every segment on a noisy prediction and so switches on its noise):
 * - down: the plan that holds the last rung for one more segment (`first_rung`) is kept unless
 *   the best plan is better by more than `down_switch_margin` × |Δ bitrate|. Holding gains Δ of
 *   bitrate on that segment, so a down-switch needs a predicted stall worth about (1 + margin) × Δ
 *   under a throughput that is already RobustMPC's lower bound;
 * - up: held until the last rung has played `up_hold_segments` segments in a row, so a ramp
 *   goes up in fewer, larger steps and a down-switch is not undone on the next estimate.
 * `recent_kbps`: nominal bitrates of the last segments fetched, oldest first (the last is
 * `i.last_rung`'s). Returns mpcPlan's result when no hysteresis applies, else the hold plan
 * with `held` naming the rule.
 * @throws RangeError on bad input (validate), a negative margin or a hold below 1 or not an integer
 */
export function mpcHysteresis(i: MpcInput, recent_kbps: readonly number[], h: MpcHysteresis): MpcPlan {
  if (!(h.down_switch_margin >= 0)) throw new RangeError(`mpcHysteresis: down_switch_margin must be >= 0, got ${h.down_switch_margin}`);
  if (!(Number.isInteger(h.up_hold_segments) && h.up_hold_segments >= 1)) throw new RangeError(`mpcHysteresis: up_hold_segments must be an integer >= 1, got ${h.up_hold_segments}`);
  const best = mpcPlan(i);
  const last = i.last_rung;
  if (last === null || best.rung === last) return best;
  const hold = () => mpcPlan({ ...i, first_rung: last });
  if (best.rung > last) {
    let run = 0; // segments in a row at the last rung, newest first
    for (let j = recent_kbps.length - 1; j >= 0 && Math.abs(recent_kbps[j]! - i.ladder_kbps[last]!) < 1e-6; j--) run++;
    return run >= Math.min(h.up_hold_segments, recent_kbps.length) ? best : { ...hold(), held: "up_hold" };
  }
  if (h.down_switch_margin === 0) return best;
  const delta_mbps = (i.ladder_kbps[last]! - i.ladder_kbps[best.rung]!) / 1000;
  const kept = hold();
  return best.qoe - kept.qoe > h.down_switch_margin * delta_mbps + 1e-9 ? best : { ...kept, held: "down_margin" };
}

/**
 * dash.js 5's start bitrate for video, kbit/s, when it has no throughput sample (AbrController
 * `getInitialBitrateFor`: `streaming.abr.initialBitrate` unset, no saved setting, no average →
 * 1000 for video; read from the shipped dash.all.min.js 5.2.1): it starts at the highest rung
 * at or below it.
 */
export const DASHJS_START_KBPS = 1000;

/**
 * The rung the first segment is fetched at so that its own transfer can measure the ladder's top
 * rung (issue 15, "reach the sustainable rung quickly"): the lowest rung whose first segment holds
 * at least 2 × (the top rung's bytes per second) × the min RTT, and never above dash.js's own
 * start (DASHJS_START_KBPS), so the start-up never costs more than the baseline's.
 * Why: before a busy period is measured the MPC plans on an app-limited floor, the peak one-RTT
 * delivery rate (robustThroughputKbps). A transfer in slow start doubles its window each round
 * trip (RFC 5681 §3.1; the controller's start-up, +1 MSS per MSS delivered), so the last whole
 * round carries about half of it: a B-byte transfer shows a one-RTT peak of about B ÷ (2 × RTT).
 * The lowest rung's 72 kB (300 kbit/s) shows about 7.5 Mbit/s at 50 ms, just under what the 8000
 * kbit/s rung needs (7.76), so the next decision took 6000 and the one after 8000: two switches
 * where dash.js, starting at 750 kbit/s (187 kB), made one (docs/BENCHMARKS.md, forty-sixth and
 * forty-ninth sessions). Opt-in (`MPC_DEFAULTS.first_probe`): measured, it costs buffer where a dip
 * comes early.
 * @param ladder_kbps rung bitrates, kbit/s, ascending (non-empty)
 * @param segment_bytes bytes of each rung's first segment (same length)
 * @param segment_s segment duration, s (> 0)
 * @param rtt_s the path's min RTT, s (> 0)
 * @returns a rung index (0 when no rung qualifies within dash.js's start)
 * @throws RangeError on an empty ladder, mismatched lengths or a non-positive duration or RTT
 */
export function firstProbeRung(ladder_kbps: readonly number[], segment_bytes: readonly number[], segment_s: number, rtt_s: number): number {
  if (ladder_kbps.length === 0 || segment_bytes.length !== ladder_kbps.length) throw new RangeError("firstProbeRung: one segment size per rung, at least one rung");
  if (!(segment_s > 0) || !(rtt_s > 0)) throw new RangeError(`firstProbeRung: segment_s and rtt_s must be > 0, got ${segment_s}, ${rtt_s}`);
  const top_bytes_per_s = segment_bytes[segment_bytes.length - 1]! / segment_s;
  const need_bytes = 2 * top_bytes_per_s * rtt_s; // the slow-start transfer whose last round shows the top rung's rate
  let cap = 0; // the highest rung within dash.js's start
  for (let r = 0; r < ladder_kbps.length; r++) if (ladder_kbps[r]! <= DASHJS_START_KBPS) cap = r;
  for (let r = 0; r <= cap; r++) if (segment_bytes[r]! >= need_bytes) return r;
  return cap;
}

/** Every plan enumerated (ladder^horizon): the check of mpcPlan. Ties go to the lower plan (lexicographic). */
export function bruteForcePlan(i: MpcInput): MpcPlan {
  validate(i);
  const n = i.ladder_kbps.length;
  let best: MpcPlan = { rung: 0, plan: [], qoe: Number.NEGATIVE_INFINITY };
  const total = n ** i.horizon;
  for (let code = 0; code < total; code++) {
    const plan: number[] = [];
    let c = code;
    for (let d = 0; d < i.horizon; d++) {
      plan.unshift(c % n);
      c = Math.floor(c / n);
    }
    let prev = i.last_rung;
    let b = i.buffer_s;
    let q = 0;
    let ok = i.first_rung === undefined || plan[0] === i.first_rung;
    plan.forEach((r, d) => {
      if (!mpcAllowed(i, prev, r)) ok = false;
      const s = mpcStep(i, prev, r, b, d === 0);
      q += s.qoe;
      b = s.buffer_s;
      prev = r;
    });
    q -= reserveCost(i, b);
    if (ok && q > best.qoe + 1e-9) best = { rung: plan[0]!, plan, qoe: q };
  }
  return best;
}

/** A completed video segment download. */
export interface SegmentSample {
  bytes: number;
  /** Request sent to response complete, s. */
  duration_s: number;
  /** The rung's nominal bitrate, kbit/s (NaN when unknown). */
  bitrate_kbps: number;
  /** Segment duration, s (NaN when unknown). */
  segment_s: number;
  /** Nuwa's capacity estimate when the request left, kbit/s (busy-period basis only; NaN otherwise). */
  predicted_kbps: number;
  /** First body byte to complete, s (dash.js's own download time, without the time to first byte); absent or NaN when unknown. */
  transfer_s?: number;
}

/** What the MPC rule keeps between decisions (one per media type). */
export class MpcHistory {
  readonly samples: SegmentSample[] = [];
  /** Nuwa's capacity estimate at the last decision (kbit/s; NaN when not on a busy-period basis): the next sample's `predicted_kbps`. */
  next_predicted_kbps = Number.NaN;
  /**
   * Highest bitrate the next decision may pick, kbit/s: set by an abandonment (the rung the
   * segment is fetched again at), lifted when a segment completes (the replacement). Infinity: none.
   */
  cap_kbps = Number.POSITIVE_INFINITY;
  /** Completed segment downloads recorded since construction (a count that only grows; `samples` keeps the last `keep`). */
  recorded = 0;
  /** Keep this many recent samples. */
  constructor(readonly keep = 5) {}

  /** Record a completed segment download (and lift an abandonment's cap). */
  add(s: SegmentSample): void {
    this.cap_kbps = Number.POSITIVE_INFINITY;
    if (!(s.bytes > 0 && s.duration_s > 0)) return;
    this.recorded++;
    this.samples.push(s);
    if (this.samples.length > this.keep) this.samples.shift();
  }

  /** Realized throughput of a sample, kbit/s: bytes over the download time less one RTT (at least half the time). */
  static realizedKbps(s: SegmentSample, rtt_s: number): number {
    return (s.bytes * 8) / 1000 / Math.max(s.duration_s - rtt_s, s.duration_s / 2);
  }

  /** Harmonic mean of the realized throughputs, kbit/s (NaN without samples); RobustMPC's predictor (§5). */
  harmonicKbps(rtt_s: number): number {
    if (this.samples.length === 0) return Number.NaN;
    return this.samples.length / this.samples.reduce((a, s) => a + 1 / MpcHistory.realizedKbps(s, rtt_s), 0);
  }

  /** Mean ratio of real bytes to nominal (bitrate × duration), 1 without samples. */
  sizeRatio(): number {
    const r = this.samples.filter((s) => s.bitrate_kbps > 0 && s.segment_s > 0).map((s) => (s.bytes * 8) / 1000 / (s.bitrate_kbps * s.segment_s));
    return r.length === 0 ? 1 : r.reduce((a, b) => a + b, 0) / r.length;
  }
}

/** Settings of the MPC rule. */
export const MPC_DEFAULTS = {
  horizon: 5,
  /** Cap on the estimate's relative error in the lower bound (RobustMPC divides by 1 + error). */
  max_error: 1,
  /**
   * With at least this much buffer, s, the error cap is `deep_max_error` (a deep buffer absorbs a
   * download slower than predicted). Off by default (Infinity: RobustMPC's discount at every buffer
   * level). Screened from 8 s in the video simulator (./nuwa video-sim, 18 traces; docs/BENCHMARKS.md,
   * twenty-eighth session): mean QoE +5% (starts 0/20/40 s) and +2.5% (held-out starts) at the same
   * rebuffering, SIMULATED; end to end on the six dev traces (3 runs each) no difference: 2.61
   * against 2.64, every trace inside the runs' spread, 4G switches 9.3 against 7.9. attachNuwa's
   * `mpc: { deep_from_s: 8 }` turns it on (scheme `nuwa_deepcap`).
   */
  deep_buffer_s: Number.POSITIVE_INFINITY,
  deep_max_error: 0.25,
  /**
   * The buffer target, s: attachNuwa sets dash.js's bufferTimeDefault to it for the MPC (dash.js's
   * default is 12 s below the top rung, 30 s at it). A VOD player with a deeper buffer rides out
   * dips on a higher rung: the offline optimum (abr_optimum.py) fills far ahead on the traces.
   */
  buffer_cap_s: 30,
  /**
   * Share of Nuwa's capacity estimate a segment download gets before any is measured. Measured
   * end to end (out/bench/s7-abr-dev1, Verizon LTE, grants): the realized segment throughput was
   * 0.55–0.8 of the busy-period capacity (request RTT, the window's ramp after each idle gap, audio
   * beside video); 0.6 is the low end.
   */
  flow_share_prior: 0.6,
  /** Relative error assumed until two segments have scored the predictor. */
  error_prior: 0.25,
  /**
   * Switch hysteresis (mpcHysteresis; 0 and 1 turn it off: RobustMPC's decision). Screened in the
   * video simulator (18 traces; docs/BENCHMARKS.md, thirtieth session): switches 6.02 → 4.33 a run
   * (held-out starts 5.39 → 4.25) at QoE +4.8 % (+2.0 %), SIMULATED. End to end on the six dev
   * traces (2 runs each, same invocation as dash.js): switches 3G 8.0 → 6.0 and 4G 9.0 → 5.8
   * (dash.js 8.0 and 6.8), mean QoE 2.62 → 2.73; AT&T LTE rebuffered 8.3 s a run against 5.1 s.
   * Scheme `nuwa_nohyst` runs the MPC without it.
   */
  down_switch_margin: 1,
  up_hold_segments: 2,
  /**
   * The terminal buffer reserve (MpcInput `reserve_s`, `reserve_weight`): a plan that ends its
   * horizon with less than `reserve_s` of buffer is charged `reserve_weight` × the rebuffer penalty
   * per second short, so the MPC builds buffer before it spends throughput on bitrate. RobustMPC
   * (Yin et al., SIGCOMM 2015, §4) plans the QoE of the horizon only, so at a rung the link
   * barely carries it plays on a few seconds of buffer, and an outage longer than that stalls
   * (AT&T LTE's 10 s outage at 20 s: 1–9 s of rebuffering a run end to end, dash.js's BOLA 0–1.7;
   * docs/BENCHMARKS.md, forty-fifth session). A terminal cost is the usual remedy of a finite-
   * horizon controller for what lies past its horizon. Capped at a third of `buffer_cap_s` where
   * the cap is lower (decideMpc). Screened in the video simulator (18 traces, `./nuwa video-sim`)
   * against none: mean QoE per chunk +4.4 % on starts 0/20/40 s, −1.9 % on the held-out starts
   * 10/30/50/70 s, rebuffering −34 % and −17 %, SIMULATED. End to end against it off (six dev traces,
   * 3 runs each, one invocation with dash.js): AT&T's stalls 0–1.5 s a run against 4.5–9.4 s, UMTS QoE
   * −4.20 against −4.94, mean QoE 2.78 against 2.74. `reserve_s: 0` turns it off (scheme `nuwa_noreserve`).
   */
  reserve_s: 10,
  reserve_weight: 0.5,
  /**
   * Opt-in (false: the MPC's start-up term alone picks the first rung, the lowest here): the first
   * segment at firstProbeRung's rung (or the MPC's, if higher), so its transfer measures enough for
   * the next decision to reach the top rung at once. Measured end to end against it off (six dev
   * traces, 3 runs a cell, one invocation with dash.js; docs/BENCHMARKS.md, forty-ninth session):
   * 5G low-band 1 switch against 2 (dash.js 1) and QoE 7.52 against 7.35, T-Mobile LTE 1.33 against
   * 2; but the MPC then climbs one segment sooner everywhere, and on the traces with an early dip
   * or outage that costs buffer: AT&T LTE stalled in 3 of 3 runs against 1 of 3, Verizon LTE QoE
   * 2.18 against 2.64, mean QoE 2.68 against 2.82, start-up 0.1–0.4 s later. Scheme `nuwa_probe`.
   */
  first_probe: false,
} as const;

/**
 * Share of Nuwa's capacity estimate the flow got: median over the samples with a capacity
 * estimate of realized ÷ capacity, within [0.2, 1]; `MPC_DEFAULTS.flow_share_prior` without any.
 */
export function flowShare(history: MpcHistory, rtt_s: number): number {
  return medianShare(history.samples.filter((s) => s.predicted_kbps > 0).map((s) => MpcHistory.realizedKbps(s, rtt_s) / s.predicted_kbps));
}

/** Median of the ratios within [0.2, 1]; `MPC_DEFAULTS.flow_share_prior` for none. */
function medianShare(r: number[]): number {
  if (r.length === 0) return MPC_DEFAULTS.flow_share_prior;
  r.sort((a, b) => a - b);
  const mid = r.length % 2 === 1 ? r[(r.length - 1) / 2]! : (r[r.length / 2 - 1]! + r[r.length / 2]!) / 2;
  return Math.min(1, Math.max(0.2, mid));
}

/**
 * Share of Nuwa's capacity estimate a segment's transfer got, first body byte to last (dash.js's
 * own throughput sample: `useDeadTimeLatency` leaves the time to first byte out): median over the
 * samples with a capacity estimate and a transfer time of (bytes ÷ transfer time) ÷ capacity,
 * within [0.2, 1]; `MPC_DEFAULTS.flow_share_prior` without any.
 */
export function transferShare(history: MpcHistory): number {
  return medianShare(history.samples.filter((s) => s.predicted_kbps > 0 && (s.transfer_s ?? Number.NaN) > 0).map((s) => (s.bytes * 8) / 1000 / s.transfer_s! / s.predicted_kbps));
}

/**
 * The throughput the MPC plans with, kbit/s (the robust lower bound), and how it was formed.
 * - On a busy-period basis Nuwa's estimate is the link's capacity; what a segment download
 *   gets under the window we grant is a share of it (flowShare: measured per segment), so the
 *   prediction is capacity × share — the figure the flow can actually get, not the raw capacity.
 * - An app-limited basis (delivery_rate, window_per_rtt) is only a floor (the link was not kept
 *   busy): the realized segment throughput (harmonic mean, RobustMPC §5) raises it, and so does
 *   `peak_kbps`, the controller's peak delivery rate over one min RTT (BandwidthEstimate
 *   `peak_rtt_rate_bps`): a short download still in slow start averages far below the link (the
 *   first 72 kB segment on the 5G low-band trace: 3.2 Mbit/s realized on a 42 Mbit/s link, where
 *   dash.js's larger first segment over Cubic measured enough to go to 6 Mbit/s next), while what
 *   arrived within its last round trip is what the link carried in one.
 * - The prediction is divided by 1 + the max relative error of that predictor on the recent
 *   segments (RobustMPC §5), capped at `max_error`; `error_prior` until two segments scored it.
 */
export function robustThroughputKbps(
  estimate_kbps_in: number,
  basis: string,
  history: MpcHistory,
  rtt_s: number,
  peak_kbps = Number.NaN,
  max_error: number = MPC_DEFAULTS.max_error,
): { kbps: number; predicted_kbps: number; error: number; share: number } {
  const estimate_kbps = Number.isFinite(estimate_kbps_in) ? estimate_kbps_in : 0;
  const realized = history.harmonicKbps(rtt_s);
  if (basis !== "busy_period" || !(estimate_kbps > 0)) {
    const predicted = Math.max(estimate_kbps, Number.isFinite(realized) ? realized : 0, Number.isFinite(peak_kbps) ? peak_kbps : 0);
    return { kbps: predicted, predicted_kbps: predicted, error: 0, share: 1 };
  }
  const share = flowShare(history, rtt_s);
  const scored = history.samples.filter((s) => s.predicted_kbps > 0);
  let error: number = MPC_DEFAULTS.error_prior;
  if (scored.length >= 2) {
    error = 0;
    for (const s of scored) {
      const real = MpcHistory.realizedKbps(s, rtt_s);
      error = Math.max(error, Math.abs(share * s.predicted_kbps - real) / real);
    }
  }
  error = Math.min(max_error, error);
  const predicted = estimate_kbps * share;
  return { kbps: predicted / (1 + error), predicted_kbps: predicted, error, share };
}

/** A video segment download in progress, and what the MPC knows at one of its progress events. */
export interface AbandonInput {
  /** Rung bitrates, kbit/s, ascending (non-empty). */
  ladder_kbps: readonly number[];
  /** Rung of the download in progress (index into the ladder). */
  rung: number;
  /** Rung of the segment before it (the switch the QoE charges), or null before the first. */
  prev_rung: number | null;
  /** The download's size and what has arrived, bytes. */
  bytes_total: number;
  bytes_loaded: number;
  /** Buffer level, s: what plays while the rest arrives. */
  buffer_s: number;
  /** What the flow gets now, kbit/s (> 0): Nuwa's capacity × the flow's measured share, not discounted. */
  throughput_kbps: number;
  /** This segment's bytes at each rung (same length as the ladder). */
  segment_bytes: readonly number[];
  /** Per-request overhead (one RTT) of the replacement request, s. */
  rtt_s: number;
}

/** The abandonment verdict: the rung to fetch the segment at instead (null: keep the download), with both QoE figures. */
export interface AbandonDecision {
  rung: number | null;
  keep_qoe: number;
  best_qoe: number;
  remaining_s: number;
}

/**
 * Whether to abandon a segment download in progress and fetch the same segment at a lower rung:
 * the one-segment step of the MPC's own objective (Pensieve's QoE_lin, as `mpcStep`) for
 * keeping the download (its remaining bytes at the current throughput) against restarting it at
 * each lower rung (one RTT + that rung's whole segment). Abandon to the best lower rung only when
 * its QoE is strictly higher: that is when keeping it would stall (the rest takes longer than
 * the buffer) by more than the lower rung stalls, by enough to pay for its lower bitrate and its
 * switch. Production players do this (dash.js AbandonRequestsRule, BOLA-E's abandonment: Spiteri
 * et al., "From Theory to Practice: Improving Bitrate Adaptation in the DASH Reference Player",
 * MMSys 2018); RobustMPC (Yin et al., SIGCOMM 2015) plans whole segments and has none, so a
 * segment started just before an outage (3G: tens of seconds near dark) held the player.
 * @throws RangeError on bad input (empty ladder, rung out of range, sizes not matching the ladder, throughput ≤ 0)
 */
export function mpcAbandon(i: AbandonInput): AbandonDecision {
  const n = i.ladder_kbps.length;
  if (n === 0) throw new RangeError("mpcAbandon: empty ladder");
  if (!(Number.isInteger(i.rung) && i.rung >= 0 && i.rung < n)) throw new RangeError(`mpcAbandon: rung must be 0..${n - 1}, got ${i.rung}`);
  if (i.segment_bytes.length !== n) throw new RangeError("mpcAbandon: segment_bytes must match the ladder");
  if (!(i.throughput_kbps > 0)) throw new RangeError(`mpcAbandon: throughput must be > 0 kbit/s, got ${i.throughput_kbps}`);
  const qoe = (r: number, dl_s: number) => chunkQoe(i.ladder_kbps, i.prev_rung, r, Math.max(0, dl_s - i.buffer_s));
  const remaining_s = (Math.max(0, i.bytes_total - i.bytes_loaded) * 8) / (i.throughput_kbps * 1000);
  const keep_qoe = qoe(i.rung, remaining_s);
  let best: number | null = null;
  let best_qoe = keep_qoe;
  for (let r = 0; r < i.rung; r++) {
    const q = qoe(r, i.rtt_s + (i.segment_bytes[r]! * 8) / (i.throughput_kbps * 1000));
    if (q > best_qoe + 1e-9) {
      best = r;
      best_qoe = q;
    }
  }
  return { rung: best, keep_qoe, best_qoe, remaining_s };
}
