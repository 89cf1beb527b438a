/**
 * The offline frontier of a trace (issue 14): the lowest p95 queuing delay at which an
 * OMNISCIENT sender of two families reaches a given utilization (docs/DESIGN.md §7, "The offline
 * frontier").
 *
 * A literal "any window schedule" frontier is 0 ms: a sender that knows the trace can time every
 * packet to reach the bottleneck at its own delivery opportunity (an ACK-clocked window equal to
 * the capacity over (t − d_up, t + d_down] does exactly that). The frontier is instead taken over
 * two families that know the future capacity but act on it at the granularity of a round trip:
 *
 * - "window": ACK-clocked; its window at t is the capacity the trace will offer over
 *   (t + d_down + a, t + d_down + a + RTT_base + h] (bytes, known in advance; a = 0 by default,
 *   `offset_ms`): what a perfect forecaster of the round trip its packets will meet would set
 *   (cf. Sprout, Winstein et al. NSDI 2013 §3: the window is the forecast of what drains within
 *   the target delay). It under-fills before a drop in capacity (its window shrinks as fast as
 *   ACKs return, one RTT_base early) unless h spans the dip: on a trace with 100 ms gaps full
 *   utilization needs h ≥ 100 ms, at p95 = RTT_base + gap (frontier.test.ts works it by hand).
 *   And a burst enters its window d_down + RTT_base ahead, so the burst's packets reach the queue
 *   about RTT_base early: p95 ≈ RTT_base + h on bursty traces.
 * - "paced": open loop; its packets reach the queue at a constant rate over each interval
 *   [kI, (k + 1)I) of the trace's clock (I = RTT_base by default, `paced_interval_ms`), the rate
 *   that carries the capacity of [kI + h, (k + 1)I + h): it knows each round trip's capacity and
 *   spreads it evenly. It queues what the trace bunches inside an interval.
 *
 * Each family and headroom h (swept over a grid) gives one (utilization, p95 queuing delay) point
 * over the same path model as the benchmark, the one simulator engine (engine.ts): 25 ms one way
 * each way, a Mahimahi drop-tail queue of 1000 packets, 1500-byte packets on the wire, ACKs back at
 * departure + d_up, QUIC loss repair (a dropped packet is sent again 9/8 RTT after its send), a 2 s
 * warm-up, utilization = delivered ÷ offered capacity and queuing delay = departure − enqueue per
 * packet, as bulk.ts computes them.
 *
 * The frontier is the lower-left envelope of all points. Being the best of two families, not of
 * every schedule, it is an UPPER BOUND on the true frontier of all window schedules (which is 0 ms):
 * a scheme beating it is possible, and a ratio to it says how far a scheme is from an omniscient
 * round-trip-grained sender, not from the physical limit.
 *
 * A third family, "causal" (causalWindowPoint), knows the past capacity exactly and nothing of the
 * future: its envelope is not the frontier but a reference on the other side, what a window rule
 * that tracks the link's recent capacity reaches without a forecast.
 */
import { Engine } from "./engine.js";
import { percentile } from "./stats.js";
import { MAHIMAHI_PACKET_BYTES } from "./trace.js";

/** Headroom grid of the frontier, ms (issue 14). */
export const FRONTIER_HEADROOMS_MS: readonly number[] = [0, 2, 5, 10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 500];

/**
 * The families of senders (module doc): the omniscient ACK-clocked forecast window and per-interval
 * pacing, which make the frontier; and "causal", which knows only the past (causalWindowPoint) and
 * is kept apart from the frontier's envelope.
 */
export type FrontierFamily = "window" | "paced" | "causal";
/** The omniscient families, whose envelope is the frontier. */
export const FRONTIER_FAMILIES: readonly FrontierFamily[] = ["window", "paced"];

/**
 * The causal family's grid (causalWindowPoint): look-back M, ms; quantile q of the past capacity
 * rates, percent; headroom h, ms. 2 × 4 × 4 = 32 members per trace.
 */
export const CAUSAL_LOOKBACKS_MS: readonly number[] = [200, 1000];
export const CAUSAL_QUANTILES: readonly number[] = [50, 75, 90, 100];
export const CAUSAL_HEADROOMS_MS: readonly number[] = [0, 25, 50, 100];
/** Span of one capacity-rate sample of the causal family, ms, and the step between samples, ms. */
export const CAUSAL_RATE_SPAN_MS = 50;
export const CAUSAL_RATE_STEP_MS = 10;

/** A member of the causal family (causalWindowPoint). */
export interface CausalMember {
  /** Look-back M over which past capacity rates are taken, ms (≥ CAUSAL_RATE_SPAN_MS). */
  lookback_ms: number;
  /** Quantile q of those rates, percent, 0..100 (100: their maximum). */
  quantile: number;
  /** Headroom h, ms (≥ 0): the window covers RTT_base + h at that rate. */
  headroom_ms: number;
}

export interface FrontierOptions {
  /** Simulated time, s (default 60, as a bench bulk run). */
  duration_s?: number;
  /** One-way propagation delay each way, ms (default 25: base RTT 50 ms). */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets (default 1000). */
  queue_packets?: number;
  /** Packet size on the wire, bytes (default 1500). */
  packet_bytes?: number;
  /** First seconds not counted, s (default 2). */
  warmup_s?: number;
  /** Headrooms h to sweep, ms (default FRONTIER_HEADROOMS_MS). */
  headrooms_ms?: readonly number[];
  /** Families whose points frontierPoints returns (default both, FRONTIER_FAMILIES). */
  families?: readonly FrontierFamily[];
  /**
   * Shift a of the window family's forecast interval, ms (default 0): the window at t is the
   * capacity over (t + d_down + a, t + d_down + a + RTT_base + h]. a = −RTT_base makes the sender
   * the omniscient scheduler (p95 ≈ 0 at full utilization), which is why the family keeps a = 0.
   */
  offset_ms?: number;
  /** Pacing interval I of the paced family, ms (default RTT_base). */
  paced_interval_ms?: number;
  /** computeFrontiers (e2e/src/frontier.ts) also computes the causal family's envelope (causalFrontPoints; default false). */
  causal?: boolean;
}

/** One member of a family: its family, headroom and what it achieved. */
export interface FrontierPoint {
  family: FrontierFamily;
  /** Headroom h, ms. */
  headroom_ms: number;
  /** Delivered ÷ offered capacity after the warm-up, 0..1. */
  utilization: number;
  /** p95 of per-packet queuing delay after the warm-up, ms (NaN if nothing was delivered). */
  p95_ms: number;
  /** Dropped ÷ sent packets after the warm-up, 0..1. */
  loss_rate: number;
  /** Causal family only: look-back M, ms, and quantile q, percent (CausalMember). */
  lookback_ms?: number;
  quantile?: number;
}

/**
 * Opportunities of the looped trace per integer ms, as a prefix sum: `cum[m]` = opportunities at
 * ms 0..m − 1, for m in 0..horizon_ms.
 */
function cumulativeOpportunities(trace: Uint32Array, horizon_ms: number): Float64Array {
  const per = new Uint32Array(horizon_ms);
  const period = trace[trace.length - 1]!;
  for (let base = 0; base < horizon_ms; base += period)
    for (const off of trace) {
      const m = base + off;
      if (m >= horizon_ms) break;
      per[m]!++;
    }
  const cum = new Float64Array(horizon_ms + 1);
  for (let m = 0; m < horizon_ms; m++) cum[m + 1] = cum[m]! + per[m]!;
  return cum;
}

/**
 * The bench's path (module doc) in the simulator engine (engine.ts) under a sender that decides,
 * every ms, how many packets to write (flow.ts policy `schedule`: no pacing, no ceiling; a
 * dropped packet is repaired as QUIC does, repair.ts).
 * @param send (t_ms, outstanding_bytes) → packets written at t (outstanding: bytes in flight,
 *   sent and not acknowledged; an acknowledgement reaches the sender d_up after the departure)
 */
function simulatePath(trace: Uint32Array, o: FrontierOptions, family: FrontierFamily, headroom_ms: number, send: (t_ms: number, outstanding_bytes: number) => number): FrontierPoint {
  const duration_ms = Math.round((o.duration_s ?? 60) * 1000);
  const warmup_ms = (o.warmup_s ?? 2) * 1000;
  const qd: number[] = [];
  const eng = new Engine(
    { trace: new Uint32Array(trace), one_way_delay_ms: o.one_way_delay_ms ?? 25, queue_packets: o.queue_packets ?? 1000 },
    [{ policy: "schedule", schedule: send, frame_bytes: o.packet_bytes ?? 1500, wire_overhead_bytes: 0 }],
    (_i, r, _dec, t) => {
      if (t >= warmup_ms) qd.push(r.depart_ms - r.enqueue_ms);
    },
  );
  const flow = eng.flows[0]!;
  let cap0 = 0;
  let del0 = 0;
  let sent0 = 0;
  let drop0 = 0;
  for (let t = 0; t < duration_ms; t++) {
    if (t === warmup_ms) {
      cap0 = eng.link.capacity_bytes;
      del0 = eng.link.served_bytes;
      sent0 = eng.sentPackets;
      drop0 = flow.dropped_packets;
    }
    eng.tick();
  }
  return {
    family,
    headroom_ms,
    utilization: (eng.link.served_bytes - del0) / Math.max(1, eng.link.capacity_bytes - cap0),
    p95_ms: percentile(qd, 95),
    loss_rate: (flow.dropped_packets - drop0) / Math.max(1, eng.sentPackets - sent0),
  };
}

function checkArgs(fn: string, headroom_ms: number, o: FrontierOptions): void {
  if (!(headroom_ms >= 0)) throw new RangeError(`${fn}: headroom_ms must be ≥ 0 (got ${headroom_ms})`);
  if (!(Math.round((o.duration_s ?? 60) * 1000) > 0)) throw new RangeError(`${fn}: duration_s must be > 0 (got ${o.duration_s})`);
}

/**
 * Simulate one omniscient window sender (module doc) over `trace`: ACK-clocked, its window at t
 * the capacity over (t + d_down + a, t + d_down + a + RTT_base + h], bytes.
 * @param trace opportunity offsets, ms (parseMahimahiTrace); looped as Mahimahi does
 * @param headroom_ms h, ms (≥ 0)
 * @returns its point (utilization, p95 queuing delay in ms, loss rate)
 * @throws RangeError for a negative headroom or a non-positive duration
 */
export function omniscientWindowPoint(trace: Uint32Array, headroom_ms: number, o: FrontierOptions = {}): FrontierPoint {
  checkArgs("omniscientWindowPoint", headroom_ms, o);
  const d_ms = o.one_way_delay_ms ?? 25;
  const pkt = o.packet_bytes ?? 1500;
  const lo_off = d_ms + (o.offset_ms ?? 0); // window interval (t + lo_off, t + hi_off]
  const hi_off = lo_off + 2 * d_ms + headroom_ms;
  const horizon = Math.round((o.duration_s ?? 60) * 1000) + Math.max(0, Math.ceil(hi_off)) + 2;
  const cum = cumulativeOpportunities(trace, horizon);
  // Opportunities at integer ms in (a, b] (none before 0 or past the horizon).
  const opps = (a: number, b: number): number => {
    const ia = Math.min(horizon, Math.max(0, Math.floor(a) + 1));
    const ib = Math.min(horizon, Math.max(0, Math.floor(b) + 1));
    return cum[ib]! - cum[ia]!;
  };
  return simulatePath(trace, o, "window", headroom_ms, (t, outstanding) => {
    const window_bytes = opps(t + lo_off, t + hi_off) * MAHIMAHI_PACKET_BYTES;
    return Math.max(0, Math.floor((window_bytes - outstanding) / pkt));
  });
}

/**
 * Simulate one omniscient paced sender (module doc) over `trace`: open loop, its packets reach
 * the queue at a constant rate over each interval [kI, (k + 1)I) of the trace's clock, the rate
 * that carries the capacity of [kI + h, (k + 1)I + h) (fractions of a packet carried over).
 * @param trace opportunity offsets, ms (parseMahimahiTrace); looped as Mahimahi does
 * @param headroom_ms h, ms (≥ 0): how far ahead of their capacity the packets arrive
 * @returns its point (utilization, p95 queuing delay in ms, loss rate)
 * @throws RangeError for a negative headroom, a non-positive duration or interval
 */
export function omniscientPacedPoint(trace: Uint32Array, headroom_ms: number, o: FrontierOptions = {}): FrontierPoint {
  checkArgs("omniscientPacedPoint", headroom_ms, o);
  const d_ms = o.one_way_delay_ms ?? 25;
  const pkt = o.packet_bytes ?? 1500;
  const interval_ms = o.paced_interval_ms ?? 2 * d_ms;
  if (!(Number.isInteger(interval_ms) && interval_ms >= 1)) throw new RangeError(`omniscientPacedPoint: paced_interval_ms must be a positive integer (got ${interval_ms})`);
  const horizon = Math.round((o.duration_s ?? 60) * 1000) + d_ms + interval_ms + Math.ceil(headroom_ms) + 2;
  const cum = cumulativeOpportunities(trace, horizon);
  const at = (m: number): number => cum[Math.min(horizon, Math.max(0, m))]!;
  let credit_bytes = 0;
  return simulatePath(trace, o, "paced", headroom_ms, (t) => {
    const k = Math.floor((t + d_ms) / interval_ms); // the interval its packets arrive in
    const lo = k * interval_ms + Math.round(headroom_ms);
    credit_bytes += ((at(lo + interval_ms) - at(lo)) * MAHIMAHI_PACKET_BYTES) / interval_ms;
    const n = Math.floor(credit_bytes / pkt);
    credit_bytes -= n * pkt;
    return n;
  });
}

/**
 * Simulate one causal window sender over `trace`: a sender that knows the capacity the link offered
 * in the PAST, exactly, one one-way delay late (what a receiver at the bottleneck could report),
 * and nothing of the future. Its window at t is the q-th percentile of the capacity rates over
 * CAUSAL_RATE_SPAN_MS spans (one every CAUSAL_RATE_STEP_MS) inside (t − d_up − M, t − d_up],
 * times RTT_base + h: Sprout's window (Winstein et al., NSDI 2013 §3: a forecast of what drains
 * within the target delay) with the forecast replaced by a quantile of the recent past. Recomputed
 * every CAUSAL_RATE_STEP_MS; before any span is known, 10 packets (RFC 9002 §7.2).
 *
 * Its points are not part of the frontier (they are dominated by the omniscient families'): their
 * envelope over the grid (causalFrontPoints) is a reference for what knowing the past, not the
 * future, buys. A receiver-driven controller knows less than this sender (it sees the capacity
 * only while its own queue is not empty), so a utilization/p95 pair that no member reaches is
 * evidence, not proof, that a causal window rule of this kind cannot reach it; the families are a
 * grid, not every causal schedule.
 * @param trace opportunity offsets, ms (parseMahimahiTrace); looped as Mahimahi does
 * @param m the member: look-back, quantile, headroom
 * @returns its point (family "causal", with lookback_ms and quantile)
 * @throws RangeError for a look-back shorter than one span, a quantile outside 0..100, a negative
 *   headroom or a non-positive duration
 */
export function causalWindowPoint(trace: Uint32Array, m: CausalMember, o: FrontierOptions = {}): FrontierPoint {
  checkArgs("causalWindowPoint", m.headroom_ms, o);
  if (!(m.lookback_ms >= CAUSAL_RATE_SPAN_MS)) throw new RangeError(`causalWindowPoint: lookback_ms must be ≥ ${CAUSAL_RATE_SPAN_MS} (got ${m.lookback_ms})`);
  if (!(m.quantile >= 0 && m.quantile <= 100)) throw new RangeError(`causalWindowPoint: quantile must be in 0..100 (got ${m.quantile})`);
  const d_ms = o.one_way_delay_ms ?? 25;
  const pkt = o.packet_bytes ?? 1500;
  const rtt_ms = 2 * d_ms;
  const horizon = Math.round((o.duration_s ?? 60) * 1000) + 2;
  const cum = cumulativeOpportunities(trace, horizon);
  const at = (ms: number): number => cum[Math.min(horizon, Math.max(0, ms))]!;
  let window_bytes = 10 * pkt;
  let computed_at = Number.NEGATIVE_INFINITY;
  const point = simulatePath(trace, o, "causal", m.headroom_ms, (t, outstanding) => {
    if (t - computed_at >= CAUSAL_RATE_STEP_MS) {
      computed_at = t;
      const known = t - d_ms; // the capacity up to here has been reported
      const rates: number[] = []; // bytes per ms
      for (let s = Math.max(0, known - m.lookback_ms); s + CAUSAL_RATE_SPAN_MS <= known; s += CAUSAL_RATE_STEP_MS)
        rates.push(((at(s + CAUSAL_RATE_SPAN_MS) - at(s)) * MAHIMAHI_PACKET_BYTES) / CAUSAL_RATE_SPAN_MS);
      if (rates.length > 0) window_bytes = Math.max(pkt, percentile(rates, m.quantile) * (rtt_ms + m.headroom_ms));
    }
    return Math.max(0, Math.floor((window_bytes - outstanding) / pkt));
  });
  return { ...point, lookback_ms: m.lookback_ms, quantile: m.quantile };
}

/**
 * The causal family's points over its grid (CAUSAL_LOOKBACKS_MS × CAUSAL_QUANTILES ×
 * CAUSAL_HEADROOMS_MS unless `members` is given), in that order.
 * @param trace opportunity offsets, ms (parseMahimahiTrace)
 */
export function causalFrontPoints(trace: Uint32Array, opts: FrontierOptions = {}, members?: readonly CausalMember[]): FrontierPoint[] {
  const grid: CausalMember[] = [];
  for (const lookback_ms of CAUSAL_LOOKBACKS_MS) for (const quantile of CAUSAL_QUANTILES) for (const headroom_ms of CAUSAL_HEADROOMS_MS) grid.push({ lookback_ms, quantile, headroom_ms });
  return (members ?? grid).map((m) => causalWindowPoint(trace, m, opts));
}

/**
 * The families' points over the headroom grid (module doc).
 * @param trace opportunity offsets, ms (parseMahimahiTrace)
 * @returns one point per family and headroom: `opts.families` in order, each over `opts.headrooms_ms`
 */
export function frontierPoints(trace: Uint32Array, opts: FrontierOptions = {}): FrontierPoint[] {
  const hs = opts.headrooms_ms ?? FRONTIER_HEADROOMS_MS;
  const out: FrontierPoint[] = [];
  for (const f of opts.families ?? FRONTIER_FAMILIES) {
    if (f === "causal") throw new RangeError("frontierPoints: the causal family is not part of the frontier (causalFrontPoints)");
    for (const h of hs) out.push(f === "window" ? omniscientWindowPoint(trace, h, opts) : omniscientPacedPoint(trace, h, opts));
  }
  return out;
}

/**
 * The lower-left envelope of `points`: the points not dominated by another (one with utilization
 * at least as high and p95 at most as high), sorted by utilization ascending (p95 then ascending
 * too). Points with a NaN p95 are left out.
 */
export function frontierEnvelope(points: readonly FrontierPoint[]): FrontierPoint[] {
  const ok = points.filter((p) => Number.isFinite(p.p95_ms) && Number.isFinite(p.utilization));
  // By utilization descending; keep a point when its p95 is below every point of higher utilization.
  const s = [...ok].sort((a, b) => b.utilization - a.utilization || a.p95_ms - b.p95_ms);
  const out: FrontierPoint[] = [];
  let best = Number.POSITIVE_INFINITY;
  for (const p of s) {
    if (p.p95_ms < best) {
      out.push(p);
      best = p.p95_ms;
    }
  }
  return out.reverse();
}

/**
 * The frontier's p95 queuing delay at utilization `u`, ms: on the envelope of `points`
 * (frontierEnvelope), the least p95 among points with utilization ≥ u, interpolated linearly
 * in utilization between neighbouring envelope points (so it is non-decreasing in u). Below the
 * lowest envelope point's utilization it is that point's p95.
 * @param points the family's points (any order; the envelope is taken here)
 * @param u utilization, 0..1
 * @returns p95, ms; NaN when u is above every point's utilization (or there is no point)
 */
export function frontierP95AtUtilization(points: readonly FrontierPoint[], u: number): number {
  const env = frontierEnvelope(points);
  if (env.length === 0 || !(u <= env[env.length - 1]!.utilization)) return Number.NaN;
  if (u <= env[0]!.utilization) return env[0]!.p95_ms;
  for (let i = 1; i < env.length; i++) {
    const a = env[i - 1]!;
    const b = env[i]!;
    if (u <= b.utilization) {
      const f = (u - a.utilization) / (b.utilization - a.utilization);
      return a.p95_ms + f * (b.p95_ms - a.p95_ms);
    }
  }
  return env[env.length - 1]!.p95_ms;
}
