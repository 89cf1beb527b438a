/**
 * The benchmark's simulator (issue 5): the driver of `./nuwa bench`'s SIMULATED matrix and
 * sweeps over the one engine (engine.ts), so its figures come from the same model as
 * simulateBulk, simulateShared and the RL stepper: Mahimahi drop-tail bottleneck, a propagation
 * delay each way, QUIC loss repair (repair.ts), a paced sender with the server's grant rule and
 * loss-based ceiling (flow.ts), the real NuwaController at the receiver.
 *
 * Policies (flow.ts): `nuwa` (window = min(controller's grant, ceiling)), `oracle` (window =
 * min(capacity the link offered over the last base RTT, learned one one-way delay late,
 * ceiling); the emulator/server pair's rule), `aimd` (the ceiling alone: a simulated loss-based
 * sender, a stand-in for cubic, not Cubic's curve).
 */
import type { NuwaConfig } from "../config.js";
import { simulateBulk } from "./bulk.js";

export interface BenchSimOptions {
  trace: Uint32Array;
  duration_s: number;
  policy: "nuwa" | "oracle" | "aimd";
  /** Apply the loss-based ceiling to nuwa/oracle (default true; aimd always has it). */
  ceiling?: boolean;
  /** Controller settings (policy nuwa; the receiver runs the controller under every policy). */
  config?: Partial<NuwaConfig>;
  /** One-way propagation delay each way, ms. */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets. */
  queue_packets?: number;
  /** Frame payload, bytes. */
  payload_bytes?: number;
  /** Bytes added per packet on the wire, bytes. */
  wire_overhead_bytes?: number;
  /** First seconds not counted, s. */
  warmup_s?: number;
  /** Receiver report (grant) period, ms. */
  grant_interval_ms?: number;
  /** Oracle report period, ms. */
  report_interval_ms?: number;
  /** Pacing rate = pacing_gain × window ÷ RTT (dimensionless, > 0; Infinity: no pacing; flow.ts). */
  pacing_gain?: number;
  /** The RTT the grant pacer divides by (flow.ts `pacing_rtt`; default "measured", as the server). */
  pacing_rtt?: "measured" | "base";
}

export interface BenchSimResult {
  utilization: number;
  queuing_delay_ms: { mean: number; p50: number; p95: number };
  loss_rate: number;
  /** |controller raw Qd − true queuing delay| per packet (policy nuwa; the page runs it under oracle too). */
  qd_error_ms: { median: number; p95: number };
  delivered_bytes: number;
  capacity_bytes: number;
}

/**
 * Run one simulated bulk download. Deterministic.
 * @throws RangeError on duration ≤ warm-up, a non-positive interval or pacing gain
 */
export function simulateBench(o: BenchSimOptions): BenchSimResult {
  const grant_ms = o.grant_interval_ms ?? 5;
  const report_ms = o.report_interval_ms ?? 10;
  if (!(o.duration_s > (o.warmup_s ?? 2))) throw new RangeError(`simulateBench: duration_s ${o.duration_s} must exceed the warm-up`);
  if (!(grant_ms >= 1 && report_ms >= 1)) throw new RangeError("simulateBench: intervals must be ≥ 1 ms");
  if (!((o.pacing_gain ?? 2) > 0)) throw new RangeError(`simulateBench: pacing_gain must be > 0 (got ${o.pacing_gain})`);
  const r = simulateBulk({
    trace: o.trace,
    duration_s: o.duration_s,
    policy: o.policy === "nuwa" ? "grants" : o.policy,
    config: o.config ?? {},
    ceiling: o.ceiling,
    one_way_delay_ms: o.one_way_delay_ms,
    queue_packets: o.queue_packets,
    payload_bytes: o.payload_bytes,
    wire_overhead_bytes: o.wire_overhead_bytes,
    warmup_s: o.warmup_s,
    grant_interval_ms: grant_ms,
    report_interval_ms: report_ms,
    pacing_gain: o.pacing_gain,
    pacing_rtt: o.pacing_rtt,
  });
  return {
    utilization: r.utilization,
    queuing_delay_ms: r.queuing_delay_ms,
    loss_rate: r.loss_rate,
    qd_error_ms: r.qd_error_ms,
    delivered_bytes: r.delivered_bytes,
    capacity_bytes: r.capacity_bytes,
  };
}
