/**
 * The offline frontier of traces as JSON (issue 14): `./nuwa frontier` and the frontier file that
 * `./nuwa bench` writes beside its runs (`frontier.json`, read by bench_report.py). Simulated, in
 * process (packages/cc/src/sim/frontier.ts; docs/DESIGN.md §7 "The offline frontier").
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  FRONTIER_HEADROOMS_MS,
  type FrontierOptions,
  type FrontierPoint,
  frontierEnvelope,
  frontierP95AtUtilization,
  frontierPoints,
} from "../../packages/cc/src/sim/frontier.js";
import { parseMahimahiTrace } from "../../packages/cc/src/sim/trace.js";

/** A queue of at least this many packets counts as deep (bench_report.py DEEP_MIN_PACKETS), packets. */
export const DEEP_MIN_PACKETS = 500;

/** Utilizations at which `p95_at_utilization_ms` reports the frontier (issue 14 report), 0..1. */
export const FRONTIER_REPORT_UTILIZATIONS: readonly number[] = [0.9, 0.95];

/** One point as written to JSON: NaN becomes null. */
export interface FrontierPointJson {
  headroom_ms: number;
  utilization: number;
  p95_ms: number | null;
  loss_rate: number;
}

export interface TraceFrontierJson {
  /** Trace file the frontier was computed from. */
  path: string;
  /** One point per headroom (module doc of sim/frontier.ts). */
  points: FrontierPointJson[];
  /** The lower-left envelope, utilization ascending (frontierEnvelope). */
  envelope: FrontierPointJson[];
  /** The frontier's p95 at each of FRONTIER_REPORT_UTILIZATIONS, ms (null: not reached). */
  p95_at_utilization_ms: Record<string, number | null>;
}

export interface FrontierJson {
  /** What the numbers are (so the file explains itself). */
  model: string;
  duration_s: number;
  warmup_s: number;
  one_way_delay_ms: number;
  queue_packets: number;
  packet_bytes: number;
  headrooms_ms: number[];
  traces: Record<string, TraceFrontierJson>;
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
const toJson = (p: FrontierPoint): FrontierPointJson => ({ headroom_ms: p.headroom_ms, utilization: p.utilization, p95_ms: finite(p.p95_ms), loss_rate: p.loss_rate });

/** A trace's name in the frontier file: its file name without `.mahi`. */
export function traceName(path: string): string {
  return basename(path).replace(/\.mahi$/, "");
}

/**
 * The frontier of each trace.
 * @param traces `{name, path}` of Mahimahi trace files (names must be unique)
 * @param opts simulation settings (defaults of sim/frontier.ts: 60 s, 25 ms each way, 1000 packets)
 * @param log progress, one line per trace
 * @throws Error on an unreadable or malformed trace, naming it
 */
export function computeFrontiers(traces: readonly { name: string; path: string }[], opts: FrontierOptions = {}, log: (s: string) => void = () => {}): FrontierJson {
  const headrooms = [...(opts.headrooms_ms ?? FRONTIER_HEADROOMS_MS)];
  const out: FrontierJson = {
    model:
      "omniscient window senders (packages/cc/src/sim/frontier.ts, docs/DESIGN.md §7): window at t = capacity the trace offers over (t + d_down, t + d_down + RTT_base + h], one point per headroom h; envelope = points not dominated (higher utilization and lower p95); an upper bound on the frontier of all window schedules",
    duration_s: opts.duration_s ?? 60,
    warmup_s: opts.warmup_s ?? 2,
    one_way_delay_ms: opts.one_way_delay_ms ?? 25,
    queue_packets: opts.queue_packets ?? 1000,
    packet_bytes: opts.packet_bytes ?? 1500,
    headrooms_ms: headrooms,
    traces: {},
  };
  for (const t of traces) {
    if (t.name in out.traces) throw new Error(`frontier: two traces named ${t.name}`);
    let trace: Uint32Array;
    try {
      trace = parseMahimahiTrace(readFileSync(t.path, "utf8"));
    } catch (e) {
      throw new Error(`frontier: ${t.path}: ${(e as Error).message}`);
    }
    const t0 = Date.now();
    const pts = frontierPoints(trace, { ...opts, headrooms_ms: headrooms });
    const at: Record<string, number | null> = {};
    for (const u of FRONTIER_REPORT_UTILIZATIONS) at[String(u)] = finite(frontierP95AtUtilization(pts, u));
    out.traces[t.name] = { path: t.path, points: pts.map(toJson), envelope: frontierEnvelope(pts).map(toJson), p95_at_utilization_ms: at };
    log(`${t.name}: p95 ${Object.entries(at).map(([u, p]) => `${p === null ? "–" : p.toFixed(1)} ms at util ${u}`).join(", ")} (${((Date.now() - t0) / 1000).toFixed(1)} s CPU)`);
  }
  return out;
}
