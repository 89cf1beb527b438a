import { describe, expect, it } from "vitest";
import { simulateBench } from "./bench-sim.js";
import { simulateBulk } from "./bulk.js";
import { constantRateTrace } from "./trace.js";

/** 1 s at `hi` bit/s then 1 s at `lo`, looped. */
function stepTrace(hi: number, lo: number): Uint32Array {
  const a = Array.from(constantRateTrace(hi, 1000));
  const b = Array.from(constantRateTrace(lo, 1000)).map((t) => t + 1000);
  return Uint32Array.from([...a, ...b]);
}

describe("simulateBench", () => {
  it("oracle fills a constant link with almost no queue", () => {
    const r = simulateBench({ trace: constantRateTrace(12e6), duration_s: 10, policy: "oracle" });
    expect(r.utilization).toBeGreaterThan(0.9);
    expect(r.queuing_delay_ms.p95).toBeLessThanOrEqual(5);
    expect(r.loss_rate).toBe(0);
  });

  it("oracle queues after a drop it learns of late, far less than a queue-filling sender", () => {
    const trace = stepTrace(24e6, 3e6);
    const r = simulateBench({ trace, duration_s: 20, policy: "oracle" });
    const fill = simulateBulk({ trace, duration_s: 20, config: null });
    expect(r.queuing_delay_ms.p95).toBeGreaterThan(5); // data already in flight at the drop
    expect(r.queuing_delay_ms.p95).toBeLessThan(fill.queuing_delay_ms.p95 / 4);
    expect(r.utilization).toBeGreaterThan(0.85);
  });

  it("recovers from drops: a loss-based sender on a 20-packet queue loses and keeps the link busy", () => {
    // 48 Mbit/s × 50 ms = 300 kB in flight against a 20-packet queue: the ceiling overshoots and drops.
    // Acknowledgements clock the bytes in flight every ms (engine.ts), lost frames are repaired (repair.ts).
    const r = simulateBench({ trace: constantRateTrace(48e6), duration_s: 10, policy: "aimd", queue_packets: 20 });
    expect(r.loss_rate).toBeGreaterThan(0);
    expect(r.utilization).toBeGreaterThan(0.8); // 0.61 in the old bench loop (in flight from 5 ms grants, lost bytes resent as new data)
  });

  it("nuwa runs the real controller: Qd error is measured and the queue stays near Td", () => {
    const r = simulateBench({ trace: constantRateTrace(10e6), duration_s: 20, policy: "nuwa", config: { target_delay_ms: 20 } });
    expect(r.utilization).toBeGreaterThan(0.8);
    expect(r.queuing_delay_ms.p95).toBeLessThan(100);
    expect(r.qd_error_ms.median).toBeLessThan(5);
  });

  it("aimd keeps a deep queue full and loses little in a shallow one", () => {
    const trace = constantRateTrace(12e6);
    const deep = simulateBench({ trace, duration_s: 30, policy: "aimd", queue_packets: 1000 });
    expect(deep.utilization).toBeGreaterThan(0.95);
    expect(deep.queuing_delay_ms.p95).toBeGreaterThan(300); // bufferbloat: 1000 × 1270 B at 12 Mbit/s ≈ 850 ms
    const shallow = simulateBench({ trace, duration_s: 30, policy: "aimd", queue_packets: 50 });
    expect(shallow.loss_rate).toBeLessThan(0.03);
    expect(shallow.utilization).toBeGreaterThan(0.8);
  });

  it("the ceiling bounds a receiver that ignores loss", () => {
    const trace = constantRateTrace(12e6);
    const o = { trace, duration_s: 20, policy: "nuwa" as const, queue_packets: 20, config: { target_delay_ms: 100 } };
    const capped = simulateBench(o);
    const raw = simulateBench({ ...o, ceiling: false });
    expect(capped.loss_rate).toBeLessThan(raw.loss_rate);
  });

  it("rejects bad options", () => {
    const trace = constantRateTrace(1e6);
    expect(() => simulateBench({ trace, duration_s: 1, policy: "oracle" })).toThrow(/warm-up/);
    expect(() => simulateBench({ trace, duration_s: 5, policy: "oracle", pacing_gain: 0 })).toThrow(/pacing_gain/);
    expect(() => simulateBench({ trace, duration_s: 5, policy: "oracle", grant_interval_ms: 0 })).toThrow(/intervals/);
  });
});
