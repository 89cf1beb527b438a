/**
 * simulateBulk (bulk.ts) advanced one decision interval at a time, so that an outside agent (the
 * Nuwa-RL trainer, nuwa-rl-journal §V) can change k between intervals and read what the interval
 * did. It runs the one simulator engine (engine.ts) with simulateBulk's flow, so the agent trains
 * on the model the defaults are swept on; `stepper.test.ts` checks that stepping to the end gives
 * simulateBulk's figures exactly, with and without k changes. `e2e/src/rl-stepper.ts` serves it
 * over JSON lines to Python (models/nuwa_rl/sim.py).
 */
import type { NuwaConfig } from "../config.js";
import type { NuwaController } from "../controller.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { Engine } from "./engine.js";

export interface StepperOptions {
  trace: Uint32Array;
  /** Start this far into the trace's schedule (the schedule is rotated, then loops), ms. */
  trace_start_ms?: number;
  /** One-way propagation delay each way, ms. */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets. */
  queue_packets?: number;
  /** Frame payload, bytes. */
  payload_bytes?: number;
  /** Bytes added per packet on the wire (QUIC + UDP + IPv4 headers), bytes. */
  wire_overhead_bytes?: number;
  /** Controller settings (a controller is required: the stepper exists to tune it). */
  config?: Partial<NuwaConfig>;
  /** Grant interval, ms. */
  grant_interval_ms?: number;
  /** Keep every packet's true queuing delay in `queuing_delays_ms` (for percentiles over a run). */
  record_queuing_delays?: boolean;
  /** Pacing gain (flow.ts; default 2, Infinity: no pacing). */
  pacing_gain?: number;
  /** Cap the sender by the loss-based ceiling (default true). */
  ceiling?: boolean;
}

/** What one decision interval did. Truth from the link, plus what the receiver itself saw. */
export interface IntervalStats {
  /** Simulated time at the end of the interval, ms. */
  t_ms: number;
  interval_ms: number;
  /** k in force during the interval, MSS per RTT. */
  aggressiveness_mss: number;
  /** Wire bytes the bottleneck carried in the interval (`TraceLink.served_bytes`: a packet counts as its bytes leave), bytes. */
  delivered_bytes: number;
  /** Frame bytes the receiver got in the interval (what a browser counts), bytes. */
  received_frame_bytes: number;
  /** Opportunity bytes the trace offered in the interval, bytes. */
  capacity_bytes: number;
  /** Window at the end of the interval, bytes. */
  window_bytes: number;
  /** Controller phase at the end of the interval. */
  phase: string;
  /** Packets that left the bottleneck in the interval. */
  departed_packets: number;
  /** Sum of their true queuing delays (departure − enqueue), ms; mean = sum / departed_packets. */
  queuing_delay_sum_ms: number;
  /** Largest true queuing delay in the interval, ms (0 if none departed). */
  queuing_delay_max_ms: number;
  /** Controller's raw Eq. 1 queuing delay of the last frame received (observable in a browser), ms. */
  last_raw_queuing_delay_ms: number;
  /** True one-way delay of the last packet received: propagation + queuing, ms (NaN if none yet). */
  last_one_way_delay_ms: number;
  /** Packets sent into the path in the interval (new frames and retransmissions, as simulateBulk's loss_rate counts them). */
  sent_packets: number;
  /** Packets the drop-tail queue refused in the interval. */
  dropped_packets: number;
}

/**
 * Rotate a Mahimahi schedule so it starts `start_ms` into the period (then loops as before).
 * @returns a schedule of the same period and opportunity count
 * @throws RangeError if start_ms is not an integer in [0, period)
 */
export function rotateTrace(trace: Uint32Array, start_ms: number): Uint32Array {
  const period = trace[trace.length - 1]!;
  if (!Number.isInteger(start_ms) || start_ms < 0 || start_ms >= period) throw new RangeError(`rotateTrace: start_ms must be an integer in [0, ${period}) (got ${start_ms})`);
  if (start_ms === 0) return trace;
  const out: number[] = [];
  for (const t of trace) if (t > start_ms) out.push(t - start_ms); // the rest of this loop
  for (const t of trace) if (t <= start_ms) out.push(t + period - start_ms); // the start of the next loop
  if (out[out.length - 1] !== period) out.push(period); // keep the loop period (adds at most one opportunity)
  return Uint32Array.from(out);
}

/** simulateBulk, one interval at a time. Deterministic for a given input and k sequence. */
export class BulkStepper {
  readonly controller: NuwaController;
  private readonly eng: Engine;
  private readonly delay_ms: number;
  private last_raw_qd_ms = 0;
  private last_owd_ms = Number.NaN;
  private readonly record_qd: boolean;
  private acc = { received: 0, departed: 0, qd_sum: 0, qd_max: 0 };
  /** True queuing delay of every packet that left the bottleneck, in order, ms (only with record_queuing_delays). */
  readonly queuing_delays_ms: number[] = [];

  /** @throws RangeError on a bad config (resolveConfig) or trace start */
  constructor(o: StepperOptions) {
    this.delay_ms = o.one_way_delay_ms ?? 25;
    this.record_qd = o.record_queuing_delays ?? false;
    this.eng = new Engine(
      { trace: rotateTrace(o.trace, o.trace_start_ms ?? 0), one_way_delay_ms: this.delay_ms, queue_packets: o.queue_packets },
      [
        {
          policy: "grants",
          config: o.config ?? {},
          frame_bytes: FRAME_HEADER_BYTES + (o.payload_bytes ?? 1200),
          wire_overhead_bytes: o.wire_overhead_bytes,
          grant_interval_ms: o.grant_interval_ms,
          pacing_gain: o.pacing_gain,
          ceiling: o.ceiling,
        },
      ],
      (_i, r, dec) => {
        const qd = r.depart_ms - r.enqueue_ms;
        this.acc.departed++;
        this.acc.qd_sum += qd;
        if (qd > this.acc.qd_max) this.acc.qd_max = qd;
        if (this.record_qd) this.queuing_delays_ms.push(qd);
        this.acc.received += r.data.frame_bytes;
        this.last_raw_qd_ms = dec!.raw_queuing_delay_ms;
        this.last_owd_ms = qd + this.delay_ms;
      },
    );
    this.controller = this.eng.flows[0]!.controller!;
  }

  /** Simulated time, ms (the next tick to run). */
  get nowMs(): number {
    return this.eng.nowMs;
  }

  /**
   * Set k (nuwa-icpads Eq. 3; the journal's Eq. 11 keeps it in [1, 9], which the caller enforces).
   * @throws RangeError if the controller rejects it
   */
  setAggressiveness(k_mss: number): void {
    this.controller.setParams({ aggressiveness_mss: k_mss });
  }

  /**
   * Run `interval_ms` 1 ms ticks of the engine.
   * @throws RangeError if interval_ms is not a positive integer
   */
  advance(interval_ms: number): IntervalStats {
    if (!Number.isInteger(interval_ms) || interval_ms <= 0) throw new RangeError(`advance: interval_ms must be a positive integer (got ${interval_ms})`);
    const link = this.eng.link;
    const flow = this.eng.flows[0]!;
    const cap0 = link.capacity_bytes;
    const del0 = link.served_bytes;
    const drop0 = flow.dropped_packets;
    const sent0 = this.eng.sentPackets;
    this.acc = { received: 0, departed: 0, qd_sum: 0, qd_max: 0 };
    const k = this.controller.config.aggressiveness_mss;
    const end = this.eng.nowMs + interval_ms;
    this.eng.runUntil(end);
    return {
      t_ms: end,
      interval_ms,
      aggressiveness_mss: k,
      delivered_bytes: link.served_bytes - del0,
      received_frame_bytes: this.acc.received,
      capacity_bytes: link.capacity_bytes - cap0,
      window_bytes: this.controller.windowBytes,
      phase: this.controller.currentPhase,
      departed_packets: this.acc.departed,
      queuing_delay_sum_ms: this.acc.qd_sum,
      queuing_delay_max_ms: this.acc.qd_max,
      last_raw_queuing_delay_ms: this.last_raw_qd_ms,
      last_one_way_delay_ms: this.last_owd_ms,
      sent_packets: this.eng.sentPackets - sent0,
      dropped_packets: flow.dropped_packets - drop0,
    };
  }
}
