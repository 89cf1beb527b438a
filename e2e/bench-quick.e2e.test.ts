/**
 * The CI check of issues 5 and 13: `./nuwa bench --quick` (T-Mobile LTE short, nuwa and
 * cubic, 30 s each, deep queue, one invocation) exits 0 only if Nuwa's p95 queuing delay
 * is below cubic's AND Nuwa's utilization is at least 0.9 × cubic's in that same run
 * (exit 1: either missed; 3: a run failed or was invalid). The test also checks both
 * conditions itself on the runs' bench.json records.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./src/procs.js";

const execFileP = promisify(execFile);

describe("./nuwa bench --quick (CI check of issue 5)", () => {
  it("exits 0: nuwa's p95 queuing delay below cubic's and utilization ≥ 0.9 × cubic's, same invocation", async () => {
    const quick = async (): Promise<{ code: number; out: string }> => {
      try {
        const r = await execFileP(`${REPO_ROOT}node_modules/.bin/tsx`, ["e2e/src/cli-bench.ts", "--quick"], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
        return { code: 0, out: r.stderr + r.stdout };
      } catch (e) {
        const err = e as { code?: number; stderr?: string; stdout?: string };
        return { code: err.code ?? -1, out: `${err.stderr ?? ""}${err.stdout ?? ""}` };
      }
    };
    let { code, out } = await quick();
    // Exit 3 is "no verdict": a run failed or its emulator could not keep time (e2e/src/valid-run.ts).
    // That measurement is void, so it is taken again, once; a second 3 fails below.
    if (code === 3) {
      console.log(`bench --quick gave no verdict (${out.split("\n").find((l) => l.includes("quick check")) ?? "?"}); measuring again`);
      ({ code, out } = await quick());
    }
    const verdict = out.split("\n").find((l) => l.includes("quick check")) ?? "(no verdict line)";
    console.log(verdict);
    expect(code, out.slice(-2000)).toBe(0);
    expect(verdict).toMatch(/PASS/);
    expect(verdict).toMatch(/utilization/);
    const report = readFileSync(`${REPO_ROOT}out/bench/quick/report.md`, "utf8");
    expect(report).toMatch(/tmobile-lte-short/);
    // both conditions, recomputed from the records of this invocation
    const dir = `${REPO_ROOT}out/bench/quick`;
    const idx = JSON.parse(readFileSync(`${dir}/bench-index.json`, "utf8")) as { runs: string[] };
    const recs = idx.runs.map((id) => JSON.parse(readFileSync(`${dir}/runs/${id}/bench.json`, "utf8")) as { scheme: string; kind: string; metrics: { utilization: number; queuing_delay_ms: { p95: number } } });
    const get = (s: string) => recs.find((r) => r.kind === "bulk" && r.scheme === s)!.metrics;
    const [n, c] = [get("nuwa"), get("cubic")];
    console.log(`nuwa p95 ${n.queuing_delay_ms.p95} ms, utilization ${n.utilization.toFixed(3)}; cubic p95 ${c.queuing_delay_ms.p95} ms, utilization ${c.utilization.toFixed(3)}`);
    expect(n.queuing_delay_ms.p95).toBeLessThan(c.queuing_delay_ms.p95);
    expect(n.utilization).toBeGreaterThanOrEqual(0.9 * c.utilization);
  }, 240_000);
});
