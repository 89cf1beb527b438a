/**
 * `./nuwa bench [--quick | --full | --sweep] [options]`: the benchmark matrix of issue 5.
 *
 *   --quick   one 4G trace (T-Mobile LTE short), nuwa and cubic, 30 s bulk, deep
 *             queue; exits 1 unless nuwa's p95 queuing delay is below cubic's AND
 *             nuwa's utilization is at least 0.9 × cubic's, both in the same
 *             invocation; 3 if a run was invalid or failed.
 *   --full    every 3G/4G/low-band 5G trace in traces/ end to end: bulk (nuwa, cubic,
 *             reno, oracle) × deep/shallow queue, the video ladder (dashjs, dashjs_grants,
 *             dashjs_nuwa_estimate, nuwa, nuwa_cubic; e2e/src/play.ts) on the deep queue, the 120 s
 *             constant-10 Mbit/s no-ratchet run, the simulator on every trace
 *             (mmWave included) and the parameter sweeps; writes
 *             docs/BENCHMARKS.md (+ docs/bench/*.png) with the command and date;
 *             docs/bench/notes.md, if present, is appended under the computed
 *             target verdicts (the why and what-was-tried of a missed target).
 *   --sweep   simulator only: the simulated matrix and the sweeps (no browser).
 *   --rl      issue 6: Nuwa-RL (the shipped model in the page) against fixed k = 1, 7 and
 *             the best fixed k of models/report/evaluation.json, bulk, deep queue, on one
 *             3G, one 4G and the low-band 5G trace (or --traces); writes out/bench/rl and
 *             models/report/e2e.md. Needs ./nuwa train's evaluation first.
 *   (none)    a custom matrix from the options below (defaults as --full, no docs).
 *
 * Options: --traces a,b (substrings of trace paths) --schemes nuwa,cubic,reno,oracle (also nuwa_adaptive, nuwa_backlog, nuwa_raw, nuwa_fixed_td, bbr, nuwa_bbr, pbq)
 *   --shallow-schemes nuwa,cubic (bulk schemes on the queues after the first; default --schemes)
 *   --video-schemes dashjs,dashjs_grants,dashjs_nuwa_estimate,nuwa,nuwa_cubic|none (default:
 *   that ladder; cubic and observe are the old names of dashjs and nuwa_cubic)
 *   --video-runs N (runs of each headline video cell, nuwa and dashjs, per seed; default 3)
 *   --ladder-runs N (runs of each other video cell per seed; default 1: a ladder step is then
 *   reported with its Δ but no gain/cost verdict, which needs ≥ 2 runs a cell) --queues 1000,50
 *   --video-queues 1000 --seeds N --duration S --video-duration S --out DIR
 *   --cc JSON --no-ratchet --no-sim --no-sweep --resume (keep runs of DIR that
 *   finished without error and valid; the rest run again: only for the same code and settings)
 *   --report-only (rebuild the report from DIR) --sim-duration S --ratchet-duration S (120)
 *   --oracle-window-ms MS (the oracle's capacity window; default the base RTT, 50 ms)
 *   --ray-address ADDR (join this Ray cluster; default a local Ray on this machine: below)
 *   --mix nuwa:cubic,nuwa:bbr|none (issue 18 item 4: mixed-flow runs, each `./nuwa mix` with those
 *   flows, the second starting --mix-gap-s after the first; default none, --full nuwa:cubic)
 *   --mix-switch none,rule,dqn (each run without and with the rule or the DQN switcher; default
 *   none,rule)
 *   --mix-links 10,tmobile-lte-short (a number: a constant link in Mbit/s; else a trace whose path
 *   contains it; default 10) --mix-queue N (default 1000) --mix-duration S (default 60)
 *   --mix-gap-s S (default 5). The report's "Sharing a bottleneck" section: per flow share,
 *   p95, switches and starvation, Jain's index, and each run's figure (throughput over time with
 *   the switches marked, Jain's index over time).
 * Every run is a cell of e2e/src/cells.ts, run as a Ray task by lab/nuwa_lab/spread.py (issue 16
 * item 5): an end-to-end run reserves 2 CPUs (all of this 2-core machine: runs never share its
 * cores, the emulator stays valid), a simulator cell (a trace's simulated schemes, a sweep point, a
 * fairness value) 1, so the simulator's cells run two at a time here and a bigger machine or a
 * cluster runs as many as it has CPUs for. With --ray-address every node needs the repository,
 * set up, at this path, and --out on a shared file system (the records come back through Ray,
 * each run's logs stay on its node).
 * Bulk runs on a deep queue also write `frontier.json`: the offline frontier of their traces
 * (SIMULATED, e2e/src/frontier.ts; issue 14), which the report compares each scheme with;
 * `--causal-frontier` adds the envelope of senders that know only the past capacity (about 15 s of
 * CPU per trace at 60 s, before the runs start) and the report's columns against it.
 * Seeds are repetitions (the emulator has no randomness at zero random loss;
 * run-to-run spread comes from real timing). Heavy: run it as `flock /tmp/nuwa-heavy.lock ./nuwa bench ...` on a shared machine.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  ALL_BULK_SCHEMES,
  type BenchOptions,
  BULK_SCHEMES,
  bestFixedK,
  clearBench,
  describeFairness,
  describeRecord,
  describeSim,
  describeSweep,
  effectiveConfig,
  FAIRNESS_VALUES_MSS,
  type FairnessPoint,
  keptRecord,
  listTraces,
  planRlRuns,
  planRuns,
  planSimMatrix,
  planSweeps,
  quickVerdict,
  type RunOneOptions,
  type RunRecord,
  type SimRecord,
  type SweepPoint,
  type TraceInfo,
  VIDEO_SCHEMES,
  writeRecord,
} from "./bench.js";
import { type MixRecord, type MixSpec, parseMixPairs, planMix } from "./bench-mix.js";
import { buildPages } from "./build-pages.js";
import { type Cell, type CellDone, e2eCell, fairnessCell, mixCell, mixRecordOf, outputOf, recordOf, simCell, spreadCells, submissionOrder } from "./cells.js";
import { parseCli, usageError } from "./cli-args.js";
import { computeFrontiers, DEEP_MIN_PACKETS } from "./frontier.js";
import { ensureContent, PLAY_SCHEMES } from "./play.js";
import { PYTHON, REPO_ROOT } from "./procs.js";

const USAGE = `./nuwa bench [--quick | --full | --sweep | --rl] [--traces a,b] [--schemes nuwa,cubic,reno,oracle]
  [--shallow-schemes ...] [--video-schemes dashjs,dashjs_grants,dashjs_nuwa_estimate,nuwa,nuwa_cubic|none]
  [--video-runs N (nuwa and dashjs cells, default 3)] [--ladder-runs N (other video cells, default 1)] [--queues 1000,50]
  [--video-queues 1000] [--seeds N] [--duration S] [--video-duration S] [--out DIR] [--cc JSON]
  [--no-ratchet] [--no-sim] [--no-sweep] [--causal-frontier] [--resume] [--report-only] [--sim-duration S]
  [--ratchet-duration S] [--oracle-window-ms MS] [--ray-address ADDR (join a Ray cluster; default a local Ray)]
  [--mix nuwa:cubic,...|none] [--mix-switch none,rule,dqn] [--mix-links 10,TRACE] [--mix-queue N] [--mix-duration S] [--mix-gap-s S]
  (every mode and option: the comment at the top of e2e/src/cli-bench.ts)`;
const values = parseCli(USAGE, {
  quick: { type: "boolean", default: false },
  full: { type: "boolean", default: false },
  sweep: { type: "boolean", default: false },
  rl: { type: "boolean", default: false },
  traces: { type: "string" },
  schemes: { type: "string" },
  "shallow-schemes": { type: "string" },
  "video-schemes": { type: "string" },
  queues: { type: "string" },
  "video-queues": { type: "string" },
  "video-runs": { type: "string", default: "3" },
  "ladder-runs": { type: "string", default: "1" },
  seeds: { type: "string", default: "1" },
  duration: { type: "string" },
  "video-duration": { type: "string", default: "60" },
  "sim-duration": { type: "string", default: "60" },
  "ratchet-duration": { type: "string", default: "120" },
  "oracle-window-ms": { type: "string" },
  out: { type: "string" },
  cc: { type: "string", default: "{}" },
  "no-ratchet": { type: "boolean", default: false },
  "no-sim": { type: "boolean", default: false },
  "no-sweep": { type: "boolean", default: false },
  "causal-frontier": { type: "boolean", default: false },
  resume: { type: "boolean", default: false },
  "report-only": { type: "boolean", default: false },
  "ray-address": { type: "string" },
  mix: { type: "string" },
  "mix-switch": { type: "string", default: "none,rule" },
  "mix-links": { type: "string", default: "10" },
  "mix-queue": { type: "string", default: "1000" },
  "mix-duration": { type: "string", default: "60" },
  "mix-gap-s": { type: "string", default: "5" },
});

function fail(msg: string): never {
  usageError(USAGE, `bench: ${msg}`);
}
const modes = [values.quick, values.full, values.sweep, values.rl].filter(Boolean).length;
if (modes > 1) fail("choose at most one of --quick, --full, --sweep, --rl");
const list = (s: string | undefined, allowed: readonly string[], what: string): string[] | undefined => {
  if (s === undefined) return undefined;
  if (s === "none") return [];
  const xs = s.split(",").filter(Boolean);
  for (const x of xs) if (!allowed.includes(x)) fail(`unknown ${what} '${x}' (allowed: ${allowed.join(", ")})`);
  return xs;
};
const ints = (s: string | undefined, what: string, lo: number, hi: number): number[] | undefined => {
  if (s === undefined) return undefined;
  const xs = s.split(",").map(Number);
  for (const x of xs) if (!(Number.isInteger(x) && x >= lo && x <= hi)) fail(`${what} must be integers in ${lo}..${hi} (got ${s})`);
  return xs;
};
let cc: Record<string, unknown>;
try {
  cc = JSON.parse(values.cc!) as Record<string, unknown>;
  effectiveConfig(cc); // shape only; the controller validates ranges at construction
} catch (e) {
  fail(`--cc is not JSON: ${String(e)}`);
}

const all = listTraces();
let traces: TraceInfo[] = all.e2e;
let simTraces: TraceInfo[] = [...all.e2e, ...all.sim_only];
if (values.traces) {
  const pats = values.traces.split(",");
  const pick = (t: TraceInfo) => pats.some((p) => t.path.includes(p));
  traces = traces.filter(pick);
  simTraces = simTraces.filter(pick);
  if (traces.length + simTraces.length === 0) fail(`no trace matches --traces ${values.traces}`);
}
if (values.quick) traces = all.e2e.filter((t) => t.path.endsWith("4G/mahimahi-tmobile-lte-short.mahi"));

const quick = values.quick!;
const sweepOnly = values.sweep!;
const seeds = ints(values.seeds, "--seeds", 1, 20)![0]!;
const bulkDuration = Number(values.duration ?? (quick ? 30 : 60));
if (!(bulkDuration >= 10 && bulkDuration <= 600)) fail(`--duration must be 10..600 s (got ${values.duration})`);
const videoDuration = Number(values["video-duration"]);
if (!(videoDuration >= 10 && videoDuration <= 110)) fail(`--video-duration must be 10..110 s (the content is 120 s; got ${values["video-duration"]})`);
const simDuration = Number(values["sim-duration"]);
if (!(simDuration >= 5 && simDuration <= 600)) fail(`--sim-duration must be 5..600 s (got ${values["sim-duration"]})`);
const ratchetDuration = Number(values["ratchet-duration"]);
if (!(ratchetDuration >= 70 && ratchetDuration <= 600)) fail(`--ratchet-duration must be 70..600 s (the metric is the last 60 s; got ${values["ratchet-duration"]})`);
const oracleWindow = values["oracle-window-ms"] === undefined ? undefined : Number(values["oracle-window-ms"]);
if (oracleWindow !== undefined && !(oracleWindow >= 1 && oracleWindow <= 10_000)) fail(`--oracle-window-ms must be 1..10000 (got ${values["oracle-window-ms"]})`);
const mode = quick ? "quick" : values.full ? "full" : sweepOnly ? "sweep" : values.rl ? "rl" : "custom";
const out_dir = resolve(values.out ?? `out/bench/${mode}`);


const opts: BenchOptions = {
  out_dir,
  traces: sweepOnly ? [] : traces,
  bulk_schemes: list(values.schemes, ALL_BULK_SCHEMES, "scheme") ?? (quick ? ["nuwa", "cubic"] : BULK_SCHEMES),
  other_queue_schemes: list(values["shallow-schemes"], ALL_BULK_SCHEMES, "shallow scheme"),
  video_schemes: list(values["video-schemes"], PLAY_SCHEMES, "video scheme") ?? (quick ? [] : VIDEO_SCHEMES),
  video_runs: ints(values["video-runs"], "--video-runs", 1, 20)![0]!,
  ladder_runs: ints(values["ladder-runs"], "--ladder-runs", 1, 20)![0]!,
  queues: ints(values.queues, "--queues", 2, 100_000) ?? (quick ? [1000] : [1000, 50]),
  video_queues: ints(values["video-queues"], "--video-queues", 2, 100_000) ?? [1000],
  seeds,
  bulk_duration_s: bulkDuration,
  video_duration_s: videoDuration,
  ratchet: !quick && !sweepOnly && !values["no-ratchet"],
  ratchet_duration_s: ratchetDuration,
  cc,
  delay_ms: 25,
  resume: values.resume! && !quick,
  oracle_window_ms: oracleWindow,
};
// Mixed-flow runs (issue 18 item 4): none unless --mix, or --full's Nuwa against Cubic.
let mixPlan: MixSpec[] = [];
try {
  const mixRuns = values.mix === undefined ? (values.full ? [["nuwa", "cubic"]] : []) : values.mix === "none" ? [] : parseMixPairs(values.mix);
  const mixLinks = values["mix-links"]!.split(",").filter(Boolean).map((l) => {
    if (/^[0-9.]+$/.test(l)) return { mbps: Number(l) };
    const t = [...all.e2e, ...all.sim_only].find((x) => x.path.includes(l));
    if (!t) fail(`--mix-links: no trace matches '${l}'`);
    return { trace: t.path, name: t.name };
  });
  const mixDuration = Number(values["mix-duration"]);
  if (!(mixDuration >= 10 && mixDuration <= 600)) fail(`--mix-duration must be 10..600 s (got ${values["mix-duration"]})`);
  const mixGap = Number(values["mix-gap-s"]);
  if (!(mixGap >= 0 && mixGap < mixDuration)) fail(`--mix-gap-s must be 0..the duration (got ${values["mix-gap-s"]})`);
  mixPlan = planMix({ runs: mixRuns, switches: values["mix-switch"]!.split(",").filter(Boolean), links: mixLinks, queue_packets: ints(values["mix-queue"], "--mix-queue", 2, 100_000)![0]!, duration_s: mixDuration, start_gap_s: mixGap, delay_ms: 25, cc });
} catch (e) {
  if (e instanceof RangeError) fail(e.message);
  throw e;
}
const doSim = !quick && !values["no-sim"];
const doSweep = !quick && !values["no-sweep"];
const command = `./nuwa bench ${process.argv.slice(2).join(" ")}`.trim();

const log = (s: string) => console.error(`[bench] ${s}`);
const ray_address = values["ray-address"];

/** Log an end-to-end cell's record as it finishes and keep it in `<out>/runs/<id>/bench.json` (also when it ran on another node). */
function onE2eDone(c: Cell, d: CellDone, n: number, total: number): RunRecord {
  const rec = recordOf(c, d);
  writeRecord(rec, out_dir);
  log(`[${n}/${total}] ${c.id}: ${describeRecord(rec)} (${rec.wall_s.toFixed(0)} s${ray_address ? `, ${d.node}` : ""})`);
  return rec;
}
function gitState(): { commit: string; dirty_files: string[] } {
  try {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: REPO_ROOT, encoding: "utf8" });
    return { commit, dirty_files: dirty.split("\n").filter(Boolean).map((l) => l.slice(3)) };
  } catch {
    return { commit: "unknown", dirty_files: [] };
  }
}
// The code a run executes is the code at its start (pages and servers are built per run from the
// tree); the tree may change while a long matrix runs, so both ends are recorded.
const gitAtStart = gitState();
if (values.rl) {
  // Issue 6, item 6: Nuwa-RL against fixed k end to end; the simulator's evaluation (mmWave included) is models/report/evaluation.md.
  const evalPath = `${REPO_ROOT}models/report/evaluation.json`;
  if (!existsSync(evalPath)) fail(`${evalPath} missing: run ./nuwa train first (it writes the simulator evaluation)`);
  const best_k = bestFixedK(JSON.parse(readFileSync(evalPath, "utf8")) as { rows: Record<string, unknown>[] });
  const rlTraces = values.traces ? traces : all.e2e.filter((t) => ["norway-hsdpa-bus-1", "mahimahi-tmobile-lte-short", "lowband"].some((p) => t.path.includes(p)));
  const rlRuns = planRlRuns(rlTraces, best_k, bulkDuration);
  mkdirSync(out_dir, { recursive: true });
  const started = new Date();
  log(`${rlRuns.length} end-to-end runs (about ${Math.round((rlRuns.length * (bulkDuration + 12)) / 60)} min); best fixed k per family from the simulator: ${JSON.stringify(best_k)}`);
  const o: RunOneOptions = { out_dir, cc, delay_ms: 25, pages_built: true };
  const cells = rlRuns.map((spec) => e2eCell(spec, o));
  const spread = await spreadCells(cells, { ray_address, meanwhile: buildPages, on_done: (d, n, total) => onE2eDone(cells[d.index]!, d, n, total) });
  const index = { command, mode, git: gitAtStart, git_at_end: gitState(), started_utc: started.toISOString(), ended_utc: new Date().toISOString(), best_k, runs: rlRuns.map(({ id, trace, family, policy, k_mss }) => ({ id, trace: trace.name, family, policy, k_mss: Number.isNaN(k_mss) ? null : k_mss })) };
  writeFileSync(`${out_dir}/rl-index.json`, JSON.stringify(index, null, 1));
  execFileSync(PYTHON, ["-m", "nuwa_lab.rl_eval", "--bench-dir", out_dir, "--md", `${REPO_ROOT}models/report/e2e.md`], { cwd: REPO_ROOT, stdio: ["ignore", "inherit", "inherit"] });
  log(`report: ${out_dir}/rl-eval.md and models/report/e2e.md`);
  await spread.exited;
  process.exit(0);
}
let rayShutdown: Promise<unknown> = Promise.resolve();
if (!values["report-only"]) {
  if (quick) clearBench(out_dir);
  mkdirSync(out_dir, { recursive: true });
  if (all.missing.length) log(`traces listed in traces/index.json but not found (skipped): ${all.missing.join(", ")}`);
  const started = new Date();
  const plan = sweepOnly ? [] : planRuns(opts);
  // --resume: valid runs an earlier invocation finished without error are kept, not run again
  const runsById = new Map<string, RunRecord>();
  for (const spec of opts.resume ? plan : []) {
    const old = keptRecord(spec, out_dir);
    if (old) runsById.set(spec.id, old);
  }
  for (const id of runsById.keys()) log(`${id}: kept from an earlier run`);
  const runOpts: RunOneOptions = { out_dir, cc, delay_ms: opts.delay_ms, oracle_window_ms: opts.oracle_window_ms, pages_built: true };
  const e2eCells = plan.filter((spec) => !runsById.has(spec.id)).map((spec) => e2eCell(spec, runOpts));
  const simCells = (doSim || sweepOnly ? planSimMatrix(simTraces, opts.queues, simDuration, cc) : []).map((g, i) => simCell(`sim-${i}-${g[0]!.trace.name}-q${g[0]!.queue_packets}`, g));
  const sweepPlan = doSweep || sweepOnly ? planSweeps(simTraces, 1000, simDuration, cc) : [];
  const sweepCells = sweepPlan.map((_, i) => simCell(`sweep-${i}`, sweepPlan[i]!.runs));
  const fairCells = doSweep || sweepOnly ? FAIRNESS_VALUES_MSS.map((a) => fairnessCell(cc, a)) : [];
  const mixCells = mixPlan.map((spec) => mixCell(spec, out_dir));
  const cells: Cell[] = submissionOrder([...e2eCells, ...mixCells, ...simCells, ...sweepCells, ...fairCells]);
  const e2e_s = [...e2eCells, ...mixCells].reduce((a, c) => a + (c.work.kind === "e2e" || c.work.kind === "mix" ? c.work.spec.duration_s : 0) + 10, 0);
  log(
    `${plan.length} end-to-end runs (${e2eCells.length} to run${mixCells.length ? `, and ${mixCells.length} mixed-flow runs` : ""}, about ${Math.round(e2e_s / 60)} min at ~10 s overhead each on this machine)${simCells.length ? " + simulator matrix" : ""}${sweepCells.length ? " + sweeps and fairness" : ""}: ` +
      `${cells.length} cells on Ray (${ray_address ? `cluster ${ray_address}` : "a local Ray"}; end to end 2 CPUs each, simulator 1)`,
  );
  const mixById = new Map<string, MixRecord>();
  const spread = await spreadCells(cells, {
    ray_address,
    // While Ray starts: build the pages once for every run, make the DASH content if a video run needs it, and
    // (issue 14) the offline frontier (SIMULATED) of the traces run in bulk on the deep queue, for the report's
    // "distance to the frontier" (lab/nuwa_lab/bench_report/frontier.py reads frontier.json). No cell runs meanwhile.
    meanwhile: async () => {
      if (e2eCells.length || mixCells.length) await buildPages();
      if (e2eCells.some((c) => c.work.kind === "e2e" && c.work.spec.kind === "play")) await ensureContent(120);
      const frontierQueue = opts.queues.find((q) => q >= DEEP_MIN_PACKETS);
      if (!sweepOnly && opts.bulk_schemes.length > 0 && opts.traces.length > 0 && frontierQueue !== undefined) {
        const fr = computeFrontiers(opts.traces, { duration_s: bulkDuration, queue_packets: frontierQueue, one_way_delay_ms: opts.delay_ms, causal: values["causal-frontier"] }, (s) => log(`frontier ${s}`));
        writeFileSync(`${out_dir}/frontier.json`, JSON.stringify(fr, null, 1));
      }
    },
    on_done: (d, n, total) => {
      const c = cells[d.index]!;
      const at = `[${n}/${total}]`;
      if (c.work.kind === "e2e") runsById.set(c.id, onE2eDone(c, d, n, total));
      else if (c.work.kind === "mix") {
        const m = mixRecordOf(c, d);
        mixById.set(c.id, m);
        log(`${at} ${c.id}: ${m.error ? `FAILED ${m.error}` : `${m.json}`} (${m.wall_s.toFixed(0)} s)`);
      } else if (!d.ok) log(`${at} ${c.id}: FAILED ${d.error}`);
      else if (c.work.kind === "fairness") for (const p of d.result as FairnessPoint[]) log(`${at} ${describeFairness(p)}`);
      else if (sweepCells.includes(c)) log(`${at} ${describeSweep({ ...sweepPlan[sweepCells.indexOf(c)]!, results: d.result as SimRecord[] })}`);
      else for (const r of d.result as SimRecord[]) log(`${at} ${describeSim(r)}`);
    },
  });
  const outcome = (c: Cell) => spread.done[cells.indexOf(c)]!;
  const runs: RunRecord[] = plan.map((spec) => runsById.get(spec.id)!);
  const sim: SimRecord[] = simCells.flatMap((c) => outputOf<SimRecord[]>(c, outcome(c)));
  const sweeps: SweepPoint[] = sweepPlan.map((p, i) => ({ param: p.param, value: p.value, cc: p.cc, results: outputOf<SimRecord[]>(sweepCells[i]!, outcome(sweepCells[i]!)) }));
  const fairness: FairnessPoint[] = fairCells.flatMap((c) => outputOf<FairnessPoint[]>(c, outcome(c)));
  const index = {
    command,
    mode,
    git: gitAtStart,
    git_at_end: gitState(),
    started_utc: started.toISOString(),
    ended_utc: new Date().toISOString(),
    host: { cpus: (await import("node:os")).cpus().length },
    spread: { ray_address: ray_address ?? "local", cells: cells.length, nodes: [...new Set(spread.done.map((d) => d.node))] },
    options: { ...opts, traces: opts.traces.map((t) => t.path), log: undefined },
    config: effectiveConfig(cc),
    missing_traces: all.missing,
    runs: runs.map((r) => r.id),
    sim,
    sweeps,
    fairness,
    mix: mixPlan.map((spec) => mixById.get(spec.id)!),
  };
  writeFileSync(`${out_dir}/bench-index.json`, JSON.stringify(index, null, 1));
  rayShutdown = spread.exited; // Ray shuts down while the report is made
} else if (!existsSync(`${out_dir}/bench-index.json`)) fail(`--report-only: no ${out_dir}/bench-index.json`);

const reportArgs = ["-m", "nuwa_lab.bench_report", "--bench-dir", out_dir];
if (values.full) reportArgs.push("--docs-md", `${REPO_ROOT}docs/BENCHMARKS.md`, "--docs-assets", `${REPO_ROOT}docs/bench`);
// hand-written notes (why a target was missed, what was tried) go under the computed verdicts
if (existsSync(`${REPO_ROOT}docs/bench/notes.md`)) reportArgs.push("--notes", `${REPO_ROOT}docs/bench/notes.md`);
execFileSync(PYTHON, reportArgs, { cwd: REPO_ROOT, stdio: ["ignore", "inherit", "inherit"] });
log(`report: ${out_dir}/report.md${values.full ? " and docs/BENCHMARKS.md" : ""}`);
await rayShutdown;

if (quick) {
  // CI check (issue 5, issue 13 item 4): nuwa's p95 below cubic's and utilization ≥ 0.9 × cubic's, same invocation.
  const idx = JSON.parse(readFileSync(`${out_dir}/bench-index.json`, "utf8")) as { runs: string[] };
  const recs = idx.runs.map((id) => JSON.parse(readFileSync(`${out_dir}/runs/${id}/bench.json`, "utf8")) as RunRecord);
  const v = quickVerdict(recs);
  log(v.message);
  process.exit(v.code);
}
