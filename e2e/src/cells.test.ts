import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { FAIRNESS_VALUES_MSS, listTraces, planSimMatrix, planSweeps, type RunSpec, sweepGrid } from "./bench.js";
import { buildPages } from "./build-pages.js";
import { BATCH_MIN_COST, batchPlan, bundleCellRunner, cellArgv, E2E_CELL_CPUS, e2eCell, fairnessCell, frontierCell, runCell, SIM_CELL_CPUS, simCell, spreadCells, submissionOrder } from "./cells.js";
import { computeFrontiers, type FrontierJson, mergeFrontiers } from "./frontier.js";
import { REPO_ROOT } from "./procs.js";

const traces = listTraces().e2e.slice(0, 3);

describe("runs that spread (issue 16 item 5)", () => {
  it("an end-to-end cell reserves all of this 2-core machine, a simulator cell one core", () => {
    const spec: RunSpec = { id: "bulk-x-nuwa-q1000-s1", kind: "bulk", trace: traces[0]!, scheme: "nuwa", queue_packets: 1000, seed: 1, duration_s: 30, warmup_s: 2 };
    const e = e2eCell(spec, { out_dir: "/tmp/o", cc: {}, delay_ms: 25, pages_built: true });
    expect([E2E_CELL_CPUS, SIM_CELL_CPUS]).toEqual([2, 1]);
    expect(e.num_cpus).toBe(2);
    expect(e.id).toBe(spec.id);
    expect(simCell("s", []).num_cpus).toBe(1);
    expect(fairnessCell({}, 4)).toMatchObject({ id: "fairness-a4", num_cpus: 1 });
    const argv = cellArgv(e);
    expect(argv.slice(0, 2)).toEqual([`${REPO_ROOT}node_modules/.bin/tsx`, `${REPO_ROOT}e2e/src/cli-cell.ts`]);
    expect(JSON.parse(argv[argv.indexOf("--cell") + 1]!)).toEqual(e.work);
  });

  it("the simulator's cells cover the serial matrix and sweeps in their order", () => {
    const groups = planSimMatrix(traces, [1000, 50], 60, { target_delay_ms: 30 });
    expect(groups).toHaveLength(2 * traces.length);
    // queues outermost, then traces, then nuwa/oracle/aimd: the order the report always had
    expect(groups.flat().map((r) => `${r.queue_packets} ${r.trace.name} ${r.scheme}`)).toEqual([1000, 50].flatMap((q) => traces.flatMap((t) => ["nuwa", "oracle", "aimd"].map((s) => `${q} ${t.name} ${s}`))));
    expect(groups.flat().every((r) => r.duration_s === 60 && r.cc.target_delay_ms === 30)).toBe(true);
    const grid = sweepGrid({});
    const sweeps = planSweeps(traces, 1000, 60, {});
    expect(sweeps.map(({ param, value, cc }) => ({ param, value, cc }))).toEqual(grid);
    for (const p of sweeps) expect(p.runs.map((r) => [r.trace.name, r.scheme, r.cc])).toEqual(traces.map((t) => [t.name, "nuwa", p.cc]));
    expect(FAIRNESS_VALUES_MSS).toEqual([0, 2, 4, 8]);
  });

  it("./nuwa frontier's per-trace cells merge into the file the serial computation wrote", async () => {
    const two = traces.slice(0, 2).map((t) => ({ name: t.name, path: t.path }));
    const options = { duration_s: 5, headrooms_ms: [0, 20] };
    const serial = computeFrontiers(two, options);
    const parts = await Promise.all(two.map((t) => runCell(frontierCell(t, options).work) as Promise<FrontierJson>));
    expect(frontierCell(two[0]!, options).num_cpus).toBe(1);
    expect(JSON.stringify(mergeFrontiers(parts))).toBe(JSON.stringify(serial)); // same content, same order
    expect(() => mergeFrontiers([parts[0]!, parts[0]!])).toThrow(/two traces named/);
    expect(() => mergeFrontiers([parts[0]!, { ...parts[1]!, duration_s: 6 }])).toThrow(/different settings/);
  });

  it("the bundled cell runner (a local Ray's cells) gives what the cell gives in process", async () => {
    const runner = await bundleCellRunner();
    try {
      const c = simCell("s", planSimMatrix(traces.slice(0, 1), [1000], 5, {})[0]!.slice(0, 2));
      const argv = cellArgv(c, runner);
      expect(argv.slice(0, 2)).toEqual([process.execPath, runner]);
      const out = `${mkdtempSync(`${tmpdir()}/cell-`)}/result.json`;
      execFileSync(argv[0]!, [...argv.slice(1), "--result", out], { cwd: "/" }); // REPO_ROOT from the bundle's place, not the cwd
      const strip = (rs: { cpu_s?: number }[]) => rs.map(({ cpu_s: _, ...r }) => r);
      expect(strip(JSON.parse(readFileSync(out, "utf8")))).toEqual(strip((await runCell(c.work)) as { cpu_s: number }[]));
    } finally {
      rmSync(runner, { force: true });
    }
  });

  it("hands Ray the end-to-end cells first in planned order, then the simulator's longest first", () => {
    const spec = (id: string): RunSpec => ({ id, kind: "bulk", trace: traces[0]!, scheme: "nuwa", queue_packets: 1000, seed: 1, duration_s: 30, warmup_s: 2 });
    const o = { out_dir: "/tmp/o", cc: {}, delay_ms: 25 };
    const [sweep1, sweep2] = planSweeps(traces, 1000, 60, {}).map((p, i) => simCell(`sweep-${i}`, p.runs));
    const group = simCell("sim-0", planSimMatrix(traces.slice(0, 1), [1000], 60, {})[0]!);
    const cells = [e2eCell(spec("b"), o), group, sweep1!, e2eCell(spec("a"), o), sweep2!, fairnessCell({}, 0)];
    // fairness (5400 flow-s) > a sweep point (3 traces × 60 s) > a trace's 3 schemes (3 × 60 s, ties keep their order)
    expect(submissionOrder(cells).map((c) => c.id)).toEqual(["b", "a", "fairness-a0", "sim-0", "sweep-0", "sweep-1"]);
  });

  it("small simulator cells share a process (JIT warm-up), big ones and end-to-end runs stay alone", () => {
    const o = { out_dir: "/tmp/o", cc: {}, delay_ms: 25 };
    const e = e2eCell({ id: "e", kind: "bulk", trace: traces[0]!, scheme: "nuwa", queue_packets: 1000, seed: 1, duration_s: 30, warmup_s: 2 }, o);
    const small = (n: number) => simCell(`s${n}`, planSimMatrix(traces.slice(0, 1), [1000], 100, {})[0]!); // 3 × 100 = 300 flow-s
    const cells = [e, small(1), small(2), small(3), fairnessCell({}, 0), small(4)];
    expect(BATCH_MIN_COST).toBe(600);
    expect(batchPlan(cells)).toEqual([[0], [1, 2], [4], [3, 5]]);
    expect(batchPlan(cells, 1)).toEqual(cells.map((_, i) => [i]));
  });

  it("no cells: Ray is not started, the caller's own work still runs", async () => {
    let ran = false;
    let settled = false;
    const spread = spreadCells([], { meanwhile: () => void (ran = true) }).then((r) => {
      settled = true;
      return r;
    });
    // No process was started: the call settled within the microtasks, before an immediate (a
    // spawned spread.py would answer on I/O, after it), whatever the host's load.
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(true);
    const s = await spread;
    expect(ran).toBe(true);
    expect(s.done).toEqual([]);
    expect(await s.exited).toBe(0);
  });

  it("the pages are renamed into place, never rewritten in place (runs that build at once never serve half a bundle)", async () => {
    await buildPages();
    const file = `${REPO_ROOT}e2e/pages/dist/bulk.js`;
    const before = statSync(file).ino;
    await buildPages();
    expect(statSync(file).ino).not.toBe(before);
  });
});
