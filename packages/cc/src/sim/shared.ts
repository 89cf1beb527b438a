/**
 * Several Nuwa receivers sharing one Mahimahi drop-tail bottleneck, under a
 * simulated clock: the fairness experiment of issue 7 (Jain's index) in
 * milliseconds of CPU. Each flow is what simulateBulk models for one: a sender
 * that obeys its receiver's grants, QUIC loss repair with head-of-line
 * blocking (QuicRepair), and the real NuwaController at its receiver. Flows
 * may start at different times (a latecomer joins a standing queue).
 *
 * Time step 1 ms; within a millisecond the flows' packets reach the queue in
 * an order that rotates every step, so no flow is always first.
 */

import type { NuwaConfig } from "../config.js";
import { NuwaController } from "../controller.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { percentile } from "./bulk.js";
import { TraceLink } from "./link.js";
import { QuicRepair } from "./repair.js";

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

interface Pkt {
  flow: number;
  send_us: number;
  frame_bytes: number;
  seq: number;
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

/** Run the shared-bottleneck simulation. Deterministic for a given input. */
export function simulateShared(o: SharedSimOptions): SharedSimResult {
  if (o.flows.length === 0) throw new RangeError("simulateShared: no flows");
  const delay_ms = o.one_way_delay_ms ?? 25;
  const frame_bytes = FRAME_HEADER_BYTES + 1200;
  const wire_bytes = frame_bytes + 50;
  const end_ms = o.duration_s * 1000;
  const fair_ms = (o.fair_from_s ?? 0) * 1000;
  const grant_every_ms = o.grant_interval_ms ?? 5;
  const link = new TraceLink<Pkt>(o.trace, o.queue_packets ?? 1000);
  const flows = o.flows.map((f) => ({
    start_ms: Math.round(f.start_s * 1000),
    ctl: new NuwaController(f.config ?? {}),
    repair: new QuicRepair<Pkt>(delay_ms),
    downlink: [] as { at_ms: number; p: Pkt }[],
    dl_head: 0,
    grants: [] as { at_ms: number; cum: number; window: number }[],
    g_head: 0,
    next_seq: 0,
    sent_bytes: 0,
    granted_cum: 0,
    granted_window: 0,
    read_bytes_fair: 0,
  }));
  for (const f of flows) {
    f.granted_window = f.ctl.windowBytes;
    f.ctl.onRttSample(2 * delay_ms * 1000);
  }
  let cap0 = 0;
  let del0 = 0;
  let sent = 0;
  let dropped = 0;
  const true_qd: number[] = [];
  for (let t = 0; t < end_ms; t++) {
    if (t === fair_ms) {
      cap0 = link.capacity_bytes;
      del0 = link.delivered_bytes;
    }
    for (let k = 0; k < flows.length; k++) {
      const i = (k + t) % flows.length;
      const f = flows[i]!;
      if (t < f.start_ms) continue;
      while (f.g_head < f.grants.length && f.grants[f.g_head]!.at_ms <= t) {
        const g = f.grants[f.g_head++]!;
        f.granted_cum = g.cum;
        f.granted_window = g.window;
      }
      while ((f.sent_bytes - f.granted_cum <= 0 || f.sent_bytes - f.granted_cum + frame_bytes <= f.granted_window)) {
        f.downlink.push({ at_ms: t + delay_ms, p: { flow: i, send_us: t * 1000, frame_bytes, seq: f.next_seq++ } });
        f.sent_bytes += frame_bytes;
      }
      while (f.dl_head < f.downlink.length && f.downlink[f.dl_head]!.at_ms <= t) {
        const d = f.downlink[f.dl_head++]!;
        if (t >= fair_ms) sent++;
        if (!link.enqueue(t, wire_bytes, d.p)) {
          if (t >= fair_ms) dropped++;
          f.repair.onDrop(t, d.at_ms - delay_ms, d.p);
        }
      }
      for (const p of f.repair.due(t)) {
        if (t >= fair_ms) sent++;
        if (!link.enqueue(t, wire_bytes, p)) {
          if (t >= fair_ms) dropped++;
          f.repair.onDrop(t, t - delay_ms, p);
        }
      }
      if (f.dl_head > 8192) {
        f.downlink.splice(0, f.dl_head);
        f.dl_head = 0;
      }
    }
    const deps = link.service(t);
    for (let i = 0; i < flows.length; i++) {
      const f = flows[i]!;
      const mine = deps.filter((d) => d.data.flow === i);
      for (const dep of f.repair.read(mine)) {
        f.ctl.onFrame(dep.data.send_us, dep.read_ms * 1000, dep.data.frame_bytes);
        if (t >= fair_ms) {
          f.read_bytes_fair += dep.data.frame_bytes;
          true_qd.push(dep.depart_ms - dep.enqueue_ms);
        }
      }
      if (t >= f.start_ms) {
        f.ctl.tick(t * 1000);
        if (t % grant_every_ms === 0) f.grants.push({ at_ms: t + delay_ms, cum: f.ctl.cumReceivedBytes, window: f.ctl.windowBytes });
      }
    }
  }
  const span_s = Math.max(1e-3, (end_ms - fair_ms) / 1000);
  const goodput_bps = flows.map((f) => (f.read_bytes_fair * 8) / span_s);
  return {
    goodput_bps,
    jain_index: jainIndex(goodput_bps),
    utilization: (link.delivered_bytes - del0) / Math.max(1, link.capacity_bytes - cap0),
    queuing_delay_ms: { p50: percentile(true_qd, 50), p95: percentile(true_qd, 95) },
    loss_rate: dropped / Math.max(1, sent),
  };
}
