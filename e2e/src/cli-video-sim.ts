/**
 * `./nuwa video-sim [--traces a,b] [--starts 0,20000] [--duration 62] [--variants JSON] [--json OUT]`:
 * the shipped MPC ABR (and variants of its options) playing the generated DASH content over a
 * Nuwa session, SIMULATED on the one engine (@nuwa/player/src/sim/video.ts: the real
 * NuwaController, the grant rule, a Mahimahi drop-tail bottleneck). Every variant runs on every
 * trace (default: all 3G, 4G and low-band 5G traces of the end-to-end set, not only the six of the
 * video bench) from each start offset into the trace, in the same run. Prints per trace the QoE per
 * chunk, rebuffering (s), switches and mean bitrate of each variant, then the means; `--json` keeps
 * every cell, with its switches split into up, down and reversals (VideoSimResult). A screen for ABR changes before an end-to-end invocation; figures are SIMULATED.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { parseMahimahiTrace, rotateTrace } from "@nuwa/cc/sim";
import type { NuwaMpcOptions } from "../../packages/player/src/dash/abr.js";
import { mpcAbr, simulateVideo, type VideoLadder } from "../../packages/player/src/sim/video.js";
import { listTraces } from "./bench.js";
import { parseCli, usageError } from "./cli-args.js";
import { ensureContent } from "./play.js";
import { PYTHON, REPO_ROOT } from "./procs.js";

const USAGE = `./nuwa video-sim [--traces a,b] [--starts 0,20000,40000] [--duration 62] [--variants JSON] [--json OUT] [--optimum]
  the MPC ABR (and variants of its options: '{"name": {...NuwaMpcOptions}}') on every 3G/4G/low-band 5G
  trace of the end-to-end set from each start offset (ms into the trace), SIMULATED, all in one run;
  --optimum: each cell's offline optimum too (lab/nuwa_lab/video_sim_optimum.py; about 2 s per cell)`;
const values = parseCli(USAGE, {
  traces: { type: "string" },
  starts: { type: "string", default: "0,20000,40000" },
  duration: { type: "string", default: "62" },
  variants: { type: "string" },
  json: { type: "string" },
  optimum: { type: "boolean", default: false },
});
const duration_s = Number(values.duration);
if (!(duration_s >= 10 && duration_s <= 600)) usageError(USAGE, `--duration must be 10..600 s (got ${values.duration})`);
const starts = values.starts.split(",").map(Number);
if (starts.some((s) => !Number.isInteger(s) || s < 0)) usageError(USAGE, `--starts must be non-negative integers, ms (got ${values.starts})`);
let variants: Record<string, Omit<NuwaMpcOptions, "history">> = { shipped: {} };
if (values.variants) {
  try {
    variants = JSON.parse(values.variants) as typeof variants;
  } catch (e) {
    usageError(USAGE, `--variants is not JSON: ${(e as Error).message}`);
  }
}
const all = listTraces().e2e.filter((t) => ["3G", "LTE-Saturator", "LTE-Lumos", "5G-lowband"].includes(t.family));
const wanted = values.traces?.split(",").filter(Boolean);
const traces = wanted ? all.filter((t) => wanted.some((w) => t.name.includes(w))) : all;
if (traces.length === 0) usageError(USAGE, `no trace matches ${values.traces}`);

const content_dir = await ensureContent(120);
// rungs and real segment sizes as the offline optimum reads them (abr_optimum.load_ladder)
const ladder = JSON.parse(execFileSync(PYTHON, ["-m", "nuwa_lab.video_sim_optimum", "--ladder", content_dir], { cwd: `${REPO_ROOT}lab`, encoding: "utf8" })) as VideoLadder;
console.log(`ladder ${ladder.bitrates_kbps.join(",")} kbit/s, ${ladder.video_bytes[0]!.length} segments of ${ladder.segment_s} s; ${traces.length} traces × ${starts.length} starts × ${Object.keys(variants).length} variants, ${duration_s} s each (SIMULATED)`);
type Cell = {
  trace: string;
  path: string;
  start_ms: number;
  variant: string;
  qoe: number;
  rebuffer_s: number;
  switches: number;
  up_switches: number;
  down_switches: number;
  reversals: number;
  mean_kbps: number;
  startup_s: number;
  played_chunks: number;
};
const cells: Cell[] = [];
const names = Object.keys(variants);
console.log(["trace", ...names.map((n) => `${n}: QoE / rebuf s / switches / kbit/s`)].join(" | "));
for (const t of traces) {
  const base = parseMahimahiTrace(readFileSync(`${REPO_ROOT}${t.path}`, "utf8"));
  const period = base[base.length - 1]!;
  const row: string[] = [];
  for (const v of names) {
    const here: Cell[] = [];
    for (const s of starts) {
      // the player's buffer target follows the variant's, as attachNuwa sets dash.js's bufferTimeDefault to it
      const r = simulateVideo({ trace: rotateTrace(base, s % period), ladder, duration_s, buffer_cap_s: variants[v]!.buffer_cap_s, abr: mpcAbr(variants[v]) });
      here.push({ trace: t.name, path: t.path, start_ms: s, variant: v, qoe: r.qoe, rebuffer_s: r.rebuffer_s, switches: r.switches, up_switches: r.up_switches, down_switches: r.down_switches, reversals: r.reversals, mean_kbps: r.mean_kbps, startup_s: r.startup_s, played_chunks: r.played_chunks });
    }
    cells.push(...here);
    const m = (k: keyof Cell) => here.reduce((a, c) => a + (c[k] as number), 0) / here.length;
    row.push(`${m("qoe").toFixed(2)} / ${m("rebuffer_s").toFixed(1)} / ${m("switches").toFixed(1)} / ${m("mean_kbps").toFixed(0)}`);
  }
  console.log([t.name, ...row].join(" | "));
}
const mean = (v: string, k: keyof Cell) => {
  const c = cells.filter((x) => x.variant === v);
  return c.reduce((a, x) => a + (x[k] as number), 0) / c.length;
};
console.log(["mean", ...names.map((v) => `${mean(v, "qoe").toFixed(3)} / ${mean(v, "rebuffer_s").toFixed(2)} / ${mean(v, "switches").toFixed(2)} / ${mean(v, "mean_kbps").toFixed(0)}`)].join(" | "));
const json_path = values.json ? resolve(values.json) : (values.optimum ? `${mkdtempSync(`${tmpdir()}/nuwa-video-sim-`)}/cells.json` : null);
if (json_path) writeFileSync(json_path, `${JSON.stringify({ simulated: true, duration_s, starts, variants, content_dir, ladder_kbps: ladder.bitrates_kbps, cells }, null, 1)}\n`);
if (values.optimum && json_path) {
  console.log("\nagainst the offline optimum (SIMULATED capacity = the trace from each start):");
  execFileSync(PYTHON, ["-m", "nuwa_lab.video_sim_optimum", "--json", json_path, "--out", json_path], { cwd: `${REPO_ROOT}lab`, stdio: "inherit" });
}
