/**
 * The backlog and service-delay signals (backlog.ts; `qd_source` "backlog", and "service", the
 * default): the estimator on hand-made schedules, and the controller each drives on a recorded
 * LTE trace, its burst variant and a shared queue.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { BacklogEstimator } from "./backlog.js";
import { simulateBulk } from "./sim/bulk.js";
import { simulateShared } from "./sim/shared.js";
import { burstVariant, constantRateTrace, parseMahimahiTrace } from "./sim/trace.js";

const TRACES = join(dirname(fileURLToPath(import.meta.url)), "../../../traces");
const lte = parseMahimahiTrace(readFileSync(join(TRACES, "4G/mahimahi-tmobile-lte-short.mahi"), "utf8"));

describe("BacklogEstimator", () => {
  it("no queue: nothing of ours is ever ahead", () => {
    const b = new BacklogEstimator();
    for (let i = 0; i < 100; i++) expect(b.onFrame(i * 1000, i * 1000, 1200)).toBe(0);
  });

  it("a delivery gap: the first frame after it waited 50 ms behind nothing of ours; later ones behind what we sent into the gap", () => {
    // one frame per ms (a_i = i ms); the link delivers nothing from 10 to 60 ms, then 10 frames per ms
    const b = new BacklogEstimator();
    const recv_ms = (i: number) => (i < 10 ? i : Math.max(i, 60 + (i - 10) * 0.1));
    const out: number[] = [];
    for (let i = 0; i < 100; i++) out.push(b.onFrame(i * 1000, recv_ms(i) * 1000, 1200));
    expect(recv_ms(10) - 10).toBe(50); // its Qd: 50 ms
    expect(out[10]).toBe(0); // ... all of it the link's own wait
    // frame 30 reached the queue at 30 ms behind frames 10..29, still there (received from 60 ms on)
    expect(out[30]).toBe(20 * 1200);
    // once the queue has drained, nothing is ahead again
    expect(out[99]).toBe(0);
  });

  it("service delay: a burst delivers what waited through a gap at once, so the bytes ahead cost the burst's time, not the gap", () => {
    // one frame per ms reaches the queue (a_i = i ms); nothing leaves from 10 to 60 ms, then the
    // 50 frames that waited leave in one burst at 60 ms, and later ones as they come
    const b = new BacklogEstimator();
    const recv_ms = (i: number) => (i < 10 ? i : Math.max(i, 60));
    const bytes: number[] = [];
    const service: number[] = [];
    for (let i = 0; i < 80; i++) {
      bytes.push(b.onFrame(i * 1000, recv_ms(i) * 1000, 1200));
      service.push(b.lastServiceDelayUs);
    }
    expect(bytes[59]).toBe(49 * 1200); // 49 frames of ours were ahead of frame 59 ...
    expect(service[59]).toBe(0); // ... but the link served them in the same instant as frame 59
    expect(service[10]).toBe(0); // the gap itself is the link's wait, not ours
    expect(service.every((d) => d === 0)).toBe(true);
  });

  it("service delay: a standing queue of ours on a smooth link reads as the queue", () => {
    // the link serves one frame per 2 ms; frames reach it one per ms: our queue grows 0.5 ms per frame
    const b = new BacklogEstimator();
    let last = 0;
    for (let i = 0; i < 200; i++) {
      b.onFrame(i * 1000, (i * 2 + 1) * 1000, 1200);
      last = b.lastServiceDelayUs;
    }
    // frame 199 reached the queue at 199 ms and left at 399 ms; our first delivery after 199 ms was at 201 ms
    expect(last).toBe(198_000);
  });

  it("a wait longer than the history kept gives no estimate (NaN), and a bad history is refused", () => {
    const b = new BacklogEstimator(1_000_000);
    b.onFrame(0, 0, 1200);
    b.onFrame(1_000, 1_000, 1200);
    b.onFrame(3_000_000, 3_000_000, 1200); // trims the first; the second stays as the last entry before the history
    expect(b.onFrame(10_000, 3_001_000, 1200)).toBe(1200); // reached the queue at 10 ms: the frame received at 3 s was ahead
    expect(b.onFrame(500, 3_002_000, 1200)).toBeNaN(); // at 0.5 ms: what had arrived by then is no longer known
    expect(b.lastServiceDelayUs).toBeNaN();
    expect(() => new BacklogEstimator(0)).toThrow(RangeError);
  });
});

describe("the backlog and service-delay signals driving the controller (simulated, recorded traces)", () => {
  it("bursty delivery (LTE regrouped into 20-100 ms bursts): the link's gaps no longer starve the window", () => {
    const burst = burstVariant(lte, 20, 100, 1);
    const raw = simulateBulk({ trace: burst, duration_s: 40, config: { qd_source: "raw" } });
    const backlog = simulateBulk({ trace: burst, duration_s: 40, config: { qd_source: "backlog" } });
    const service = simulateBulk({ trace: burst, duration_s: 40 }); // the default
    expect(raw.utilization).toBeLessThan(0.25); // measured 0.18: every gap read as congestion
    expect(backlog.utilization).toBeGreaterThan(0.45); // measured 0.56: bytes ahead ÷ a mean rate that counts the gaps again
    expect(backlog.queuing_delay_ms.p95).toBeLessThan(160); // measured 115 (raw 85); gaps up to 100 ms
    expect(service.utilization).toBeGreaterThan(0.75); // measured 0.83
    expect(service.utilization).toBeGreaterThan(backlog.utilization + 0.15);
    expect(service.queuing_delay_ms.p95).toBeLessThan(220); // measured 169: what a burst's own gap costs
  });

  it("the same recording as recorded: utilization no lower, delay about the same", () => {
    const raw = simulateBulk({ trace: lte, duration_s: 40, config: { qd_source: "raw" } });
    const backlog = simulateBulk({ trace: lte, duration_s: 40, config: { qd_source: "backlog" } });
    const service = simulateBulk({ trace: lte, duration_s: 40 });
    expect(backlog.utilization).toBeGreaterThanOrEqual(raw.utilization - 0.005); // measured 0.938 vs 0.929
    expect(backlog.queuing_delay_ms.p95).toBeLessThanOrEqual(raw.queuing_delay_ms.p95 * 1.15 + 2); // 113 vs 103 ms
    expect(service.utilization).toBeGreaterThanOrEqual(backlog.utilization - 0.005); // measured 0.939
    expect(service.queuing_delay_ms.p95).toBeLessThanOrEqual(backlog.queuing_delay_ms.p95 * 1.1 + 2); // 110 ms
  });

  it("five flows sharing one queue: shares stay fair, the queue a few ms deeper than on the raw signal", () => {
    const run = (qd_source: "raw" | "backlog" | "service") =>
      simulateShared({ trace: constantRateTrace(6e6, 1000), duration_s: 60, fair_from_s: 20, flows: Array.from({ length: 5 }, (_, i) => ({ start_s: i * 2, config: { qd_source } })) });
    const raw = run("raw");
    const backlog = run("backlog");
    const service = run("service");
    expect(backlog.jain_index).toBeGreaterThan(0.95); // measured 0.987 (raw 0.990)
    expect(backlog.utilization).toBeGreaterThan(0.97);
    // unlike the adaptive Td (which inflates it here), the delay stays where the raw signal holds it
    expect(backlog.queuing_delay_ms.p95).toBeLessThanOrEqual(raw.queuing_delay_ms.p95 + 10); // 58 vs 67 ms
    expect(service.jain_index).toBeGreaterThan(0.95); // measured 0.997
    expect(service.utilization).toBeGreaterThan(0.97);
    // each flow's first delivery after a frame comes one of its own send gaps later (the others'
    // packets in between), so it reads the queue that much low: bounded, not a ratchet
    expect(service.queuing_delay_ms.p95).toBeLessThanOrEqual(raw.queuing_delay_ms.p95 + 20); // 78 vs 67 ms
  });
});
