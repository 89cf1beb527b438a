/**
 * `./nuwa frontier [--traces a,b] [--burst-dir DIR] [--duration 60] [--queue-packets 1000] [--causal] [--ray-address ADDR] --json OUT`:
 * the offline frontier of traces (issue 14; packages/cc/src/sim/frontier.ts, docs/DESIGN.md §7),
 * SIMULATED, one Ray task (1 CPU) per trace (e2e/src/cells.ts; a local Ray, or the cluster at
 * --ray-address: docs/ARCHITECTURE.md "Runs that spread"): for each trace, the (utilization, p95 queuing delay) point of every
 * omniscient sender (window and paced families) of the headroom grid and their envelope. Traces: every 3G, 4G and
 * low-band 5G trace of traces/index.json found on disk (the end-to-end set of `./nuwa bench`),
 * plus every `*.mahi` in --burst-dir (e.g. burst variants made by
 * `python -m nuwa_lab.emulator.burstify`); --traces keeps those whose name or path contains
 * one of the given strings. `--causal` adds each trace's `causal` envelope: senders that know the
 * past capacity exactly and nothing of the future (sim/frontier.ts causalWindowPoint; 32 more runs
 * per trace, about 15 s of CPU at 60 s). Light CPU (a few seconds per trace without it), no
 * emulator: no lock needed.
 * Writes `{traces: {name: {points, envelope, p95_at_utilization_ms[, causal]}}, ...}` (e2e/src/frontier.ts)
 * and prints one line per trace.
 */
import { readdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { listTraces } from "./bench.js";
import { frontierCell, outputOf, spreadCells } from "./cells.js";
import { parseCli, usageError } from "./cli-args.js";
import { describeTraceFrontier, type FrontierJson, mergeFrontiers, traceName } from "./frontier.js";

const USAGE = `./nuwa frontier [--traces a,b] [--burst-dir DIR] [--duration 60] [--queue-packets 1000] [--causal] [--ray-address ADDR] --json OUT
  the offline frontier (omniscient senders, SIMULATED) of every 3G/4G/low-band 5G trace,
  plus every *.mahi in --burst-dir; --traces keeps names or paths containing one of a,b;
  --causal: also the envelope of senders that know only the past capacity (a reference);
  one Ray task per trace (a local Ray, or the cluster at --ray-address)`;
const values = parseCli(USAGE, {
  traces: { type: "string" },
  "burst-dir": { type: "string" },
  duration: { type: "string", default: "60" },
  "queue-packets": { type: "string", default: "1000" },
  json: { type: "string" },
  causal: { type: "boolean", default: false },
  "ray-address": { type: "string" },
});
if (!values.json) usageError(USAGE, "--json OUT is required");
const duration_s = Number(values.duration);
if (!(duration_s >= 5 && duration_s <= 3600)) usageError(USAGE, `--duration must be 5..3600 s (got ${values.duration})`);
const queue_packets = Number(values["queue-packets"]);
if (!(Number.isInteger(queue_packets) && queue_packets >= 1)) usageError(USAGE, `--queue-packets must be a positive integer (got ${values["queue-packets"]})`);

let traces = listTraces().e2e.map((t) => ({ name: t.name, path: t.path }));
if (values["burst-dir"]) {
  const dir = resolve(values["burst-dir"]);
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".mahi")).sort();
  } catch (e) {
    usageError(USAGE, `--burst-dir: ${(e as Error).message}`);
  }
  if (files.length === 0) usageError(USAGE, `--burst-dir: no .mahi file in ${dir}`);
  traces.push(...files.map((f) => ({ name: traceName(f), path: `${dir}/${f}` })));
}
if (values.traces) {
  const pats = values.traces.split(",").filter(Boolean);
  traces = traces.filter((t) => pats.some((p) => t.name === p || t.path.includes(p)));
  if (traces.length === 0) usageError(USAGE, `no trace matches --traces ${values.traces}`);
}
const names = traces.map((t) => t.name);
const twice = names.find((n, i) => names.indexOf(n) !== i);
if (twice) usageError(USAGE, `frontier: two traces named ${twice}`);
const cells = traces.map((t) => frontierCell(t, { duration_s, queue_packets, causal: values.causal }));
const spread = await spreadCells(cells, {
  ray_address: values["ray-address"],
  on_done: (d, n, total) => {
    const t = cells[d.index]!.work;
    const f = d.ok && t.kind === "frontier" ? (d.result as FrontierJson).traces[t.trace.name] : undefined;
    console.error(`[frontier] [${n}/${total}] ${f && t.kind === "frontier" ? describeTraceFrontier(t.trace.name, f) : `${d.id}: FAILED ${d.error}`} (${d.wall_s.toFixed(1)} s)`);
  },
});
let out: FrontierJson;
try {
  out = mergeFrontiers(cells.map((c, i) => outputOf<FrontierJson>(c, spread.done[i]!)));
} catch (e) {
  usageError(USAGE, (e as Error).message);
}
await spread.exited;
writeFileSync(values.json, JSON.stringify(out, null, 1));
console.log(`wrote ${values.json} (${traces.length} traces)`);
