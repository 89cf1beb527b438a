/**
 * Runs that spread (issue 16 item 5). A benchmark matrix, the simulator's matrix and sweeps, the
 * fairness runs and the RL evaluation are sets of independent runs; each becomes a cell, and
 * `lab/nuwa_lab/spread.py` runs every cell as a Ray task that reserves the CPUs the cell
 * declares and runs `e2e/src/cli-cell.ts --cell JSON --result PATH` as a subprocess (bundled for a
 * local Ray, {@link bundleCellRunner}; tsx on a cluster):
 *
 * - an end-to-end run (emulator, server, Chromium) declares {@link E2E_CELL_CPUS} = 2, all of this
 *   2-core machine: two never share its cores, so the emulator's timing self-check stays valid
 *   (docs/DESIGN.md §8), and on a 16-core machine 8 run at once;
 * - a simulator cell (a group of simulated runs, a sweep point, a fairness value, a trace's
 *   offline frontier for `./nuwa frontier`) declares 1.
 *
 * Ray starts locally (light: no dashboard, small object store, the machine's CPU count) unless
 * `ray_address` names a cluster to join. The records come back through Ray; the caller builds the
 * report from them exactly as from the in-process runs before (same functions, same order).
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createInterface } from "node:readline";
import type { NuwaConfig } from "../../packages/cc/src/config.js";
import type { FrontierOptions } from "../../packages/cc/src/sim/frontier.js";
import {
  type FairnessPoint,
  failedRecord,
  type RunOneOptions,
  type RunRecord,
  type RunSpec,
  runFairness,
  runOne,
  type SimRecord,
  type SimRunSpec,
  simRuns,
} from "./bench.js";
import { type MixRecord, type MixSpec, runMix } from "./bench-mix.js";
import { computeFrontiers, type FrontierJson } from "./frontier.js";
import { PYTHON, REPO_ROOT } from "./procs.js";

/** CPUs an end-to-end cell reserves: all of this 2-core machine (emulator + server + Chromium). */
export const E2E_CELL_CPUS = 2;
/** CPUs a simulator cell reserves (one single-threaded Node process). */
export const SIM_CELL_CPUS = 1;

/** What one cell does (the JSON its process is given). */
export type CellWork =
  | { kind: "e2e"; spec: RunSpec; options: RunOneOptions }
  | { kind: "mix"; spec: MixSpec; out_dir: string }
  | { kind: "sim"; runs: SimRunSpec[] }
  | { kind: "fairness"; base: Partial<NuwaConfig>; additive_increase_mss: number }
  | { kind: "frontier"; trace: { name: string; path: string }; options: FrontierOptions }
  | { kind: "batch"; works: CellWork[] };

/** A cell's result: a run's record, a group of simulated records, or fairness points. */
export type CellOutput = RunRecord | MixRecord | SimRecord[] | FairnessPoint[] | FrontierJson | CellOutput[];

export interface Cell {
  id: string;
  num_cpus: number;
  work: CellWork;
}

/** An end-to-end run as a cell. */
export function e2eCell(spec: RunSpec, options: RunOneOptions): Cell {
  return { id: spec.id, num_cpus: E2E_CELL_CPUS, work: { kind: "e2e", spec, options } };
}

/** A mixed-flow run (several flows through one emulated bottleneck: e2e/src/bench-mix.ts) as a cell; end to end, so it reserves what a run does. */
export function mixCell(spec: MixSpec, out_dir: string): Cell {
  return { id: spec.id, num_cpus: E2E_CELL_CPUS, work: { kind: "mix", spec, out_dir } };
}

/** Whether a cell's work runs end to end (servers, emulator, receivers): never batched, handed to Ray first. */
export function endToEnd(w: CellWork): boolean {
  return w.kind === "e2e" || w.kind === "mix";
}

/** Simulated runs as one cell. */
export function simCell(id: string, runs: SimRunSpec[]): Cell {
  return { id, num_cpus: SIM_CELL_CPUS, work: { kind: "sim", runs } };
}

/** One additive increase of the fairness simulation as a cell. */
export function fairnessCell(base: Partial<NuwaConfig>, additive_increase_mss: number): Cell {
  return { id: `fairness-a${additive_increase_mss}`, num_cpus: SIM_CELL_CPUS, work: { kind: "fairness", base, additive_increase_mss } };
}

/** The offline frontier of one trace as a cell (`./nuwa frontier`). */
export function frontierCell(trace: { name: string; path: string }, options: FrontierOptions): Cell {
  return { id: `frontier-${trace.name}`, num_cpus: SIM_CELL_CPUS, work: { kind: "frontier", trace, options } };
}

/**
 * A simulator cell's work in simulated flow-seconds (runs × duration, flows × duration for the
 * fairness runs: 9 shared links of 5, 20 and 5 flows, 60 s; a frontier its grid over the trace),
 * to hand the longest cells to Ray first: the last cells to start then are short ones and the
 * cores finish together (longest processing time first, Graham 1969). 0 for an end-to-end cell.
 */
export function cellCost(c: Cell): number {
  const w = c.work;
  if (w.kind === "sim") return w.runs.reduce((a, r) => a + r.duration_s, 0);
  if (w.kind === "fairness") return 3 * (5 + 20 + 5) * 60;
  if (w.kind === "frontier") return 100 * (w.options.duration_s ?? 60);
  if (w.kind === "batch") return w.works.reduce((a, x) => a + cellCost({ id: "", num_cpus: 1, work: x }), 0);
  return 0;
}

/**
 * Simulator cells worth less than this many simulated flow-seconds (about 5 s of CPU here) are
 * run several to a process: a fresh Node process spends its first runs warming V8's JIT, which
 * doubled the CPU of a sweep made of 2-trace × 30 s cells (57 s through Ray vs 39 s serial).
 */
export const BATCH_MIN_COST = 600;

/**
 * Group consecutive simulator cells (in the given order) into batches of at least `min_cost`
 * ({@link cellCost}); end-to-end cells and cells already that big stay alone. Returns, per batch,
 * the indices of the cells it holds.
 */
export function batchPlan(cells: readonly Cell[], min_cost = BATCH_MIN_COST): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let cost = 0;
  for (const [i, c] of cells.entries()) {
    const k = cellCost(c);
    if (endToEnd(c.work) || k >= min_cost) {
      out.push([i]);
      continue;
    }
    cur.push(i);
    cost += k;
    if (cost >= min_cost) {
      out.push(cur);
      [cur, cost] = [[], 0];
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * The order to hand cells to Ray: end-to-end cells first, in their planned order (seeds
 * outermost: an interrupted matrix still covers every cell once), then the simulator's cells,
 * longest first ({@link cellCost}). Results are matched by cell, so the order changes no figure.
 */
export function submissionOrder(cells: readonly Cell[]): Cell[] {
  const e2e = cells.filter((c) => endToEnd(c.work));
  const sim = cells.filter((c) => !endToEnd(c.work)).map((c, i) => ({ c, i, cost: cellCost(c) }));
  sim.sort((a, b) => b.cost - a.cost || a.i - b.i);
  return [...e2e, ...sim.map((x) => x.c)];
}

/** Do one cell's work in this process (what cli-cell.ts runs). */
export async function runCell(w: CellWork, log: (s: string) => void = () => {}): Promise<CellOutput> {
  switch (w.kind) {
    case "e2e":
      return runOne(w.spec, w.options);
    case "mix":
      return runMix(w.spec, w.out_dir);
    case "sim":
      return simRuns(w.runs);
    case "fairness":
      return runFairness(w.base, log, [w.additive_increase_mss]);
    case "frontier":
      return computeFrontiers([w.trace], w.options, log);
    case "batch": {
      const outs: CellOutput[] = [];
      for (const x of w.works) outs.push(await runCell(x, log));
      return outs;
    }
  }
}

/**
 * The command a cell's Ray task runs (spread.py appends `--result PATH`): `node RUNNER` when a
 * bundled runner is given ({@link bundleCellRunner}), else `tsx e2e/src/cli-cell.ts`.
 */
export function cellArgv(c: Cell, runner?: string): string[] {
  const cmd = runner ? [process.execPath, runner] : [`${REPO_ROOT}node_modules/.bin/tsx`, `${REPO_ROOT}e2e/src/cli-cell.ts`];
  return [...cmd, "--cell", JSON.stringify(c.work)];
}

/**
 * cli-cell.ts and what it imports of ours bundled into one ESM file, `e2e/dist/cli-cell-<pid>.mjs`
 * (node_modules packages stay imports; two levels below the repository root, as procs.ts's
 * REPO_ROOT expects): a cell process then starts in about 0.1 s instead of tsx's 1–1.5 s of
 * loading and transforming TypeScript here. For this machine's cells only (a cluster's nodes
 * run tsx: they have the sources, not this file). Returns the path; the caller removes it.
 */
export async function bundleCellRunner(): Promise<string> {
  const { build } = await import("esbuild");
  const outfile = `${REPO_ROOT}e2e/dist/cli-cell-${process.pid}.mjs`;
  await build({
    entryPoints: [`${REPO_ROOT}e2e/src/cli-cell.ts`],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning",
    alias: { "@nuwa/cc": `${REPO_ROOT}packages/cc/src/index.ts`, "@nuwa/player": `${REPO_ROOT}packages/player/src/index.ts` },
  });
  return outfile;
}

/** One finished cell, as spread.py reports it (start_s/end_s: wall clock, s). */
export interface CellDone {
  index: number;
  id: string;
  ok: boolean;
  result: unknown;
  error: string | null;
  start_s: number;
  end_s: number;
  wall_s: number;
  node: string;
}

export interface SpreadOptions {
  /** Join this Ray cluster (`--ray-address`); default a local Ray on this machine. */
  ray_address?: string;
  /**
   * Work of the caller's own done while Ray starts (a few seconds): the cells are handed over
   * when it returns, so none runs beside it (an end-to-end cell would share the cores).
   */
  meanwhile?: () => void | Promise<void>;
  /** Sees each cell as it finishes (in the order they finish). */
  on_done?: (d: CellDone, finished: number, total: number) => void;
}

/** What {@link spreadCells} gives: every cell's outcome, and spread.py's exit (Ray's shutdown). */
export interface Spread {
  /** Each cell's outcome, in the cells' order. */
  done: CellDone[];
  /** Resolves with spread.py's exit status once Ray has shut down (about a second after the last cell). */
  exited: Promise<number | null>;
}

/**
 * Run `cells` through `python -m nuwa_lab.spread` (one Ray task per cell) and return what each
 * gave, in the cells' order. Resolves as soon as the last cell has reported; Ray's shutdown goes on
 * meanwhile (await `exited` before exiting). With no cells, Ray is not started (`meanwhile` still runs).
 * @throws Error if spread.py exits before every cell has reported (Ray failed to start, bad input)
 */
export async function spreadCells(cells: readonly Cell[], o: SpreadOptions = {}): Promise<Spread> {
  if (cells.length === 0) {
    await o.meanwhile?.();
    return { done: [], exited: Promise.resolve(0) };
  }
  const args = ["-m", "nuwa_lab.spread", ...(o.ray_address ? ["--ray-address", o.ray_address] : [])];
  const child = spawn(PYTHON, args, { cwd: REPO_ROOT, stdio: ["pipe", "pipe", "pipe"] });
  // A local Ray's cells run a bundled runner (fast start); a cluster's run tsx on their own sources.
  const runner = o.ray_address ? undefined : await bundleCellRunner().catch((e) => void process.stderr.write(`[cells] bundling cli-cell.ts failed, cells use tsx: ${e}\n`));
  const err_tail: string[] = [];
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s: string) => {
    process.stderr.write(s);
    err_tail.push(s);
    if (err_tail.length > 50) err_tail.shift();
  });
  const exited = new Promise<number | null>((r) =>
    child.on("close", (code) => {
      if (runner) rmSync(runner, { force: true });
      r(code);
    }),
  );
  child.stdin.on("error", () => {}); // an early exit is reported below, with its stderr
  try {
    await o.meanwhile?.();
  } catch (e) {
    child.kill();
    throw e;
  }
  // Small simulator cells go several to a task (batchPlan); each is reported as itself.
  const plan = batchPlan(cells);
  const tasks = plan.map((members): Cell => (members.length === 1 ? cells[members[0]!]! : { id: `batch-${members.map((i) => cells[i]!.id).join("+")}`.slice(0, 200), num_cpus: SIM_CELL_CPUS, work: { kind: "batch", works: members.map((i) => cells[i]!.work) } }));
  child.stdin.end(JSON.stringify({ cwd: REPO_ROOT, cells: tasks.map((c) => ({ id: c.id, num_cpus: c.num_cpus, argv: cellArgv(c, runner ?? undefined) })) }));
  const out: (CellDone | undefined)[] = new Array(cells.length);
  let finished = 0;
  let tasks_done = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    if (!line.trim()) continue;
    const t = JSON.parse(line) as CellDone;
    const members = plan[t.index]!;
    for (const [j, i] of members.entries()) {
      const results = members.length > 1 && t.ok ? (t.result as unknown[]) : undefined;
      const d: CellDone = { ...t, index: i, id: cells[i]!.id, result: results ? results[j] : t.result };
      out[i] = d;
      finished++;
      o.on_done?.(d, finished, cells.length);
    }
    if (++tasks_done === tasks.length) break;
  }
  if (finished < cells.length) {
    const code = await exited;
    throw new Error(`spread: ${cells.length - finished} of ${cells.length} cells never reported (python -m nuwa_lab.spread exited ${code}): ${err_tail.join("").slice(-2000)}`);
  }
  return { done: out as CellDone[], exited };
}

/** The record of an end-to-end cell (a failed cell process gives a failed record, as runOne's own errors do). */
export function recordOf(c: Cell, d: CellDone): RunRecord {
  if (c.work.kind !== "e2e") throw new Error(`recordOf: ${c.id} is not an end-to-end cell`);
  if (d.ok) return d.result as RunRecord;
  return failedRecord(c.work.spec, c.work.options, d.start_s * 1000, `cell process failed: ${d.error ?? "?"}`);
}

/**
 * The output of a simulator cell.
 * @throws Error if its process failed (the simulator is deterministic: a failure is a bug, not noise)
 */
export function outputOf<T extends SimRecord[] | FairnessPoint[] | FrontierJson>(c: Cell, d: CellDone): T {
  if (!d.ok) throw new Error(`cell ${c.id} failed: ${d.error}`);
  return d.result as T;
}

/** The record of a mixed-flow cell (a failed cell process gives a record with its error and no files). */
export function mixRecordOf(c: Cell, d: CellDone): MixRecord {
  if (c.work.kind !== "mix") throw new Error(`mixRecordOf: ${c.id} is not a mixed-flow cell`);
  if (d.ok) return d.result as MixRecord;
  return { spec: c.work.spec, json: `mix/${c.id}/result.json`, plot: null, error: `cell process failed: ${d.error ?? "?"}`, wall_s: d.wall_s };
}
