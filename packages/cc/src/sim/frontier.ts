/**
 * The offline frontier of a trace (issue 14): the lowest p95 queuing delay at which a sender of
 * the family of OMNISCIENT WINDOW SENDERS reaches a given utilization (docs/DESIGN.md §7,
 * "The offline frontier").
 *
 * A literal "any window schedule" frontier is 0 ms: a sender that knows the trace can time every
 * packet to reach the bottleneck at its own delivery opportunity (an ACK-clocked window equal to
 * the capacity over (t − d_up, t + d_down] does exactly that). The family here is instead the
 * window a perfect forecaster of the next round trip would set: at each instant t the window is
 * the capacity the trace will offer over (t + d_down + a, t + d_down + a + RTT_base + h] (bytes,
 * known in advance), for a headroom h swept over a grid (a = 0 by default: the round trip that
 * packets sent now will meet; a is `offset_ms`). It is the window of a "deliver what the link will
 * carry in the next RTT" controller with a perfect forecast (cf. Sprout, Winstein et al. NSDI 2013
 * §3, whose window is the forecast of what drains within the target delay). Each h gives one
 * (utilization, p95 queuing delay) point over the same path model as the benchmark: 25 ms one way
 * each way, a Mahimahi drop-tail queue of 1000 packets (TraceLink), 1500-byte packets on the wire,
 * ACKs back at departure + d_up, a 2 s warm-up, utilization = delivered ÷ offered capacity and
 * queuing delay = departure − enqueue per packet, as bulk.ts computes them.
 *
 * The family under-fills before a drop in capacity: its window shrinks as fast as ACKs return from
 * RTT_base + h ahead of the drop, so the queue empties one RTT_base early unless h spans the dip
 * (on a trace with 100 ms gaps full utilization needs h ≥ 100 ms, at p95 = RTT_base + gap:
 * frontier.test.ts works it by hand). A burst enters the window d_down + RTT_base ahead, so its
 * packets reach the queue about RTT_base early: on bursty traces every point queues ≈ RTT_base + h
 * (p95 50 ms at h = 0 on the burst variants of traces/README.md), a loose bound there.
 *
 * The frontier is the lower-left envelope of the points. Because it is the best of one family,
 * not of every window schedule, it is an UPPER BOUND on the true frontier of all window schedules
 * (which is 0 ms): a scheme beating it is possible, and a ratio to it says how far a scheme is from
 * a perfect-forecast window sender, not from the physical limit.
 */
import { percentile } from "./bulk.js";
import { TraceLink } from "./link.js";
import { MAHIMAHI_PACKET_BYTES } from "./trace.js";

/** Headroom grid of the frontier, ms (issue 14). */
export const FRONTIER_HEADROOMS_MS: readonly number[] = [0, 2, 5, 10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 500];

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
  /**
   * Shift a of the forecast interval, ms (default 0): the window at t is the capacity over
   * (t + d_down + a, t + d_down + a + RTT_base + h]. a = −RTT_base makes the sender the omniscient
   * scheduler (p95 ≈ 0 at full utilization), which is why the family keeps a = 0.
   */
  offset_ms?: number;
}

/** One member of the family: its headroom and what it achieved. */
export interface FrontierPoint {
  /** Headroom h, ms. */
  headroom_ms: number;
  /** Delivered ÷ offered capacity after the warm-up, 0..1. */
  utilization: number;
  /** p95 of per-packet queuing delay after the warm-up, ms (NaN if nothing was delivered). */
  p95_ms: number;
  /** Dropped ÷ sent packets after the warm-up, 0..1. */
  loss_rate: number;
}

/**
 * Simulate one omniscient window sender (see the module doc) over `trace`.
 * @param trace opportunity offsets, ms (parseMahimahiTrace); looped as Mahimahi does
 * @param headroom_ms h, ms (≥ 0)
 * @returns its point (utilization, p95 queuing delay in ms, loss rate)
 * @throws RangeError for a negative headroom or a non-positive duration
 */
export function omniscientWindowPoint(trace: Uint32Array, headroom_ms: number, o: FrontierOptions = {}): FrontierPoint {
  if (!(headroom_ms >= 0)) throw new RangeError(`omniscientWindowPoint: headroom_ms must be ≥ 0 (got ${headroom_ms})`);
  const duration_ms = Math.round((o.duration_s ?? 60) * 1000);
  if (!(duration_ms > 0)) throw new RangeError(`omniscientWindowPoint: duration_s must be > 0 (got ${o.duration_s})`);
  const d_ms = o.one_way_delay_ms ?? 25;
  const pkt = o.packet_bytes ?? 1500;
  const warmup_ms = (o.warmup_s ?? 2) * 1000;
  const rtt_ms = 2 * d_ms;
  const lo_off = d_ms + (o.offset_ms ?? 0); // window interval (t + lo_off, t + lo_off + rtt + h]
  const hi_off = lo_off + rtt_ms + headroom_ms;
  // Opportunities per ms of the looped trace, then a prefix sum: cum[m] = opportunities at ms ≤ m − 1.
  const horizon = duration_ms + Math.max(0, hi_off) + 2;
  const cum = new Float64Array(horizon + 1);
  {
    const per = new Uint32Array(horizon);
    const period = trace[trace.length - 1]!;
    for (let base = 0; base < horizon; base += period)
      for (const off of trace) {
        const m = base + off;
        if (m >= horizon) break;
        per[m]!++;
      }
    for (let m = 0; m < horizon; m++) cum[m + 1] = cum[m]! + per[m]!;
  }
  // Opportunities at integer ms in (a, b], a ≤ b (none before 0 or past the horizon).
  const opps = (a: number, b: number): number => {
    const ia = Math.min(horizon, Math.max(0, Math.floor(a) + 1));
    const ib = Math.min(horizon, Math.max(0, Math.floor(b) + 1));
    return cum[ib]! - cum[ia]!;
  };
  const link = new TraceLink<null>(new Uint32Array(trace), o.queue_packets ?? 1000);
  const pipe: number[] = []; // arrival times at the queue, ms (FIFO)
  let pipe_head = 0;
  const acks: { at_ms: number; bytes: number }[] = []; // ACKs (and loss notices) on their way back
  let ack_head = 0;
  let outstanding_bytes = 0;
  let cap0 = 0;
  let del0 = 0;
  let sent = 0;
  let dropped = 0;
  const qd: number[] = [];
  for (let t = 0; t < duration_ms; t++) {
    if (t === warmup_ms) {
      cap0 = link.capacity_bytes;
      del0 = link.delivered_bytes;
    }
    while (ack_head < acks.length && acks[ack_head]!.at_ms <= t) outstanding_bytes -= acks[ack_head++]!.bytes;
    // The window: the capacity the trace will offer over (t + lo_off, t + hi_off], bytes.
    const window_bytes = opps(t + lo_off, t + hi_off) * MAHIMAHI_PACKET_BYTES;
    while (outstanding_bytes + pkt <= window_bytes) {
      pipe.push(t + d_ms);
      outstanding_bytes += pkt;
      if (t >= warmup_ms) sent++;
    }
    while (pipe_head < pipe.length && pipe[pipe_head]! <= t) {
      pipe_head++;
      // A drop frees the window one uplink delay later (the sender learns of it like an ACK).
      if (!link.enqueue(t, pkt, null)) {
        if (t >= warmup_ms) dropped++;
        acks.push({ at_ms: t + d_ms, bytes: pkt });
      }
    }
    for (const dep of link.service(t)) {
      acks.push({ at_ms: t + d_ms, bytes: dep.size_bytes });
      if (t >= warmup_ms) qd.push(dep.depart_ms - dep.enqueue_ms);
    }
    if (pipe_head > 8192) {
      pipe.splice(0, pipe_head);
      pipe_head = 0;
    }
    if (ack_head > 8192) {
      acks.splice(0, ack_head);
      ack_head = 0;
    }
  }
  return {
    headroom_ms,
    utilization: (link.delivered_bytes - del0) / Math.max(1, link.capacity_bytes - cap0),
    p95_ms: percentile(qd, 95),
    loss_rate: dropped / Math.max(1, sent),
  };
}

/**
 * The family's points over the headroom grid (module doc).
 * @param trace opportunity offsets, ms (parseMahimahiTrace)
 * @returns one point per headroom, in the order of `opts.headrooms_ms`
 */
export function frontierPoints(trace: Uint32Array, opts: FrontierOptions = {}): FrontierPoint[] {
  return (opts.headrooms_ms ?? FRONTIER_HEADROOMS_MS).map((h) => omniscientWindowPoint(trace, h, opts));
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
