/**
 * Several Nuwa receivers sharing one Mahimahi drop-tail bottleneck in the simulator engine
 * (engine.ts): the fairness experiment of issue 7 (Jain's index) in milliseconds of CPU. Each flow
 * is what simulateBulk runs for one (a paced sender with the server's grant rule and loss-based
 * ceiling, QUIC loss repair, the real NuwaController at its receiver); one flow here is exactly
 * simulateBulk. Flows may start at different times (a latecomer joins a standing queue); within a
 * millisecond the flows reach the queue in an order that rotates every ms.
 */

import type { NuwaConfig } from "../config.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { Engine } from "./engine.js";
import { percentile } from "./stats.js";

export interface SharedFlowSpec {
  /** When the flow starts, s. */
  start_s: number;
  /** Controller settings of this flow. */
  config?: Partial<NuwaConfig>;
}

export interface SharedSimOptions {
  trace: Uint32Array;
  duration_s: number;
  flows: readonly SharedFlowSpec[];
  /** One-way propagation delay each way, ms. */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets. */
  queue_packets?: number;
  /** Goodput for the fairness index is counted from this time, s. */
  fair_from_s?: number;
  /** Grant interval, ms. */
  grant_interval_ms?: number;
  /** Pacing gain of every sender (flow.ts; default 2, Infinity: no pacing). */
  pacing_gain?: number;
  /** The RTT every sender's pacer divides by (flow.ts `pacing_rtt`; default "measured", as the server). */
  pacing_rtt?: "measured" | "base";
  /** Cap every sender by the loss-based ceiling (default true). */
  ceiling?: boolean;
}

export interface SharedSimResult {
  /** Per flow goodput from fair_from_s to the end, bits per second. */
  goodput_bps: number[];
  /** Jain's index over goodput_bps (Jain, Chiu, Hawe 1984, Eq. 1). */
  jain_index: number;
  /** Link utilization from fair_from_s, fraction of offered capacity. */
  utilization: number;
  /** True queuing delay of all packets from fair_from_s, ms. */
  queuing_delay_ms: { p50: number; p95: number };
  loss_rate: number;
}

/**
 * Jain's fairness index (Σx)² / (n·Σx²) (Jain, Chiu, Hawe 1984, Eq. 1).
 * @throws RangeError on an empty list, a negative or non-finite value, or all zeros.
 */
export function jainIndex(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError("jainIndex: no values");
  let s = 0;
  let s2 = 0;
  for (const x of xs) {
    if (!(x >= 0) || !Number.isFinite(x)) throw new RangeError(`jainIndex: values must be finite and >= 0, got ${x}`);
    s += x;
    s2 += x * x;
  }
  if (s2 === 0) throw new RangeError("jainIndex: all values are zero");
  return (s * s) / (xs.length * s2);
}

/**
 * Run the shared-bottleneck simulation. Deterministic for a given input.
 * @throws RangeError without flows, or on a bad controller config
 */
export function simulateShared(o: SharedSimOptions): SharedSimResult {
  if (o.flows.length === 0) throw new RangeError("simulateShared: no flows");
  const end_ms = o.duration_s * 1000;
  const fair_ms = (o.fair_from_s ?? 0) * 1000;
  const true_qd: number[] = [];
  const eng = new Engine(
    { trace: o.trace, one_way_delay_ms: o.one_way_delay_ms, queue_packets: o.queue_packets },
    o.flows.map((f) => ({
      policy: "grants" as const,
      config: f.config ?? {},
      start_ms: Math.round(f.start_s * 1000),
      frame_bytes: FRAME_HEADER_BYTES + 1200,
      grant_interval_ms: o.grant_interval_ms,
      pacing_gain: o.pacing_gain,
      pacing_rtt: o.pacing_rtt,
      ceiling: o.ceiling,
    })),
    (_i, r, _dec, t) => {
      if (t >= fair_ms) true_qd.push(r.depart_ms - r.enqueue_ms);
    },
  );
  let cap0 = 0;
  let del0 = 0;
  let sent0 = 0;
  let drop0 = 0;
  let read0: number[] = eng.flows.map(() => 0);
  const dropped = () => eng.flows.reduce((a, f) => a + f.dropped_packets, 0);
  for (let t = 0; t < end_ms; t++) {
    if (t === fair_ms) {
      cap0 = eng.link.capacity_bytes;
      del0 = eng.link.served_bytes;
      sent0 = eng.sentPackets;
      drop0 = dropped();
      read0 = eng.flows.map((f) => f.read_bytes);
    }
    eng.tick();
  }
  const span_s = Math.max(1e-3, (end_ms - fair_ms) / 1000);
  const goodput_bps = eng.flows.map((f, i) => ((f.read_bytes - read0[i]!) * 8) / span_s);
  return {
    goodput_bps,
    jain_index: jainIndex(goodput_bps),
    utilization: (eng.link.served_bytes - del0) / Math.max(1, eng.link.capacity_bytes - cap0),
    queuing_delay_ms: { p50: percentile(true_qd, 50), p95: percentile(true_qd, 95) },
    loss_rate: (dropped() - drop0) / Math.max(1, eng.sentPackets - sent0),
  };
}
