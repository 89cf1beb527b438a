/**
 * Mixed flows through one bottleneck with live switching (issue 18), CI version: `./nuwa mix`
 * (lab/nuwa_lab/mix) runs a Nuwa flow (the load tool's Python receiver, decisions by the real
 * @nuwa/cc controller) and a Cubic bulk download (a plain aioquic client) behind one emulated
 * 10 Mbit/s link with a 1000-packet queue, Cubic 2 s after Nuwa, for 36 s, Cubic leaving at
 * 18 s (`--stop-s`), the Nuwa server with `--switch rule` (nuwa_server/switch_policy.py).
 * Asserted: the report's fields, that the Nuwa flow switched to sender-driven control, that no
 * flow starved while it was there (< 20 % of its fair share for > 5 s), and issue 18's "after
 * the competitor leaves, its p95 queuing delay is back under max(50 ms, 1.2× the oracle's)
 * within 5 s" (the oracle's is about 0 on a constant link: 50 ms) on the 13 s from 23 s
 * (measured over the 9 s of a 32 s run: 30.6, 33.6 and 40.8 ms, the last in a clean-clone CI
 * run; the tail is the drain after the probe, so a longer span gives it less weight; Nuwa
 * alone holds about 32 ms here).
 * Figures come from the emulator's per-flow log. The 60 s form with share and Jain bounds is
 * behind NUWA_LONG=1.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { PYTHON, REPO_ROOT } from "./src/procs.js";
import { onValidEmulator } from "./src/valid-run.js";

const execFileP = promisify(execFile);

interface MixFlow {
  scheme: string;
  goodput_bps: number;
  share: number;
  queuing_delay_ms: { p95: number | null };
  switches: number;
  starved_s: number;
  errors: string[];
}

interface MixResult {
  flows: MixFlow[];
  after_leave: { i: number; leave_s: number; flows: { i: number; scheme: string; p95_ms_first_5s: number | null; p95_ms_after_5s: number | null }[] }[];
  jain_index: number;
  utilization: number;
  errors: string[];
  emulator: { valid: boolean; lateness_ms?: unknown; invalid_reasons?: string[] };
}

/** One `python -m nuwa_lab.mix` run; exit 1 (flow errors) and 3 (emulator invalid) still
 * leave the JSON, which the assertions (and onValidEmulator) read. */
async function runMix(args: string[], out: string): Promise<MixResult> {
  try {
    await execFileP(PYTHON, ["-m", "nuwa_lab.mix", ...args, "--out", out, "--json", `${out}/result.json`], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
  } catch (e) {
    const code = (e as { code?: number }).code ?? -1;
    if (code !== 1 && code !== 3) throw e;
  }
  return JSON.parse(readFileSync(`${out}/result.json`, "utf8")) as MixResult;
}

function describeMix(r: MixResult): string {
  const flows = r.flows.map((f) => `${f.scheme} ${(f.goodput_bps / 1e6).toFixed(2)} Mbit/s share ${f.share.toFixed(2)} p95 ${f.queuing_delay_ms.p95?.toFixed(0)} ms switches ${f.switches} starved ${f.starved_s} s`);
  return `mix: ${flows.join("; ")}; Jain ${r.jain_index.toFixed(3)}, utilization ${r.utilization.toFixed(3)}, emulator valid ${r.emulator.valid}`;
}

describe("mix: Nuwa next to a Cubic download on a 1000-packet queue, --switch rule", () => {
  let r: MixResult;

  beforeAll(async () => {
    const out = `${REPO_ROOT}out/e2e/mix`;
    r = await onValidEmulator("mix nuwa,cubic", () => runMix(["--flows", "nuwa,cubic", "--start-gap-s", "2", "--switch", "rule", "--link-mbps", "10", "--queue-packets", "1000", "--duration", "36", "--stop-s", "0,18"], out));
    console.log(describeMix(r));
  });

  it("reports every field from a valid emulator run, without errors", () => {
    expect(r.emulator.valid, JSON.stringify(r.emulator.lateness_ms)).toBe(true);
    expect(r.errors).toEqual([]);
    expect(r.flows.map((f) => f.scheme)).toEqual(["nuwa", "cubic"]);
    for (const f of r.flows) {
      expect(f.goodput_bps).toBeGreaterThan(0);
      expect(f.queuing_delay_ms.p95).toBeGreaterThan(0);
      expect(Number.isInteger(f.switches) && Number.isInteger(f.starved_s)).toBe(true);
    }
    expect(r.flows[0]!.share + r.flows[1]!.share).toBeCloseTo(1, 6);
    expect(r.jain_index).toBeGreaterThan(0.5);
    expect(r.utilization).toBeGreaterThan(0.9);
  });

  it("the Nuwa flow switched, the Cubic flow did not, and no flow starved", () => {
    expect(r.flows[0]!.switches).toBeGreaterThanOrEqual(1);
    expect(r.flows[1]!.switches).toBe(0);
    for (const f of r.flows) expect(f.starved_s, f.scheme).toBe(0);
  });

  it("after Cubic left, the Nuwa flow's p95 queuing delay is under 50 ms from 5 s on", () => {
    // The rule's early probe (the receiver's rate rose at a falling queue: switch_policy.py
    // "The competitor left") brings the flow back to receiver-driven control; with only the
    // timed probe it stayed sender-driven, filling the queue alone, for 20–80 s.
    const left = r.after_leave.find((x) => x.i === 1);
    expect(left, "after_leave for the Cubic flow").toBeDefined();
    const nuwa = left!.flows.find((f) => f.i === 0)!;
    console.log(`after Cubic left at ${left!.leave_s} s: Nuwa p95 ${nuwa.p95_ms_first_5s} ms in the 5 s after, ${nuwa.p95_ms_after_5s} ms from then`);
    expect(nuwa.p95_ms_after_5s).not.toBeNull();
    expect(nuwa.p95_ms_after_5s!).toBeLessThanOrEqual(50);
    expect(r.flows[0]!.switches).toBeGreaterThanOrEqual(2); // to sender-driven and back
  });
});

// NUWA_LONG=1 node_modules/.bin/vitest run -c e2e/vitest.config.ts e2e/mix.e2e.test.ts
describe.runIf(process.env.NUWA_LONG === "1")("mix, long: Nuwa vs Cubic at 20 Mbit/s, 1000 packets, 60 s, with and without the switcher", () => {
  let none: MixResult;
  let rule: MixResult;

  beforeAll(async () => {
    const args = ["--flows", "nuwa,cubic", "--start-gap-s", "5", "--link-mbps", "20", "--queue-packets", "1000", "--duration", "60"];
    none = await onValidEmulator("mix none", () => runMix([...args, "--switch", "none"], `${REPO_ROOT}out/e2e/mix-long-none`));
    rule = await onValidEmulator("mix rule", () => runMix([...args, "--switch", "rule"], `${REPO_ROOT}out/e2e/mix-long-rule`));
    console.log(`none: ${describeMix(none)}\nrule: ${describeMix(rule)}`);
  });

  it("the switcher raises Nuwa's share and Jain's index and keeps the link used", () => {
    expect(none.emulator.valid && rule.emulator.valid).toBe(true);
    expect(rule.flows[0]!.switches).toBeGreaterThanOrEqual(1);
    expect(rule.flows[0]!.share).toBeGreaterThan(none.flows[0]!.share);
    expect(rule.jain_index).toBeGreaterThan(none.jain_index);
    expect(rule.utilization).toBeGreaterThan(0.9);
  });
});
