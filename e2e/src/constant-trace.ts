/**
 * `--trace constant:MBPS` of `./nuwa bulk`: a constant-rate Mahimahi trace (traces/index.json
 * "format": one line per 1500-byte delivery opportunity, the file looping with the period of its
 * last timestamp), made at use time into `.cache/traces/` (never committed).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { REPO_ROOT } from "./procs.js";

/** Period of the generated trace, ms: 3 s holds a whole number of packets for any rate in steps of 4 kbit/s. */
const PERIOD_MS = 3000;

/**
 * Write a trace of `mbps` Mbit/s (1500-byte opportunities spread evenly over a 3 s loop) and return its path.
 * @param mbps rate, Mbit/s (0.1..1000)
 * @param out_dir where it goes (default `.cache/traces/` of the repository)
 * @returns `OUT_DIR/constant-MBPSmbit.mahi`
 * @throws Error when `mbps` is outside 0.1..1000
 */
export function constantTrace(mbps: number, out_dir = `${REPO_ROOT}.cache/traces`): string {
  if (!(mbps >= 0.1 && mbps <= 1000)) throw new Error(`constant trace: rate must be 0.1..1000 Mbit/s (got ${mbps})`);
  const packets = Math.round((mbps * 1e6 * PERIOD_MS) / 1000 / (1500 * 8));
  const lines: number[] = [];
  for (let k = 1; k <= packets; k++) lines.push(Math.ceil((k * PERIOD_MS) / packets));
  mkdirSync(out_dir, { recursive: true });
  const out = `${out_dir}/constant-${mbps}mbit.mahi`;
  writeFileSync(out, `${lines.join("\n")}\n`);
  return out;
}

/** `constant:MBPS` → the generated trace's path; any other string is returned as is. */
export function resolveTraceSpec(spec: string): string {
  const m = /^constant:([0-9.]+)$/.exec(spec);
  return m ? constantTrace(Number(m[1])) : spec;
}
