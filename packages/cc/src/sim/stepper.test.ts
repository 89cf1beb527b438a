import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { percentile, simulateBulk } from "./bulk.js";
import { BulkStepper, rotateTrace } from "./stepper.js";
import { constantRateTrace, parseMahimahiTrace } from "./trace.js";

const LTE = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/4G/mahimahi-verizon-lte-short.mahi"), "utf8"));

/** Step to the end; aggregate like simulateBulk with warmup 0. */
function runStepper(trace: Uint32Array, duration_s: number, interval_ms: number, kAt: (i: number) => number) {
  const s = new BulkStepper({ trace, config: { step: "additive", aggressiveness_mss: kAt(0) } });
  let delivered = 0;
  let capacity = 0;
  let qd_sum = 0;
  let n = 0;
  let sent = 0;
  let dropped = 0;
  const windows: number[] = [];
  for (let i = 0; i < (duration_s * 1000) / interval_ms; i++) {
    s.setAggressiveness(kAt(i));
    const st = s.advance(interval_ms);
    delivered += st.delivered_bytes;
    capacity += st.capacity_bytes;
    qd_sum += st.queuing_delay_sum_ms;
    n += st.departed_packets;
    sent += st.sent_packets;
    dropped += st.dropped_packets;
    windows.push(st.window_bytes);
  }
  return { delivered, capacity, mean_qd: qd_sum / n, loss: dropped / sent, windows };
}

describe("BulkStepper (simulateBulk one interval at a time)", () => {
  it("gives simulateBulk's figures exactly at a fixed k", () => {
    const ref = simulateBulk({ trace: LTE, duration_s: 20, warmup_s: 0, config: { step: "additive", aggressiveness_mss: 4 } });
    const got = runStepper(LTE, 20, 200, () => 4);
    expect(got.delivered).toBe(ref.delivered_bytes);
    expect(got.capacity).toBe(ref.capacity_bytes);
    expect(got.mean_qd).toBeCloseTo(ref.queuing_delay_ms.mean, 9);
    expect(got.loss).toBeCloseTo(ref.loss_rate, 12);
  });

  it("records per-packet queuing delays whose percentiles are simulateBulk's", () => {
    const ref = simulateBulk({ trace: LTE, duration_s: 20, warmup_s: 0, config: { step: "additive", aggressiveness_mss: 4 } });
    const s = new BulkStepper({ trace: LTE, config: { step: "additive", aggressiveness_mss: 4 }, record_queuing_delays: true });
    for (let i = 0; i < 100; i++) s.advance(200);
    expect(percentile(s.queuing_delays_ms, 95)).toBe(ref.queuing_delay_ms.p95);
    expect(percentile(s.queuing_delays_ms, 50)).toBe(ref.queuing_delay_ms.p50);
    expect(new BulkStepper({ trace: LTE }).queuing_delays_ms).toHaveLength(0);
  });

  it("gives simulateBulk's windows exactly when k changes every interval", () => {
    const ks = [1, 9, 2.5, 7, 1.05, 3];
    const kAt = (i: number) => ks[i % ks.length]!;
    const ref_windows: number[] = [];
    const ref = simulateBulk({
      trace: LTE,
      duration_s: 10,
      warmup_s: 0,
      config: { step: "additive", aggressiveness_mss: kAt(0) },
      onTick: (t, c) => {
        if ((t + 1) % 200 === 0) {
          ref_windows.push(c!.windowBytes);
          c!.setParams({ aggressiveness_mss: kAt((t + 1) / 200) });
        }
      },
    });
    const got = runStepper(LTE, 10, 200, kAt);
    expect(got.windows).toEqual(ref_windows);
    expect(got.delivered).toBe(ref.delivered_bytes);
    // k matters in the additive rule: a constant k gives other windows.
    expect(runStepper(LTE, 10, 200, () => 1).windows).not.toEqual(ref_windows);
  });

  it("reports an interval's truth: capacity of a constant link, OWD ≥ propagation", () => {
    const s = new BulkStepper({ trace: constantRateTrace(1504 * 8 * 1000), config: { step: "additive" } }); // one opportunity per ms
    s.advance(2000);
    const st = s.advance(1000);
    expect(st.capacity_bytes).toBe(1000 * 1504);
    expect(st.delivered_bytes).toBeLessThanOrEqual(st.capacity_bytes + 1504); // a packet may finish on bytes carried from before
    expect(st.delivered_bytes).toBeGreaterThan(0.9 * st.capacity_bytes); // backlogged after 2 s
    expect(st.last_one_way_delay_ms).toBeGreaterThanOrEqual(25);
    expect(st.t_ms).toBe(3000);
    expect(st.received_frame_bytes).toBeLessThan(st.delivered_bytes); // wire overhead not in frames
  });

  it("rotates a trace keeping its period and its opportunities", () => {
    const tr = Uint32Array.from([1, 2, 3, 10]);
    expect(Array.from(rotateTrace(tr, 2))).toEqual([1, 8, 9, 10]);
    expect(rotateTrace(tr, 0)).toBe(tr);
    expect(() => rotateTrace(tr, 10)).toThrow(/start_ms/);
    expect(() => rotateTrace(tr, 1.5)).toThrow(/start_ms/);
  });

  it("rejects a bad interval and a bad k", () => {
    const s = new BulkStepper({ trace: LTE });
    expect(() => s.advance(0)).toThrow(/interval_ms/);
    expect(() => s.advance(2.5)).toThrow(/interval_ms/);
    expect(() => s.setAggressiveness(Number.NaN)).toThrow(/aggressiveness_mss/);
  });
});
