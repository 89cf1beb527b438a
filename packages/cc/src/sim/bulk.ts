/**
 * In-process trace-driven simulation of a bulk download under Nuwa, with a
 * simulated clock: a sender that obeys the receiver's grants, a propagation
 * delay each way, a Mahimahi drop-tail bottleneck, and the real NuwaController
 * at the receiver. Seconds of traffic in milliseconds of CPU; the same code
 * that runs in the browser.
 *
 * Time step 1 ms. Frames are FRAME_HEADER_BYTES + payload; the link counts the
 * frame bytes plus a per-packet overhead (QUIC/UDP/IP) as on the wire.
 */

import type { NuwaConfig } from "../config.js";
import { NuwaController } from "../controller.js";
import { FRAME_HEADER_BYTES } from "../protocol.js";
import { TraceLink } from "./link.js";
import { QuicRepair } from "./repair.js";

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
  /** Sender clock = (1 + clock_drift) · true time + clock_offset_us. */
  clock_offset_us?: number;
  clock_drift?: number;
  /** First seconds not counted in the metrics, s. */
  warmup_s?: number;
  /** Called every simulated ms with the controller (tests, sweeps). */
  onTick?: (t_ms: number, c: NuwaController | null) => void;
  /** Grant interval, ms. */
  grant_interval_ms?: number;
}

export interface BulkSimResult {
  utilization: number;
  queuing_delay_ms: { mean: number; p50: number; p95: number };
  loss_rate: number;
  qd_error_ms: { median: number; p95: number };
  kalman_qd_error_ms: { median: number; p95: number };
  delivered_bytes: number;
  capacity_bytes: number;
  /** Per-packet truth after warm-up: [depart_ms, true queuing delay ms, controller raw Qd ms]. */
  samples: Float64Array;
}

/** Percentile of an unsorted array (nearest rank), or NaN if empty. */
export function percentile(xs: ArrayLike<number>, q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = Float64Array.from(xs as ArrayLike<number>).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.round((q / 100) * (s.length - 1))))]!;
}

interface Pkt {
  send_us: number; // sender clock
  frame_bytes: number;
  seq: number; // stream order: the receiver reads frames in this order (one QUIC stream)
}

/** Run the bulk-download simulation. Deterministic for a given input. */
export function simulateBulk(o: BulkSimOptions): BulkSimResult {
  const delay_ms = o.one_way_delay_ms ?? 25;
  const payload = o.payload_bytes ?? 1200;
  const frame_bytes = FRAME_HEADER_BYTES + payload;
  const wire_bytes = frame_bytes + (o.wire_overhead_bytes ?? 50);
  const warmup_ms = (o.warmup_s ?? 2) * 1000;
  const end_ms = o.duration_s * 1000;
  const grant_every_ms = o.grant_interval_ms ?? 5;
  const offset = o.clock_offset_us ?? 0;
  const drift = o.clock_drift ?? 0;
  const ctl = o.config === null ? null : new NuwaController(o.config ?? {});
  const link = new TraceLink<Pkt>(o.trace, o.queue_packets ?? 1000);
  const downlink: { at_ms: number; p: Pkt }[] = []; // propagation delay line before the queue
  let dl_head = 0;
  let next_seq = 0;
  const repair = new QuicRepair<Pkt>(delay_ms);
  const grants: { at_ms: number; cum: number; window: number }[] = [];
  let g_head = 0;
  let sent_bytes = 0;
  let granted_cum = 0;
  let granted_window = ctl ? ctl.windowBytes : Number.POSITIVE_INFINITY;
  let cap0 = 0;
  let del0 = 0;
  let sent_after_warmup = 0;
  let dropped_after_warmup = 0;
  const true_qd: number[] = [];
  const est_qd: number[] = [];
  const kal_qd: number[] = [];
  const samples: number[] = [];
  if (ctl) ctl.onRttSample(2 * delay_ms * 1000);
  for (let t = 0; t < end_ms; t++) {
    if (t === warmup_ms) {
      cap0 = link.capacity_bytes;
      del0 = link.delivered_bytes;
    }
    // Grants arriving at the sender (latest wins).
    while (g_head < grants.length && grants[g_head]!.at_ms <= t) {
      const g = grants[g_head++]!;
      granted_cum = g.cum;
      granted_window = g.window;
    }
    // Sender: write frames while outstanding + frame ≤ grant, or nothing is outstanding (PROTOCOL.md server rules).
    const sender_clock_us = t * 1000 * (1 + drift) + offset;
    let budget = ctl ? 10_000 : Math.max(0, (o.queue_packets ?? 1000) + 50 - link.queuedPackets - (downlink.length - dl_head));
    while (budget-- > 0 && (sent_bytes - granted_cum <= 0 || sent_bytes - granted_cum + frame_bytes <= granted_window)) {
      downlink.push({ at_ms: t + delay_ms, p: { send_us: sender_clock_us, frame_bytes, seq: next_seq++ } });
      sent_bytes += frame_bytes;
      if (t >= warmup_ms) sent_after_warmup++;
    }
    // Propagation delay, then the bottleneck.
    while (dl_head < downlink.length && downlink[dl_head]!.at_ms <= t) {
      const d = downlink[dl_head++]!;
      if (!link.enqueue(t, wire_bytes, d.p)) {
        if (t >= warmup_ms) dropped_after_warmup++;
        repair.onDrop(t, d.at_ms - delay_ms, d.p);
      }
    }
    for (const p of repair.due(t)) {
      if (t >= warmup_ms) sent_after_warmup++; // a retransmission is a packet sent
      if (!link.enqueue(t, wire_bytes, p)) {
        if (t >= warmup_ms) dropped_after_warmup++;
        repair.onDrop(t, t - delay_ms, p);
      }
    }
    if (dl_head > 8192) {
      downlink.splice(0, dl_head);
      dl_head = 0;
    }
    const readable = repair.read(link.service(t));
    for (const dep of readable) {
      if (ctl) {
        const dec = ctl.onFrame(dep.data.send_us, dep.read_ms * 1000, dep.data.frame_bytes);
        if (t >= warmup_ms) {
          const truth = dep.depart_ms - dep.enqueue_ms;
          true_qd.push(truth);
          est_qd.push(Math.abs(dec.raw_queuing_delay_ms - truth));
          kal_qd.push(Math.abs(dec.kalman_queuing_delay_ms - truth));
          samples.push(dep.depart_ms, truth, dec.raw_queuing_delay_ms);
        }
      } else if (t >= warmup_ms) {
        true_qd.push(dep.depart_ms - dep.enqueue_ms);
        samples.push(dep.depart_ms, dep.depart_ms - dep.enqueue_ms, Number.NaN);
      }
      if (!ctl) granted_cum += dep.data.frame_bytes;
    }
    if (ctl) {
      ctl.tick(t * 1000);
      if (t % grant_every_ms === 0) grants.push({ at_ms: t + delay_ms, cum: ctl.cumReceivedBytes, window: ctl.windowBytes });
    }
    o.onTick?.(t, ctl);
  }
  let mean = 0;
  for (const x of true_qd) mean += x;
  mean /= Math.max(1, true_qd.length);
  return {
    utilization: (link.delivered_bytes - del0) / Math.max(1, link.capacity_bytes - cap0),
    queuing_delay_ms: { mean, p50: percentile(true_qd, 50), p95: percentile(true_qd, 95) },
    loss_rate: dropped_after_warmup / Math.max(1, sent_after_warmup),
    qd_error_ms: { median: percentile(est_qd, 50), p95: percentile(est_qd, 95) },
    kalman_qd_error_ms: { median: percentile(kal_qd, 50), p95: percentile(kal_qd, 95) },
    delivered_bytes: link.delivered_bytes - del0,
    capacity_bytes: link.capacity_bytes - cap0,
    samples: Float64Array.from(samples),
  };
}
