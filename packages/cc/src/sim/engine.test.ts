/**
 * The drivers run one engine (engine.ts): the same options give the same figures whichever
 * driver runs them, on a deep queue and on a shallow one where QUIC's loss repair (the one loss
 * model) is exercised.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { simulateBench } from "./bench-sim.js";
import { simulateBulk } from "./bulk.js";
import { AimdCeiling } from "./ceiling.js";
import { Engine } from "./engine.js";
import { Pacer } from "./pacing.js";
import { simulateShared } from "./shared.js";
import { BulkStepper } from "./stepper.js";
import { constantRateTrace, parseMahimahiTrace } from "./trace.js";

const TMOBILE = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/4G/mahimahi-tmobile-lte-short.mahi"), "utf8"));
const QUEUES = [1000, 30];

describe("one engine under every driver", () => {
  it("simulateBench's nuwa is simulateBulk (same loss model, pacing and ceiling)", () => {
    for (const queue_packets of QUEUES) {
      const bench = simulateBench({ trace: TMOBILE, duration_s: 20, policy: "nuwa", queue_packets });
      const bulk = simulateBulk({ trace: TMOBILE, duration_s: 20, queue_packets });
      expect(bench.utilization).toBe(bulk.utilization);
      expect(bench.queuing_delay_ms).toEqual(bulk.queuing_delay_ms);
      expect(bench.loss_rate).toBe(bulk.loss_rate);
      expect(bench.qd_error_ms).toEqual(bulk.qd_error_ms);
      if (queue_packets < 1000) expect(bulk.loss_rate).toBeGreaterThan(0); // the repair is exercised
    }
  });

  it("simulateShared with one flow is simulateBulk on the same trace", () => {
    for (const queue_packets of QUEUES) {
      const shared = simulateShared({ trace: TMOBILE, duration_s: 20, fair_from_s: 2, queue_packets, flows: [{ start_s: 0, config: { target_delay_ms: 30 } }] });
      const bulk = simulateBulk({ trace: TMOBILE, duration_s: 20, warmup_s: 2, queue_packets, config: { target_delay_ms: 30 } });
      expect(shared.utilization).toBe(bulk.utilization);
      expect(shared.queuing_delay_ms).toEqual({ p50: bulk.queuing_delay_ms.p50, p95: bulk.queuing_delay_ms.p95 });
      expect(shared.loss_rate).toBe(bulk.loss_rate);
      expect(shared.jain_index).toBe(1);
    }
  });

  it("BulkStepper stepped to the end is simulateBulk, drops and retransmissions included", () => {
    for (const queue_packets of QUEUES) {
      const bulk = simulateBulk({ trace: TMOBILE, duration_s: 20, warmup_s: 0, queue_packets, config: { step: "additive", aggressiveness_mss: 4 } });
      const s = new BulkStepper({ trace: TMOBILE, queue_packets, config: { step: "additive", aggressiveness_mss: 4 }, record_queuing_delays: true });
      let delivered = 0;
      let capacity = 0;
      let sent = 0;
      let dropped = 0;
      for (let i = 0; i < 100; i++) {
        const st = s.advance(200);
        delivered += st.delivered_bytes;
        capacity += st.capacity_bytes;
        sent += st.sent_packets;
        dropped += st.dropped_packets;
      }
      expect(delivered).toBe(bulk.delivered_bytes);
      expect(capacity).toBe(bulk.capacity_bytes);
      expect(dropped / sent).toBe(bulk.loss_rate);
      expect(s.queuing_delays_ms.length).toBe(bulk.samples.length / 3);
    }
  });

  it("a schedule sender (the frontier's) repairs its drops as QUIC does: every packet is delivered once", () => {
    // 1 Mbit/s link, 10-packet queue, 20 packets written at t = 0: 10 dropped at once; their
    // retransmissions (57 ms after the send) meet a queue not yet drained and some drop again.
    let delivered = 0;
    const eng = new Engine({ trace: constantRateTrace(1e6), queue_packets: 10 }, [{ policy: "schedule", frame_bytes: 1000, wire_overhead_bytes: 0, schedule: (t) => (t === 0 ? 20 : 0) }], (_i, r) => {
      delivered += r.data.frame_bytes;
      expect(r.read_ms).toBeGreaterThanOrEqual(r.depart_ms);
    });
    eng.runUntil(2000);
    const f = eng.flows[0]!;
    expect(f.dropped_packets).toBeGreaterThan(10);
    expect(f.retransmitted_packets).toBe(f.dropped_packets);
    expect(delivered).toBe(20 * 1000);
    expect(f.read_bytes).toBe(20 * 1000);
  });

  it("rejects an engine without flows and a schedule flow without its function", () => {
    expect(() => new Engine({ trace: constantRateTrace(1e6) }, [])).toThrow(/no flows/);
    expect(() => new Engine({ trace: constantRateTrace(1e6) }, [{ policy: "schedule", frame_bytes: 1000 }])).toThrow(/schedule function/);
    expect(() => simulateBulk({ trace: constantRateTrace(1e6), duration_s: 3, pacing_gain: 0 })).toThrow(/pacing_gain/);
  });

  it("paces the sender by default (RFC 9002 §7.7): one frame in the first ms, not the initial window", () => {
    const first = (pacing_gain?: number) => {
      const eng = new Engine({ trace: constantRateTrace(12e6) }, [{ frame_bytes: 1222, pacing_gain }]);
      eng.tick();
      return eng.flows[0]!.new_packets;
    };
    expect(first()).toBe(1); // bucket of one frame + 2 × 12 000 B / 50 ms
    expect(first(Number.POSITIVE_INFINITY)).toBe(9); // 12 000-byte initial grant, 1222-byte frames
    const p = new Pacer(2, 50, 1000);
    p.refill(10_000); // 400 B/ms, bucket ≤ max(800, 2000)
    expect(p.ready).toBe(true);
    p.take(1000);
    expect(p.ready).toBe(false); // 400 B left
    for (let i = 0; i < 10; i++) p.refill(10_000);
    p.take(1000);
    p.take(1000);
    expect(p.ready).toBe(false); // capped at two frames
  });

  it("the ceiling grows per acknowledged byte and cuts by β = 0.7 at most once per base RTT", () => {
    const c = new AimdCeiling(1000, 50);
    expect(c.cwnd_bytes).toBe(10_000);
    c.onAcked(5000); // slow start
    expect(c.cwnd_bytes).toBe(15_000);
    c.onLoss(100);
    expect(c.cwnd_bytes).toBe(10_500);
    c.onLoss(149); // same recovery period
    expect(c.cwnd_bytes).toBe(10_500);
    c.onAcked(10_500); // congestion avoidance: one frame per window acknowledged
    expect(c.cwnd_bytes).toBeCloseTo(11_500, 6);
    c.onLoss(150);
    expect(c.cwnd_bytes).toBeCloseTo(8050, 6);
  });
});

describe("an application-limited flow (app_frames, expecting_data)", () => {
  it("writes no more than the application gave, and sends it all under the window", () => {
    const given = (t: number) => (t < 1000 ? 0 : t < 3000 ? 50 : 120); // frames handed over at 1 s and 3 s
    const run = (expecting: (t: number) => boolean) => {
      const eng = new Engine({ trace: constantRateTrace(10e6) }, [{ frame_bytes: 1220, app_frames: given, expecting_data: expecting }]);
      const f = eng.flows[0]!;
      const silent: boolean[] = [];
      let last_read_ms = 0;
      for (let t = 0; t < 6000; t++) {
        const before = f.read_bytes;
        eng.tick();
        if (f.read_bytes > before && t < 3000) last_read_ms = t;
        if (t === 999) expect(f.new_packets).toBe(0);
        if (t === 2999) expect(f.new_packets).toBe(50);
        silent.push(f.controller!.currentPhase === "silence");
      }
      expect(f.new_packets).toBe(120);
      expect(f.read_bytes).toBe(120 * 1220);
      expect(last_read_ms).toBeLessThan(1400); // the first response is in well before 1.5 s
      return silent;
    };
    // after the first response the player expects nothing until 3 s: an idle player is not an outage
    expect(run((t) => t < 1000 + 1 || t >= 3000).slice(1000, 3000).some(Boolean)).toBe(false);
    expect(run(() => true).slice(1500, 3000).some(Boolean)).toBe(true);
  });
});
