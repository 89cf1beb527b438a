/**
 * `--burst MIN..MAX[:SEED]` of `./nuwa bulk`: the burst variant of a trace (traces/README.md
 * "Burst variants"), made at use time by `python -m nuwa_lab.emulator.burstify` into
 * `.cache/traces/` (never committed).
 */
import { execFileSync } from "node:child_process";
import { basename } from "node:path";
import { PYTHON, REPO_ROOT } from "./procs.js";

/**
 * Write the burst variant of `trace` and return its path.
 * @param trace a Mahimahi trace file
 * @param spec `MIN..MAX` burst gaps in ms, optionally `:SEED` (default seed 1), e.g. `20..100:3`
 * @param out_dir where the variant goes (default `.cache/traces/` of the repository)
 * @returns `OUT_DIR/NAME-burstMIN..MAX-sSEED.mahi`
 * @throws Error on a malformed spec, or when burstify fails (its stderr in the message)
 */
export function burstVariant(trace: string, spec: string, out_dir = `${REPO_ROOT}.cache/traces`): string {
  const m = /^(\d+\.\.\d+)(?::(\d+))?$/.exec(spec);
  if (!m) throw new Error(`--burst: expected MIN..MAX[:SEED] in ms, e.g. 20..100:1 (got ${spec})`);
  const [gaps, seed] = [m[1]!, m[2] ?? "1"];
  const out = `${out_dir}/${basename(trace, ".mahi")}-burst${gaps}-s${seed}.mahi`;
  try {
    execFileSync(PYTHON, ["-m", "nuwa_lab.emulator.burstify", trace, out, "--gap-ms", gaps, "--seed", seed], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    throw new Error(`--burst ${spec}: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`);
  }
  return out;
}
