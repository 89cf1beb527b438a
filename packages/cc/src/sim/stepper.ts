/**
 * The bulk-download simulation of `bulk.ts`, advanced one decision interval at
 * a time, so that an outside agent (the Nuwa-RL trainer, nuwa-rl-journal §V)
 * can change k between intervals and read what the interval did.
 *
 * The model is the one of `simulateBulk` line for line (1 ms steps, a sender
 * obeying the latest grant, a propagation delay each way, a Mahimahi drop-tail
 * bottleneck, the real NuwaController at the receiver); `stepper.test.ts`
 * checks that stepping to the end gives simulateBulk's figures exactly, with
 * and without k changes. `stepper-cli.ts` serves it over JSON lines to Python.
 */
import type { NuwaConfig } from "../config.js";
import { NuwaController } from "../controller.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { TraceLink } from "./link.js";
import { QuicRepair } from "./repair.js";

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
}

/** What one decision interval did. Truth from the link, plus what the receiver itself saw. */
export interface IntervalStats {
  /** Simulated time at the end of the interval, ms. */
  t_ms: number;
  interval_ms: number;
  /** k in force during the interval, MSS per RTT. */
  aggressiveness_mss: number;
  /** Wire bytes that left the bottleneck in the interval, bytes. */
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
  /** Packets sent into the path in the interval. */
  sent_packets: number;
  /** Packets the drop-tail queue refused in the interval. */
  dropped_packets: number;
}

interface Pkt {
  send_us: number;
  frame_bytes: number;
  seq: number;
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
  private readonly link: TraceLink<Pkt>;
  private readonly delay_ms: number;
  private readonly frame_bytes: number;
  private readonly wire_bytes: number;
  private readonly grant_every_ms: number;
  private readonly downlink: { at_ms: number; p: Pkt }[] = [];
  private dl_head = 0;
  private readonly grants: { at_ms: number; cum: number; window: number }[] = [];
  private g_head = 0;
  private sent_bytes = 0;
  private granted_cum = 0;
  private granted_window: number;
  private t_ms = 0;
  private next_seq = 0;
  private readonly repair: QuicRepair<Pkt>;
  private last_raw_qd_ms = 0;
  private last_owd_ms = Number.NaN;
  private readonly record_qd: boolean;
  /** True queuing delay of every packet that left the bottleneck, in order, ms (only with record_queuing_delays). */
  readonly queuing_delays_ms: number[] = [];

  /** @throws RangeError on a bad config (resolveConfig) or trace start */
  constructor(o: StepperOptions) {
    this.delay_ms = o.one_way_delay_ms ?? 25;
    this.frame_bytes = FRAME_HEADER_BYTES + (o.payload_bytes ?? 1200);
    this.wire_bytes = this.frame_bytes + (o.wire_overhead_bytes ?? 50);
    this.grant_every_ms = o.grant_interval_ms ?? 5;
    this.record_qd = o.record_queuing_delays ?? false;
    this.controller = new NuwaController(o.config ?? {});
    this.link = new TraceLink<Pkt>(rotateTrace(o.trace, o.trace_start_ms ?? 0), o.queue_packets ?? 1000);
    this.repair = new QuicRepair<Pkt>(this.delay_ms);
    this.granted_window = this.controller.windowBytes;
    this.controller.onRttSample(2 * this.delay_ms * 1000);
  }

  /** Simulated time, ms (the next tick to run). */
  get nowMs(): number {
    return this.t_ms;
  }

  /**
   * Set k (nuwa-icpads Eq. 3; the journal's Eq. 11 keeps it in [1, 9], which the caller enforces).
   * @throws RangeError if the controller rejects it
   */
  setAggressiveness(k_mss: number): void {
    this.controller.setParams({ aggressiveness_mss: k_mss });
  }

  /**
   * Run `interval_ms` 1 ms ticks (the loop body of simulateBulk).
   * @throws RangeError if interval_ms is not a positive integer
   */
  advance(interval_ms: number): IntervalStats {
    if (!Number.isInteger(interval_ms) || interval_ms <= 0) throw new RangeError(`advance: interval_ms must be a positive integer (got ${interval_ms})`);
    const ctl = this.controller;
    const link = this.link;
    const cap0 = link.capacity_bytes;
    const del0 = link.delivered_bytes;
    const drop0 = link.dropped_packets;
    let received = 0;
    let departed = 0;
    let qd_sum = 0;
    let qd_max = 0;
    let sent = 0;
    const k = ctl.config.aggressiveness_mss;
    const end = this.t_ms + interval_ms;
    for (let t = this.t_ms; t < end; t++) {
      while (this.g_head < this.grants.length && this.grants[this.g_head]!.at_ms <= t) {
        const g = this.grants[this.g_head++]!;
        this.granted_cum = g.cum;
        this.granted_window = g.window;
      }
      if (this.g_head > 8192) {
        this.grants.splice(0, this.g_head);
        this.g_head = 0;
      }
      const sender_clock_us = t * 1000;
      let budget = 10_000;
      while (budget-- > 0 && (this.sent_bytes - this.granted_cum <= 0 || this.sent_bytes - this.granted_cum + this.frame_bytes <= this.granted_window)) {
        this.downlink.push({ at_ms: t + this.delay_ms, p: { send_us: sender_clock_us, frame_bytes: this.frame_bytes, seq: this.next_seq++ } });
        this.sent_bytes += this.frame_bytes;
        sent++;
      }
      while (this.dl_head < this.downlink.length && this.downlink[this.dl_head]!.at_ms <= t) {
        const d = this.downlink[this.dl_head++]!;
        if (!link.enqueue(t, this.wire_bytes, d.p)) this.repair.onDrop(t, d.at_ms - this.delay_ms, d.p);
      }
      for (const p of this.repair.due(t)) if (!link.enqueue(t, this.wire_bytes, p)) this.repair.onDrop(t, t - this.delay_ms, p);
      if (this.dl_head > 8192) {
        this.downlink.splice(0, this.dl_head);
        this.dl_head = 0;
      }
      for (const dep of this.repair.read(link.service(t))) {
        const dec = ctl.onFrame(dep.data.send_us, dep.read_ms * 1000, dep.data.frame_bytes);
        const qd = dep.depart_ms - dep.enqueue_ms;
        departed++;
        qd_sum += qd;
        if (qd > qd_max) qd_max = qd;
        if (this.record_qd) this.queuing_delays_ms.push(qd);
        received += dep.data.frame_bytes;
        this.last_raw_qd_ms = dec.raw_queuing_delay_ms;
        this.last_owd_ms = qd + this.delay_ms;
      }
      ctl.tick(t * 1000);
      if (t % this.grant_every_ms === 0) this.grants.push({ at_ms: t + this.delay_ms, cum: ctl.cumReceivedBytes, window: ctl.windowBytes });
    }
    this.t_ms = end;
    return {
      t_ms: end,
      interval_ms,
      aggressiveness_mss: k,
      delivered_bytes: link.delivered_bytes - del0,
      received_frame_bytes: received,
      capacity_bytes: link.capacity_bytes - cap0,
      window_bytes: ctl.windowBytes,
      phase: ctl.currentPhase,
      departed_packets: departed,
      queuing_delay_sum_ms: qd_sum,
      queuing_delay_max_ms: qd_max,
      last_raw_queuing_delay_ms: this.last_raw_qd_ms,
      last_one_way_delay_ms: this.last_owd_ms,
      sent_packets: sent,
      dropped_packets: link.dropped_packets - drop0,
    };
  }
}
