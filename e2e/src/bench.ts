/**
 * The benchmark instrument of issue 5: a matrix of traces × schemes × queue
 * settings × seeds, end to end (aioquic server → trace-driven emulator →
 * headless Chromium, through runBulk / runPlay), plus the in-process
 * simulator for traces this machine cannot carry end to end and for the
 * parameter sweeps (papers' Fig. 8–10). Every run writes `bench.json` in its
 * own directory under `<out>/runs/`; the report (Markdown + PNG) is made by
 * `lab/nuwa_lab/bench_report/` (`python -m nuwa_lab.bench_report`) from those files and the run logs.
 *
 * This file plans the runs and runs ONE of them (runOne, simRun, fairnessCell); the set is
 * spread over Ray tasks by cells.ts (one task per cell, each declaring its CPUs: an end-to-end
 * run all of this machine, a simulator cell one core; issue 16 item 5).
 *
 * Metrics are docs/DESIGN.md's, computed by bulk_metrics.py / play_metrics.py from
 * the emulator's log (truth) and the page's log. A run whose emulator timing
 * self-check failed (p99 lateness > 2 ms) is kept and marked invalid; the
 * report lists it and leaves it out of every aggregate and target.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { DEFAULT_CONFIG, type NuwaConfig } from "../../packages/cc/src/config.js";
import { simulateBench } from "../../packages/cc/src/sim/bench-sim.js";
import { simulateShared } from "../../packages/cc/src/sim/shared.js";
import { constantRateTrace, parseMahimahiTrace, traceMeanBps } from "../../packages/cc/src/sim/trace.js";
import { RL_CC } from "../../packages/player/src/dash/rl.js";
import { type BulkScheme, runBulk } from "./bulk.js";
import { PLAY_LADDER, type PlayScheme, runPlay } from "./play.js";
import { REPO_ROOT } from "./procs.js";
import { comparisonEmulatorProblems, type HasEmulator } from "./valid-run.js";

export const BULK_SCHEMES: readonly BulkScheme[] = ["nuwa", "cubic", "reno", "oracle"];
/** Bulk schemes a caller may name (BULK_SCHEMES run by default). */
export const ALL_BULK_SCHEMES: readonly BulkScheme[] = [...BULK_SCHEMES, "nuwa_adaptive", "nuwa_backlog", "nuwa_raw", "nuwa_fixed_td", "bbr", "nuwa_bbr", "pbq"];
/** Video schemes run by default: the ladder of play.ts (each one factor from its neighbour). */
export const VIDEO_SCHEMES: readonly PlayScheme[] = PLAY_LADDER;
/** The headline video cells (Nuwa against dash.js's default): run `video_runs` times each. */
export const HEADLINE_VIDEO_SCHEMES: readonly string[] = ["nuwa", "dashjs", "cubic"];
/** Highest mean trace rate run end to end; above it the Python sender and the 2 cores are the bottleneck (docs/DESIGN.md §8 "aioquic"), Mbit/s. */
export const E2E_MAX_MEAN_MBPS = 60;

export interface TraceInfo {
  /** Path relative to the repo root, or absolute when found outside it. */
  path: string;
  /** Short name (file name without .mahi). */
  name: string;
  /** Family used for grouping and targets: 3G, LTE-Saturator, LTE-Lumos, 5G-lowband, 5G-NSA, 5G-mmWave, broadband. */
  family: string;
  mean_mbps: number;
}

/** Trace family from its path (traces/README.md names the sources). */
export function traceFamily(path: string): string {
  const f = path.toLowerCase();
  if (f.includes("mmwave")) return "5G-mmWave";
  if (f.includes("lowband")) return "5G-lowband";
  if (f.includes("5g")) return "5G-NSA";
  if (f.includes("lumos") && f.includes("lte")) return "LTE-Lumos";
  if (f.includes("lte")) return "LTE-Saturator";
  if (f.includes("3g") || f.includes("hsdpa") || f.includes("umts")) return "3G";
  if (f.includes("broadband") || f.includes("fcc")) return "broadband";
  return "other";
}

/**
 * The traces listed in traces/index.json, found in `traces/` or (for the big
 * mmWave files kept outside the repo) in the directories of NUWA_TRACE_DIRS
 * (colon-separated; none when unset: docs/DESIGN.md §7). Broadband traces are left out
 * (the issue asks for 3G, 4G and 5G). Missing files are returned in `missing`.
 */
export function listTraces(): { e2e: TraceInfo[]; sim_only: TraceInfo[]; missing: string[] } {
  const index = JSON.parse(readFileSync(`${REPO_ROOT}traces/index.json`, "utf8")) as { traces: { file: string; family: string; mean_mbps: number }[] };
  const extra = (process.env.NUWA_TRACE_DIRS ?? "").split(":").filter(Boolean);
  const e2e: TraceInfo[] = [];
  const sim_only: TraceInfo[] = [];
  const missing: string[] = [];
  for (const t of index.traces) {
    if (t.family === "broadband") continue;
    const name = t.file.split("/").pop()!.replace(/\.mahi$/, "");
    const info = (path: string): TraceInfo => ({ path, name, family: traceFamily(t.file), mean_mbps: t.mean_mbps });
    if (existsSync(`${REPO_ROOT}traces/${t.file}`)) {
      (t.mean_mbps <= E2E_MAX_MEAN_MBPS ? e2e : sim_only).push(info(`traces/${t.file}`));
    } else {
      const dir = extra.find((d) => existsSync(`${d}/${t.file}`));
      if (dir) sim_only.push(info(resolve(dir, t.file)));
      else missing.push(t.file);
    }
  }
  return { e2e, sim_only, missing };
}

export interface RunSpec {
  id: string;
  kind: "bulk" | "play" | "ratchet";
  trace: TraceInfo;
  scheme: string;
  queue_packets: number;
  seed: number;
  duration_s: number;
  /** Metrics window starts this long after the first frame, s. */
  warmup_s: number;
  /** Controller settings of this run (default: the matrix's `cc`). */
  cc?: Partial<NuwaConfig>;
  /** The page runs the Nuwa-RL tuner (bulk only). */
  tuner?: "rl";
}

export interface RunRecord extends RunSpec {
  valid: boolean;
  invalid_reasons: string[];
  error: string | null;
  wall_s: number;
  started_utc: string;
  metrics: Record<string, unknown> | null;
  /** Effective controller settings the page ran (nuwa-side schemes). */
  cc: Partial<NuwaConfig>;
}

export interface BenchOptions {
  out_dir: string;
  traces: TraceInfo[];
  bulk_schemes: readonly string[];
  /** Bulk schemes on every queue after the first of `queues` (default: bulk_schemes). */
  other_queue_schemes?: readonly string[];
  video_schemes: readonly string[];
  queues: number[];
  video_queues: number[];
  seeds: number;
  bulk_duration_s: number;
  video_duration_s: number;
  /** Runs per seed of each headline video cell (HEADLINE_VIDEO_SCHEMES; default 1). */
  video_runs?: number;
  /** Runs per seed of each other video cell (the ladder's middle rungs; default 1). */
  ladder_runs?: number;
  /** Constant 10 Mbit/s no-ratchet run (nuwa, deep queue, 120 s; p95 over the last 60 s). */
  ratchet: boolean;
  ratchet_duration_s: number;
  cc: Partial<NuwaConfig>;
  delay_ms: number;
  /** Scheme oracle: capacity window, ms (undefined: the base RTT, as issue 5 defines the oracle). */
  oracle_window_ms?: number;
  /** Skip runs whose bench.json already holds a result (resume an interrupted matrix). */
  resume: boolean;
  log?: (line: string) => void;
}

const short = (t: TraceInfo) => t.name.replace(/^mahimahi-/, "").slice(0, 40);

/** The runs of a matrix, in the order they will be run (seeds outermost, so an interrupted run still covers every cell once). */
export function planRuns(o: BenchOptions): RunSpec[] {
  const runs: RunSpec[] = [];
  for (let seed = 1; seed <= o.seeds; seed++) {
    for (const [qi, q] of o.queues.entries())
      for (const t of o.traces)
        for (const s of qi > 0 && o.other_queue_schemes ? o.other_queue_schemes : o.bulk_schemes)
          runs.push({ id: `bulk-${short(t)}-${s}-q${q}-s${seed}`, kind: "bulk", trace: t, scheme: s, queue_packets: q, seed, duration_s: o.bulk_duration_s, warmup_s: 2 });
    // Repetitions of a video cell are interleaved (all cells once, then again), so slow drifts of
    // the shared machine spread over every scheme instead of landing on one.
    const reps = (s: string) => (HEADLINE_VIDEO_SCHEMES.includes(s) ? (o.video_runs ?? 1) : (o.ladder_runs ?? 1));
    const max_reps = Math.max(0, ...o.video_schemes.map(reps));
    for (let rep = 1; rep <= max_reps; rep++)
      for (const q of o.video_queues)
        for (const t of o.traces)
          for (const s of o.video_schemes)
            if (rep <= reps(s)) runs.push({ id: `play-${short(t)}-${s}-q${q}-s${seed}${rep > 1 ? `-r${rep}` : ""}`, kind: "play", trace: t, scheme: s, queue_packets: q, seed, duration_s: o.video_duration_s, warmup_s: 0 });
    if (o.ratchet) {
      const trace = ratchetTrace(o.out_dir);
      runs.push({ id: `ratchet-constant10-nuwa-q1000-s${seed}`, kind: "ratchet", trace, scheme: "nuwa", queue_packets: 1000, seed, duration_s: o.ratchet_duration_s, warmup_s: o.ratchet_duration_s - 60 });
    }
  }
  return runs;
}

/** A constant 10 Mbit/s Mahimahi trace written under the bench directory. */
export function ratchetTrace(out_dir: string): TraceInfo {
  const path = resolve(out_dir, "traces/constant-10mbps.mahi");
  if (!existsSync(path)) {
    mkdirSync(resolve(out_dir, "traces"), { recursive: true });
    writeFileSync(path, `${Array.from(constantRateTrace(10e6, 1000)).join("\n")}\n`);
  }
  return { path, name: "constant-10mbps", family: "constant", mean_mbps: 10 };
}

function invalidReasons(metrics: Record<string, unknown>): string[] {
  const emu = metrics.emulator as { valid?: boolean; invalid_reasons?: string[] | null; lateness_ms?: { p99?: number } } | undefined;
  if (!emu) return ["no emulator summary"];
  // The emulator's own reasons (a failed log check is not a lateness); older summaries had none.
  if (emu.valid === false) return emu.invalid_reasons?.length ? emu.invalid_reasons.map((r) => `emulator ${r}`) : [`emulator lateness p99 ${emu.lateness_ms?.p99 ?? "?"} ms > 2 ms`];
  return [];
}

/** What one end-to-end run needs of the matrix's options (a cell carries it to its process). */
export interface RunOneOptions {
  out_dir: string;
  cc: Partial<NuwaConfig>;
  delay_ms: number;
  oracle_window_ms?: number;
  /** The test pages were built before the run (cells.ts builds them once for all cells): skip the build. */
  pages_built?: boolean;
}

/** The record of a run that did not finish: `error` says why; invalid, no metrics. */
export function failedRecord(spec: RunSpec, o: RunOneOptions, started_ms: number, error: string): RunRecord {
  const err = error.slice(0, 2000);
  return { ...spec, valid: false, invalid_reasons: [`run failed: ${err.split("\n")[0]}`], error: err, wall_s: (Date.now() - started_ms) / 1000, started_utc: new Date(started_ms).toISOString(), metrics: null, cc: spec.cc ?? o.cc };
}

/** Write a run's record to `<out>/runs/<id>/bench.json` (the report's input). */
export function writeRecord(rec: RunRecord, out_dir: string): void {
  const dir = resolve(out_dir, "runs", rec.id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/bench.json`, JSON.stringify(rec, null, 1));
}

/**
 * Run one cell end to end and write `<out>/runs/<id>/bench.json`.
 * Errors are caught and recorded (the run counts as invalid), never thrown.
 */
export async function runOne(spec: RunSpec, o: RunOneOptions): Promise<RunRecord> {
  const dir = resolve(o.out_dir, "runs", spec.id);
  const started = Date.now();
  const cc = spec.cc ?? o.cc;
  const rec: RunRecord = { ...spec, valid: false, invalid_reasons: [], error: null, wall_s: 0, started_utc: new Date(started).toISOString(), metrics: null, cc };
  const build_pages = !o.pages_built;
  try {
    let m: Record<string, unknown>;
    if (spec.kind === "play") {
      m = await runPlay({ trace: spec.trace.path, scheme: spec.scheme as PlayScheme, duration_s: spec.duration_s, out_dir: dir, delay_ms: o.delay_ms, queue_packets: spec.queue_packets, cc, build_pages });
    } else {
      m = (await runBulk({ trace: spec.trace.path, scheme: spec.scheme as BulkScheme, duration_s: spec.duration_s, out_dir: dir, delay_ms: o.delay_ms, queue_packets: spec.queue_packets, cc, warmup_s: spec.warmup_s, oracle_window_ms: o.oracle_window_ms, tuner: spec.tuner, build_pages })) as unknown as Record<string, unknown>;
    }
    delete m.series; // play_metrics' per-second series stays in the run's summary.json
    rec.metrics = m;
    rec.invalid_reasons = invalidReasons(m);
    rec.valid = rec.invalid_reasons.length === 0;
  } catch (e) {
    return writeBack(failedRecord(spec, o, started, e instanceof Error ? e.message : String(e)), o.out_dir);
  }
  rec.wall_s = (Date.now() - started) / 1000;
  return writeBack(rec, o.out_dir);
}

function writeBack(rec: RunRecord, out_dir: string): RunRecord {
  writeRecord(rec, out_dir);
  return rec;
}

/** One RL evaluation run (issue 6, item 6): a policy on a trace. */
export interface RlRunSpec extends RunSpec {
  family: string;
  policy: string;
  k_mss: number;
}

/**
 * Best fixed k per family from the simulator evaluation (models/report/evaluation.json:
 * rows of {family, trace, "k=1".."k=9": {reward}}): the k with the highest mean reward.
 * @throws Error if the file has no rows
 */
export function bestFixedK(evaluation: { rows: Record<string, unknown>[] }): Record<string, number> {
  if (!evaluation.rows?.length) throw new Error("evaluation.json has no rows");
  const out: Record<string, number> = {};
  for (const fam of new Set(evaluation.rows.map((r) => String(r.family)))) {
    const rs = evaluation.rows.filter((r) => r.family === fam);
    let best = 1;
    let best_r = Number.NEGATIVE_INFINITY;
    for (let k = 1; k <= 9; k++) {
      const xs = rs.map((r) => (r[`k=${k}`] as { reward?: number } | undefined)?.reward).filter((x): x is number => typeof x === "number");
      if (xs.length === 0) continue;
      const mean = xs.reduce((a, x) => a + x, 0) / xs.length;
      if (mean > best_r) [best, best_r] = [k, mean];
    }
    out[fam] = best;
  }
  return out;
}

/** The RL evaluation's family of a trace (models/nuwa_rl/evaluate.py groups 3G, 4G, 5G). */
export function rlFamily(t: TraceInfo): string {
  const f = t.family;
  return f.startsWith("LTE") ? "4G" : f === "5G-lowband" || f === "5G-NSA" ? "5G" : f;
}

/** Nuwa-RL (tuner) against fixed k = 1, k = 7 and the family's best fixed k, per trace; duplicates of k run once. */
export function planRlRuns(traces: TraceInfo[], best_k: Record<string, number>, duration_s: number): RlRunSpec[] {
  const runs: RlRunSpec[] = [];
  for (const t of traces) {
    const family = rlFamily(t);
    const kb = best_k[family] ?? 1;
    const policies: [string, number][] = [["rl", Number.NaN], ["k=1", 1], ["k=7", 7]];
    if (kb !== 1 && kb !== 7) policies.push([`k=${kb} (best)`, kb]);
    for (const [policy, k] of policies) {
      const tag = policy === "rl" ? "rl" : `k${k}`;
      runs.push({ id: `rl-${short(t)}-${tag}`, kind: "bulk", trace: t, scheme: "nuwa", queue_packets: 1000, seed: 1, duration_s, warmup_s: 2, cc: Number.isNaN(k) ? { ...RL_CC } : { ...RL_CC, aggressiveness_mss: k } /* the RL environment's settings */, tuner: policy === "rl" ? "rl" : undefined, family, policy, k_mss: k });
    }
  }
  return runs;
}

/**
 * `--resume`: the record of a run that an earlier invocation finished without error, from
 * `<out>/runs/<id>/bench.json`; null when it must run (absent, unreadable or failed).
 */
export function keptRecord(spec: RunSpec, out_dir: string): RunRecord | null {
  const file = resolve(out_dir, "runs", spec.id, "bench.json");
  if (!existsSync(file)) return null;
  try {
    const old = JSON.parse(readFileSync(file, "utf8")) as RunRecord;
    return old.error === null && old.valid ? old : null; // an invalid run (emulator lateness, ...) is run again
  } catch {
    return null;
  }
}

/** One line for the console. */
export function describeRecord(r: RunRecord): string {
  if (r.error) return `FAILED ${r.error.split("\n")[0]}`;
  const m = r.metrics as { utilization?: number; queuing_delay_ms?: { p50?: number; p95?: number }; loss_rate?: number; qoe_per_chunk?: number; rebuffer_s?: number };
  const q = m.queuing_delay_ms ?? {};
  const f = (x: unknown, d = 0) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "n/a");
  const base = `util ${f(m.utilization, 3)}, Qd p50/p95 ${f(q.p50)}/${f(q.p95)} ms`;
  const extra = r.kind === "play" ? `, QoE ${f(m.qoe_per_chunk, 2)}, rebuffer ${f(m.rebuffer_s, 1)} s` : `, loss ${f(100 * (m.loss_rate ?? Number.NaN), 2)}%`;
  return `${base}${extra}${r.valid ? "" : ` INVALID (${r.invalid_reasons.join("; ")})`}`;
}

/** `--quick` passes only if nuwa's utilization is at least this fraction of cubic's in the same invocation (issue 13 item 4). */
export const QUICK_MIN_UTILIZATION_RATIO = 0.9;

/**
 * The CI check of `--quick` (issue 5, issue 13 item 4): nuwa's p95 queuing delay
 * below cubic's AND nuwa's utilization at least {@link QUICK_MIN_UTILIZATION_RATIO}
 * × cubic's, both in the same invocation (a low delay bought by leaving the link
 * idle does not pass). Returns exit code 0 (pass), 1 (fail) or 3 (a run is
 * missing, failed, invalid or lacks a figure: no verdict) and a line saying why.
 */
export function quickVerdict(recs: RunRecord[]): { code: 0 | 1 | 3; message: string } {
  const get = (s: string) => recs.find((r) => r.scheme === s && r.kind === "bulk");
  const n = get("nuwa");
  const c = get("cubic");
  if (!n || !c || !n.valid || !c.valid) {
    const why = [n, c].map((r, i) => (r ? `${r.scheme} ${r.valid ? "valid" : `invalid (${r.invalid_reasons.join("; ")})`}` : `${i ? "cubic" : "nuwa"} missing`));
    return { code: 3, message: `quick check not possible: ${why.join(", ")}` };
  }
  const m = (r: RunRecord) => r.metrics as { queuing_delay_ms?: { p95?: number }; utilization?: number };
  const p95 = (r: RunRecord) => m(r).queuing_delay_ms?.p95;
  const util = (r: RunRecord) => m(r).utilization;
  const [pn, pc, un, uc] = [p95(n), p95(c), util(n), util(c)];
  if (typeof pn !== "number" || typeof pc !== "number" || typeof un !== "number" || typeof uc !== "number") {
    return { code: 3, message: `quick check not possible: a run lacks p95 or utilization (nuwa ${pn}/${un}, cubic ${pc}/${uc})` };
  }
  const delay_ok = pn < pc;
  const util_ok = un >= QUICK_MIN_UTILIZATION_RATIO * uc;
  const ok = delay_ok && util_ok;
  return {
    code: ok ? 0 : 1,
    message:
      `quick check: nuwa p95 ${pn.toFixed(1)} ms ${delay_ok ? "<" : "≥"} cubic p95 ${pc.toFixed(1)} ms; ` +
      `nuwa utilization ${un.toFixed(3)} ${util_ok ? "≥" : "<"} ${QUICK_MIN_UTILIZATION_RATIO} × cubic ${uc.toFixed(3)} = ${(QUICK_MIN_UTILIZATION_RATIO * uc).toFixed(3)}: ${ok ? "PASS" : "FAIL"}`,
  };
}

/**
 * {@link quickVerdict} where it gave no verdict (3) only because a run's emulator was over the 2 ms
 * measurement bound: the same rule applied to the records when both runs finished without an
 * error and each emulator is fit for this comparison (comparisonEmulatorProblems, e2e/src/valid-run.ts:
 * p99 lateness ≤ 0.05 × the run's own p95 and ≤ 20 ms, every log check passed, Cubic's p95 above
 * Nuwa's by more than the largest lateness). Otherwise quickVerdict's own answer, with the reasons the comparison bound refused.
 *
 * @param recs the invocation's records (bench-index.json's runs).
 * @returns code 0/1/3 as quickVerdict, its line, and `late`: the void runs judged ("scheme reasons"),
 *   empty where quickVerdict gave the verdict itself.
 */
export function quickVerdictOnLateEmulators(recs: RunRecord[]): { code: 0 | 1 | 3; message: string; late: string[] } {
  const own = quickVerdict(recs);
  if (own.code !== 3) return { ...own, late: [] };
  const get = (s: string) => recs.find((r) => r.scheme === s && r.kind === "bulk");
  const [n, c] = [get("nuwa"), get("cubic")];
  type M = { queuing_delay_ms?: { p95?: number }; emulator?: HasEmulator["emulator"]; page?: { error?: string | null } };
  const m = (r: RunRecord | undefined) => r?.metrics as M | null | undefined;
  const mn = m(n);
  const mc = m(c);
  if (!n || !c || n.error !== null || c.error !== null || !mn || !mc || mn.page?.error != null || mc.page?.error != null) return { ...own, late: [] };
  const gap_ms = (mc.queuing_delay_ms?.p95 ?? Number.NaN) - (mn.queuing_delay_ms?.p95 ?? Number.NaN);
  const refused = [n, c].flatMap((r) => comparisonEmulatorProblems(m(r)?.emulator, m(r)?.queuing_delay_ms?.p95 ?? Number.NaN, gap_ms).map((p) => `${r.scheme}: ${p}`));
  if (refused.length) return { ...own, message: `${own.message} (not judged within the comparison bound: ${refused.join("; ")})`, late: [] };
  const v = quickVerdict(recs.map((r) => (r === n || r === c ? { ...r, valid: true } : r)));
  const late = [n, c].filter((r) => !r.valid).map((r) => `${r.scheme} ${r.invalid_reasons.join("; ")}`);
  return { ...v, message: `${v.message} (judged on emulators over the 2 ms measurement bound, within the comparison bound: ${late.join(", ")})`, late };
}

// --------------------------------------------------------------------------- simulator

export interface SimRecord {
  trace: string;
  name: string;
  family: string;
  mean_mbps: number;
  scheme: "nuwa" | "oracle" | "aimd";
  queue_packets: number;
  duration_s: number;
  cc: Partial<NuwaConfig>;
  utilization: number;
  queuing_delay_ms: { mean: number; p50: number; p95: number };
  loss_rate: number;
  qd_error_ms: { median: number; p95: number } | null;
  cpu_s: number;
}

const traceCache = new Map<string, Uint32Array>();
function loadTrace(path: string): Uint32Array {
  let t = traceCache.get(path);
  if (!t) {
    t = parseMahimahiTrace(readFileSync(resolve(REPO_ROOT, path), "utf8"));
    traceCache.set(path, t);
  }
  return t;
}

/** One simulated run to do: what simRun takes. */
export interface SimRunSpec {
  trace: TraceInfo;
  scheme: SimRecord["scheme"];
  queue_packets: number;
  duration_s: number;
  cc: Partial<NuwaConfig>;
}

/**
 * One simulated bulk run (same @nuwa/cc code, simulated clock, sim/bench-sim.ts over the one
 * engine sim/engine.ts: QUIC loss repair, pacing and the server's AIMD ceiling, as simulateBulk,
 * simulateShared and the RL stepper). `aimd` is the ceiling alone: a simulated loss-based sender
 * standing in for cubic, not Cubic itself.
 */
export function simRun(t: TraceInfo, scheme: SimRecord["scheme"], queue_packets: number, duration_s: number, cc: Partial<NuwaConfig>, delay_ms = 25): SimRecord {
  const trace = loadTrace(t.path);
  const t0 = process.cpuUsage();
  const common = { trace, duration_s, one_way_delay_ms: delay_ms, queue_packets };
  const r = simulateBench({ ...common, policy: scheme, config: cc });
  const cpu = process.cpuUsage(t0);
  return {
    trace: t.path,
    name: t.name,
    family: t.family,
    mean_mbps: t.mean_mbps,
    scheme,
    queue_packets,
    duration_s,
    cc: scheme === "nuwa" ? cc : {},
    utilization: r.utilization,
    queuing_delay_ms: r.queuing_delay_ms,
    loss_rate: r.loss_rate,
    qd_error_ms: scheme === "nuwa" ? r.qd_error_ms : null,
    cpu_s: (cpu.user + cpu.system) / 1e6,
  };
}

/** Run the simulated runs of one cell in this process, in order. */
export function simRuns(runs: readonly SimRunSpec[]): SimRecord[] {
  return runs.map((r) => simRun(r.trace, r.scheme, r.queue_packets, r.duration_s, r.cc));
}

/** One console line for a simulated run. */
export function describeSim(r: SimRecord): string {
  return `sim ${r.name} ${r.scheme} q${r.queue_packets}: util ${r.utilization.toFixed(3)}, p95 ${r.queuing_delay_ms.p95.toFixed(0)} ms, loss ${(100 * r.loss_rate).toFixed(2)}% (${r.cpu_s.toFixed(1)} s CPU)`;
}

/**
 * The simulated matrix: every trace (e2e ones too, for the sim-vs-e2e gap) × nuwa/oracle/aimd ×
 * queues, as one group (cell) per queue and trace; the records, concatenated in group order, are
 * the matrix in the report's order (queues outermost, then traces, then schemes).
 */
export function planSimMatrix(traces: readonly TraceInfo[], queues: readonly number[], duration_s: number, cc: Partial<NuwaConfig>): SimRunSpec[][] {
  const groups: SimRunSpec[][] = [];
  for (const q of queues) for (const t of traces) groups.push((["nuwa", "oracle", "aimd"] as const).map((scheme) => ({ trace: t, scheme, queue_packets: q, duration_s, cc })));
  return groups;
}

export interface SweepPoint {
  param: string;
  value: number | string;
  cc: Partial<NuwaConfig>;
  results: SimRecord[];
}

/**
 * Parameter sweeps in the simulator (papers' Fig. 8–10): one parameter at a
 * time over the shipped defaults (`base`). k only acts in the paper's additive
 * step, so its sweep runs with `step: "additive"`; the multiplicative gain g
 * is swept as its counterpart in the shipped step.
 */
export function sweepGrid(base: Partial<NuwaConfig>): { param: string; value: number; cc: Partial<NuwaConfig> }[] {
  const g: { param: string; value: number; cc: Partial<NuwaConfig> }[] = [];
  for (let k = 1; k <= 9; k++) g.push({ param: "k (additive step)", value: k, cc: { ...base, step: "additive", aggressiveness_mss: k } });
  for (const td of [5, 10, 15, 20, 30, 50, 75, 100]) g.push({ param: "Td ms", value: td, cc: { ...base, target_delay_ms: td } });
  for (const rho of [10, 25, 50, 100, 200]) g.push({ param: "rho ms", value: rho, cc: { ...base, sensitivity_ms: rho } });
  for (const gain of [0.05, 0.1, 0.25, 0.5, 1]) g.push({ param: "g (multiplicative step)", value: gain, cc: { ...base, multiplicative_gain: gain } });
  for (const a of [0, 2, 4, 8]) g.push({ param: "a (additive increase)", value: a, cc: { ...base, additive_increase_mss: a } });
  return g;
}

/** One shared-bottleneck simulation (issue 7 fairness) for the report. */
export interface FairnessPoint {
  additive_increase_mss: number;
  scenario: string;
  flows: number;
  jain_index: number;
  utilization: number;
  p95_ms: number;
  loss_rate: number;
}

/** One console line for a fairness point. */
export function describeFairness(p: FairnessPoint): string {
  return `fairness a=${p.additive_increase_mss} ${p.scenario}: Jain ${p.jain_index.toFixed(3)}, util ${p.utilization.toFixed(3)}, p95 ${p.p95_ms} ms`;
}

/** The additive increases `a` (MSS per RTT) the fairness simulation compares: one cell each. */
export const FAIRNESS_VALUES_MSS: readonly number[] = [0, 2, 4, 8];

/**
 * Flows sharing one bottleneck in the simulator (sim/shared.ts), 60 s, Jain's
 * index from 20 s: for each additive increase `a`, 5 flows on a constant
 * 6 Mbit/s link and 20 on 24 Mbit/s (the load test's 1.2 Mbit/s per flow),
 * and 5 on T-Mobile LTE short, with simultaneous, 0.5 s- and 2 s-staggered starts.
 */
export function runFairness(base: Partial<NuwaConfig>, log: (s: string) => void, values: readonly number[] = FAIRNESS_VALUES_MSS): FairnessPoint[] {
  const tm = listTraces().e2e.find((t) => t.name === "mahimahi-tmobile-lte-short");
  const links: [string, Uint32Array, number][] = [
    ["constant 6 Mbit/s", constantRateTrace(6e6, 1000), 5],
    ["constant 24 Mbit/s", constantRateTrace(24e6, 1000), 20],
  ];
  if (tm) links.push(["T-Mobile LTE short", parseMahimahiTrace(readFileSync(tm.path, "utf8")), 5]);
  const out: FairnessPoint[] = [];
  for (const a of values)
    for (const [name, trace, n] of links)
      for (const stagger of [0, 0.5, 2]) {
        const r = simulateShared({ trace, duration_s: 60, fair_from_s: 20, flows: Array.from({ length: n }, (_, i) => ({ start_s: i * stagger, config: { ...base, additive_increase_mss: a } })) });
        const p: FairnessPoint = { additive_increase_mss: a, scenario: `${n} flows, ${name}, starts ${stagger} s apart`, flows: n, jain_index: r.jain_index, utilization: r.utilization, p95_ms: r.queuing_delay_ms.p95, loss_rate: r.loss_rate };
        out.push(p);
        log(describeFairness(p));
      }
  return out;
}

/** The sweeps' points (sweepGrid), each with its simulated runs: nuwa on every trace (one cell per point). */
export function planSweeps(traces: readonly TraceInfo[], queue_packets: number, duration_s: number, base: Partial<NuwaConfig>): { param: string; value: number; cc: Partial<NuwaConfig>; runs: SimRunSpec[] }[] {
  return sweepGrid(base).map((p) => ({ ...p, runs: traces.map((trace) => ({ trace, scheme: "nuwa" as const, queue_packets, duration_s, cc: p.cc })) }));
}

/** One console line for a sweep point. */
export function describeSweep(p: SweepPoint): string {
  const util = p.results.reduce((a, r) => a + r.utilization, 0) / p.results.length;
  return `sweep ${p.param} = ${p.value}: mean util ${util.toFixed(3)}, p95s ${p.results.map((r) => r.queuing_delay_ms.p95.toFixed(0)).join("/")} ms`;
}

/** Shipped controller defaults, for the report. */
export function effectiveConfig(cc: Partial<NuwaConfig>): NuwaConfig {
  return { ...DEFAULT_CONFIG, ...cc };
}

export { traceMeanBps };

/** Remove a bench directory's runs (fresh start). */
export function clearBench(out_dir: string): void {
  rmSync(resolve(out_dir), { recursive: true, force: true });
}
