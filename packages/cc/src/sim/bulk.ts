/**
 * Bulk download of one flow in the simulator engine (engine.ts: Mahimahi drop-tail bottleneck, a
 * propagation delay each way, QUIC loss repair, a sender with the server's grant rule, pacing and
 * loss-based ceiling, the real NuwaController at the receiver). Seconds of traffic in
 * milliseconds of CPU; the same controller code that runs in the browser.
 *
 * Frames are FRAME_HEADER_BYTES + payload; the link counts the frame bytes plus a per-packet
 * overhead (QUIC/UDP/IP) as on the wire. Figures count from the end of the warm-up.
 */

import type { NuwaConfig } from "../config.js";
import type { NuwaController } from "../controller.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { Engine } from "./engine.js";
import type { SenderPolicy } from "./flow.js";
import { mean, percentile } from "./stats.js";

export { percentile } from "./stats.js";

export interface BulkSimOptions {
  trace: Uint32Array;
  duration_s: number;
  /** One-way propagation delay each way, ms. */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets. */
  queue_packets?: number;
  /** Frame payload, bytes. */
  payload_bytes?: number;
  /** Bytes added per packet on the wire (QUIC + UDP + IPv4 headers), bytes. */
  wire_overhead_bytes?: number;
  /** Controller settings; `null` runs a sender with no window (fills the queue: a loss-based stand-in). */
  config?: Partial<NuwaConfig> | null;
  /** Sender policy (flow.ts; default "grants", or "fill" when config is null). */
  policy?: Exclude<SenderPolicy, "schedule">;
  /** Sender clock = (1 + clock_drift) · true time + clock_offset_us. */
  clock_offset_us?: number;
  clock_drift?: number;
  /** First seconds not counted in the metrics, s. */
  warmup_s?: number;
  /** Called every simulated ms with the controller (tests, sweeps). */
  onTick?: (t_ms: number, c: NuwaController | null) => void;
  /** Grant interval, ms. */
  grant_interval_ms?: number;
  /** Oracle report period, ms (policy oracle). */
  report_interval_ms?: number;
  /** Pacing rate = pacing_gain × window in force ÷ RTT (default 2, as the server's grant pacer; Infinity: no pacing; flow.ts). */
  pacing_gain?: number;
  /** The RTT the grant pacer divides by (flow.ts `pacing_rtt`; default "measured", as the server). */
  pacing_rtt?: "measured" | "base";
  /** Cap the window by the server's loss-based ceiling (default true, as the server). */
  ceiling?: boolean;
}

export interface BulkSimResult {
  utilization: number;
  queuing_delay_ms: { mean: number; p50: number; p95: number };
  /** Packets dropped ÷ packets sent (retransmissions included), after the warm-up. */
  loss_rate: number;
  qd_error_ms: { median: number; p95: number };
  kalman_qd_error_ms: { median: number; p95: number };
  /** Bytes the link carried after the warm-up (`TraceLink.served_bytes`' rise), bytes. */
  delivered_bytes: number;
  /** Bytes its opportunities offered after the warm-up, bytes. */
  capacity_bytes: number;
  /** Per-packet truth after warm-up: [depart_ms, true queuing delay ms, controller raw Qd ms]. */
  samples: Float64Array;
}

/**
 * Run the bulk-download simulation. Deterministic for a given input.
 * @throws RangeError on a bad controller config or pacing gain
 */
export function simulateBulk(o: BulkSimOptions): BulkSimResult {
  const warmup_ms = (o.warmup_s ?? 2) * 1000;
  const end_ms = o.duration_s * 1000;
  const true_qd: number[] = [];
  const est_qd: number[] = [];
  const kal_qd: number[] = [];
  const samples: number[] = [];
  const eng = new Engine(
    { trace: o.trace, one_way_delay_ms: o.one_way_delay_ms, queue_packets: o.queue_packets },
    [
      {
        policy: o.policy ?? (o.config === null ? "fill" : "grants"),
        config: o.config ?? {},
        frame_bytes: FRAME_HEADER_BYTES + (o.payload_bytes ?? 1200),
        wire_overhead_bytes: o.wire_overhead_bytes,
        clock_offset_us: o.clock_offset_us,
        clock_drift: o.clock_drift,
        grant_interval_ms: o.grant_interval_ms,
        report_interval_ms: o.report_interval_ms,
        pacing_gain: o.pacing_gain,
        pacing_rtt: o.pacing_rtt,
        ceiling: o.ceiling,
      },
    ],
    (_i, r, dec, t) => {
      if (t < warmup_ms) return;
      const truth = r.depart_ms - r.enqueue_ms;
      true_qd.push(truth);
      if (dec) {
        est_qd.push(Math.abs(dec.raw_queuing_delay_ms - truth));
        kal_qd.push(Math.abs(dec.kalman_queuing_delay_ms - truth));
      }
      samples.push(r.depart_ms, truth, dec ? dec.raw_queuing_delay_ms : Number.NaN);
    },
  );
  const flow = eng.flows[0]!;
  let cap0 = 0;
  let del0 = 0;
  let sent0 = 0;
  let drop0 = 0;
  for (let t = 0; t < end_ms; t++) {
    if (t === warmup_ms) {
      cap0 = eng.link.capacity_bytes;
      del0 = eng.link.served_bytes;
      sent0 = eng.sentPackets;
      drop0 = flow.dropped_packets;
    }
    eng.tick();
    o.onTick?.(t, flow.controller);
  }
  return {
    utilization: (eng.link.served_bytes - del0) / Math.max(1, eng.link.capacity_bytes - cap0),
    queuing_delay_ms: { mean: mean(true_qd), p50: percentile(true_qd, 50), p95: percentile(true_qd, 95) },
    loss_rate: (flow.dropped_packets - drop0) / Math.max(1, eng.sentPackets - sent0),
    qd_error_ms: { median: percentile(est_qd, 50), p95: percentile(est_qd, 95) },
    kalman_qd_error_ms: { median: percentile(kal_qd, 50), p95: percentile(kal_qd, 95) },
    delivered_bytes: eng.link.served_bytes - del0,
    capacity_bytes: eng.link.capacity_bytes - cap0,
    samples: Float64Array.from(samples),
  };
}
