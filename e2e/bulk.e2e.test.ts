/**
 * The receiver in control, end to end (issue 3): aioquic server → trace-driven
 * emulator (T-Mobile LTE, 25 ms each way, 1000-packet drop-tail) → headless
 * Chromium running @nuwa/player for 30 s. Every assertion reads the emulator's
 * or the server's logs (through bulk_metrics.py), not the page's own word.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type BulkResult, describeBulk, runBulk } from "./src/bulk.js";
import { onValidEmulator } from "./src/valid-run.js";

const TRACE = "traces/4G/mahimahi-tmobile-lte-short.mahi";
const DURATION_S = Number(process.env.NUWA_E2E_DURATION_S ?? 30);

describe("bulk download under a real 4G trace", () => {
  let nuwa: BulkResult;
  let cubic: BulkResult;

  beforeAll(async () => {
    nuwa = await onValidEmulator("bulk nuwa", () => runBulk({ trace: TRACE, scheme: "nuwa", duration_s: DURATION_S, out_dir: "out/e2e/bulk-nuwa" }));
    console.log(describeBulk(nuwa));
    cubic = await onValidEmulator("bulk cubic", () => runBulk({ trace: TRACE, scheme: "cubic", duration_s: DURATION_S, out_dir: "out/e2e/bulk-cubic" }));
    console.log(describeBulk(cubic));
  });

  it("ran on a valid emulator (p99 lateness ≤ 2 ms) and delivered data", () => {
    for (const r of [nuwa, cubic]) {
      expect(r.emulator.valid, `${r.scheme} emulator lateness ${JSON.stringify(r.emulator.lateness_ms)}`).toBe(true);
      expect(r.page.frames).toBeGreaterThan(1000);
      expect(r.page.error).toBeNull();
    }
  });

  it("server obeyed the grants: outstanding bytes never above the grant plus one frame", () => {
    expect(nuwa.page.grants).toBeGreaterThan(100);
    expect((nuwa.grant_check as { frames: number }).frames).toBeGreaterThan(1000);
    expect(nuwa.grant_violations).toBe(0);
    // The same check catches a sender that ignores grants.
    expect(cubic.grant_violations).toBeGreaterThan(0);
  });

  it("controller's Qd follows the emulator's queuing delay (matched by time)", () => {
    console.log(`Qd error vs emulator truth: nuwa median/p95 ${nuwa.qd_error_ms.median?.toFixed(2)}/${nuwa.qd_error_ms.p95?.toFixed(2)} ms over ${nuwa.qd_error_ms.frames} frames; cubic ${cubic.qd_error_ms.median?.toFixed(2)}/${cubic.qd_error_ms.p95?.toFixed(2)} ms; Kalman (nuwa) ${nuwa.qd_error_ms.kalman.median?.toFixed(2)}/${nuwa.qd_error_ms.kalman.p95?.toFixed(2)} ms`);
    expect(nuwa.qd_error_ms.frames).toBeGreaterThan(1000);
    expect(nuwa.qd_error_ms.median!).toBeLessThanOrEqual(5);
    expect(nuwa.qd_error_ms.p95!).toBeLessThanOrEqual(20);
  });

  // docs/BENCHMARKS.md claims 0.92 utilization on this trace (60 s, deep queue); this 30 s run counts
  // start-up too, so the bound is the claim less 0.05 of run-to-run noise, and 0.9× cubic's in this run.
  it("keeps p95 queuing delay below the same run with --cc cubic and no grants, at the utilization the report claims", () => {
    console.log(`utilization nuwa ${nuwa.utilization.toFixed(3)} cubic ${cubic.utilization.toFixed(3)}; p95 ${nuwa.queuing_delay_ms.p95} vs ${cubic.queuing_delay_ms.p95} ms`);
    expect(nuwa.queuing_delay_ms.p95).toBeLessThan(cubic.queuing_delay_ms.p95);
    expect(nuwa.utilization).toBeGreaterThanOrEqual(0.87);
    expect(nuwa.utilization).toBeGreaterThanOrEqual(0.9 * cubic.utilization);
  });
});
