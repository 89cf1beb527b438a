/**
 * Flows sharing one bottleneck in `./nuwa bench` (issue 18 item 4): each mixed-flow run is
 * `python -m nuwa_lab.mix` (the same command as `./nuwa mix`: real servers, one emulator, real
 * receivers), one end-to-end cell of the matrix (e2e/src/cells.ts). Its JSON and its figure
 * (per-flow throughput over time with the switches marked, Jain's index over time:
 * lab/nuwa_lab/mix/plot.py) stay under `<out>/mix/<id>/`; the report's "Sharing a bottleneck"
 * section (lab/nuwa_lab/bench_report/mix.py) reads them from `bench-index.json`'s `mix` list.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { promisify } from "node:util";
import { PYTHON, REPO_ROOT } from "./procs.js";

/** Schemes a mixed flow may have (`./nuwa mix --flows`). */
export const MIX_SCHEMES = ["nuwa", "cubic", "reno", "bbr", "pbq"] as const;
/**
 * Switch policies (`./nuwa mix --switch`). `dqn` runs the checkout's `models/switch-dqn.onnx`
 * (`./nuwa mix`'s default model; an unusable file falls back to the rule, logged by the server).
 */
export const MIX_SWITCHES = ["none", "rule", "dqn"] as const;

/** One mixed-flow run of the bench. */
export interface MixSpec {
  /** `mix-<flows joined by +>-<link>-q<queue>-<switch>`. */
  id: string;
  /** Each flow's scheme, in start order. */
  flows: string[];
  switch: (typeof MIX_SWITCHES)[number];
  /** A constant link, Mbit/s, or a Mahimahi trace (repo-relative path). */
  link: { mbps: number } | { trace: string; name: string };
  queue_packets: number;
  duration_s: number;
  /** Flow i starts i × this after the first, s. */
  start_gap_s: number;
  /** One-way propagation delay each way, ms. */
  delay_ms: number;
  /** Controller config JSON of the Nuwa receivers (the bench's --cc). */
  cc: Record<string, unknown>;
}

/** What a mixed-flow cell gives back: its spec, where its files are, and its result (null if it failed). */
export interface MixRecord {
  spec: MixSpec;
  /** The run's JSON (`./nuwa mix --json`), relative to the bench's out dir. */
  json: string;
  /** Its figure, relative to the bench's out dir (absent when the plot failed). */
  plot: string | null;
  error: string | null;
  wall_s: number;
}

/**
 * Parse `--mix nuwa:cubic,nuwa:bbr` (a run's flows joined by ':', runs by ',') into flow lists.
 * @throws RangeError on an unknown scheme or a run of fewer than two flows
 */
export function parseMixPairs(s: string): string[][] {
  return s
    .split(",")
    .filter(Boolean)
    .map((run) => {
      const flows = run.split(":");
      if (flows.length < 2) throw new RangeError(`--mix: '${run}' is one flow; a mixed run needs two or more (e.g. nuwa:cubic)`);
      for (const f of flows) if (!(MIX_SCHEMES as readonly string[]).includes(f)) throw new RangeError(`--mix: unknown scheme '${f}' (allowed: ${MIX_SCHEMES.join(", ")})`);
      return flows;
    });
}

/**
 * The mixed-flow runs: every flow list × link × switch policy, in that order (links: a number is a
 * constant link in Mbit/s, anything else a trace given by its path).
 * @throws RangeError on an unknown switch policy or a non-positive rate
 */
export function planMix(o: {
  runs: string[][];
  switches: string[];
  links: ({ mbps: number } | { trace: string; name: string })[];
  queue_packets: number;
  duration_s: number;
  start_gap_s: number;
  delay_ms: number;
  cc: Record<string, unknown>;
}): MixSpec[] {
  for (const s of o.switches) if (!(MIX_SWITCHES as readonly string[]).includes(s)) throw new RangeError(`--mix-switch: unknown policy '${s}' (allowed: ${MIX_SWITCHES.join(", ")})`);
  const out: MixSpec[] = [];
  for (const flows of o.runs) {
    for (const link of o.links) {
      if ("mbps" in link && !(link.mbps > 0)) throw new RangeError(`--mix-links: a rate must be > 0 Mbit/s (got ${link.mbps})`);
      const lname = "mbps" in link ? `${link.mbps}mbps` : link.name;
      for (const sw of o.switches) {
        const id = `mix-${flows.join("+")}-${lname}-q${o.queue_packets}-${sw}`;
        out.push({ id, flows, switch: sw as MixSpec["switch"], link, queue_packets: o.queue_packets, duration_s: o.duration_s, start_gap_s: o.start_gap_s, delay_ms: o.delay_ms, cc: o.cc });
      }
    }
  }
  return out;
}

/** The `python -m nuwa_lab.mix` arguments of a run whose files go under `dir`. */
export function mixArgs(spec: MixSpec, dir: string): string[] {
  const link = "mbps" in spec.link ? ["--link-mbps", String(spec.link.mbps)] : ["--trace", spec.link.trace];
  return [
    "-m", "nuwa_lab.mix",
    "--flows", spec.flows.join(","),
    "--start-gap-s", String(spec.start_gap_s),
    "--switch", spec.switch,
    ...link,
    "--queue-packets", String(spec.queue_packets),
    "--delay-ms", String(spec.delay_ms),
    "--duration", String(spec.duration_s),
    "--cc", JSON.stringify(spec.cc),
    "--out", dir,
    "--json", `${dir}/result.json`,
  ];
}

/**
 * Run one mixed-flow run into `<out_dir>/mix/<id>/` (an earlier one there is removed first). The
 * command exits 1 when a flow reported errors and 3 when the emulator could not keep time, with its
 * JSON written either way (the report shows both); any other failure, or no readable JSON, is a
 * record with its error, as a failed bulk run is.
 */
export async function runMix(spec: MixSpec, out_dir: string): Promise<MixRecord> {
  const rel = `mix/${spec.id}`;
  const dir = `${out_dir}/${rel}`;
  rmSync(dir, { recursive: true, force: true });
  const t0 = Date.now();
  let error: string | null = null;
  try {
    await promisify(execFile)(PYTHON, mixArgs(spec, dir), { cwd: REPO_ROOT, maxBuffer: 16 << 20, timeout: (spec.duration_s + 120) * 1000 });
  } catch (e) {
    const err = e as { code?: number; stderr?: string; message: string };
    if (err.code !== 1 && err.code !== 3) error = `${err.message.split("\n")[0]}${err.stderr ? `: ${err.stderr.trim().split("\n").slice(-3).join(" | ")}` : ""}`.slice(0, 1000);
  }
  if (!error && !existsSync(`${dir}/result.json`)) error = "no result.json written";
  if (!error) {
    try {
      JSON.parse(readFileSync(`${dir}/result.json`, "utf8"));
    } catch (e) {
      error = `result.json unreadable: ${(e as Error).message}`;
    }
  }
  return { spec, json: `${rel}/result.json`, plot: existsSync(`${dir}/result.png`) ? `${rel}/result.png` : null, error, wall_s: (Date.now() - t0) / 1000 };
}
