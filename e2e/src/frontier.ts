/**
 * The offline frontier of traces as JSON (issue 14): `./nuwa frontier` and the frontier file that
 * `./nuwa bench` writes beside its runs (`frontier.json`, read by
 * lab/nuwa_lab/bench_report/frontier.py). Simulated, in process (packages/cc/src/sim/frontier.ts; docs/DESIGN.md §7 "The offline frontier").
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  CAUSAL_HEADROOMS_MS,
  CAUSAL_LOOKBACKS_MS,
  CAUSAL_QUANTILES,
  causalFrontPoints,
  FRONTIER_FAMILIES,
  FRONTIER_HEADROOMS_MS,
  type FrontierFamily,
  type FrontierOptions,
  type FrontierPoint,
  frontierEnvelope,
  frontierP95AtUtilization,
  frontierPoints,
} from "../../packages/cc/src/sim/frontier.js";
import { parseMahimahiTrace } from "../../packages/cc/src/sim/trace.js";

/** A queue of at least this many packets counts as deep (lab/nuwa_lab/bench_report/markdown.py DEEP_MIN_PACKETS), packets. */
export const DEEP_MIN_PACKETS = 500;

/** Utilizations at which `p95_at_utilization_ms` reports the frontier (issue 14 report), 0..1. */
export const FRONTIER_REPORT_UTILIZATIONS: readonly number[] = [0.9, 0.95];

/** One point as written to JSON: NaN becomes null. */
export interface FrontierPointJson {
  family: FrontierFamily;
  headroom_ms: number;
  utilization: number;
  p95_ms: number | null;
  loss_rate: number;
  /** Causal family only: look-back, ms, and quantile, percent. */
  lookback_ms?: number;
  quantile?: number;
}

/** The causal family of a trace (sim/frontier.ts causalWindowPoint): not the frontier, a reference. */
export interface CausalFrontJson {
  points: FrontierPointJson[];
  /** Their lower-left envelope, utilization ascending. */
  envelope: FrontierPointJson[];
  /** The envelope's p95 at each of FRONTIER_REPORT_UTILIZATIONS, ms (null: not reached). */
  p95_at_utilization_ms: Record<string, number | null>;
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
  /** The same on each family's own envelope, ms: `{family: {utilization: p95 | null}}`. */
  p95_at_utilization_ms_by_family: Record<string, Record<string, number | null>>;
  /** With `causal`: senders that know only the past capacity (not part of the envelope above). */
  causal?: CausalFrontJson;
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
  families: FrontierFamily[];
  /** Pacing interval of the paced family, ms. */
  paced_interval_ms: number;
  /** With `causal`: the causal family's grid (look-backs ms, quantiles %, headrooms ms) and what it is. */
  causal?: { model: string; lookbacks_ms: number[]; quantiles: number[]; headrooms_ms: number[] };
  traces: Record<string, TraceFrontierJson>;
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
const toJson = (p: FrontierPoint): FrontierPointJson => ({
  family: p.family,
  headroom_ms: p.headroom_ms,
  utilization: p.utilization,
  p95_ms: finite(p.p95_ms),
  loss_rate: p.loss_rate,
  ...(p.lookback_ms !== undefined ? { lookback_ms: p.lookback_ms, quantile: p.quantile } : {}),
});

/** A trace's name in the frontier file: its file name without `.mahi`. */
export function traceName(path: string): string {
  return basename(path).replace(/\.mahi$/, "");
}

/** One line for a trace's frontier: its p95 at the report's utilizations, overall and per family, ms. */
export function describeTraceFrontier(name: string, t: TraceFrontierJson): string {
  const show = (a: Record<string, number | null>) => Object.values(a).map((p) => (p === null ? "–" : p.toFixed(1))).join(" / ");
  const fams = Object.entries(t.p95_at_utilization_ms_by_family).map(([f, a]) => `${f} ${show(a)}`);
  const causal = t.causal ? `; causal ${show(t.causal.p95_at_utilization_ms)}` : "";
  return `${name}: p95 at util ${FRONTIER_REPORT_UTILIZATIONS.join(" / ")}: ${show(t.p95_at_utilization_ms)} ms (${fams.join(", ")}${causal})`;
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
  const families = [...(opts.families ?? FRONTIER_FAMILIES)];
  const out: FrontierJson = {
    model:
      "omniscient senders (packages/cc/src/sim/frontier.ts, docs/DESIGN.md §7), one point per family and headroom h: 'window' = ACK-clocked, window at t = capacity the trace offers over (t + d_down, t + d_down + RTT_base + h]; 'paced' = arrivals at a constant rate over each paced_interval_ms of the trace's clock, carrying the capacity of that interval shifted h later; envelope = points not dominated (higher utilization and lower p95) over both; an upper bound on the frontier of all window schedules",
    duration_s: opts.duration_s ?? 60,
    warmup_s: opts.warmup_s ?? 2,
    one_way_delay_ms: opts.one_way_delay_ms ?? 25,
    queue_packets: opts.queue_packets ?? 1000,
    packet_bytes: opts.packet_bytes ?? 1500,
    headrooms_ms: headrooms,
    families,
    paced_interval_ms: opts.paced_interval_ms ?? 2 * (opts.one_way_delay_ms ?? 25),
    ...(opts.causal
      ? {
          causal: {
            model:
              "causal senders (packages/cc/src/sim/frontier.ts causalWindowPoint): window at t = the q-th percentile of the capacity rates over 50 ms spans in (t - d_up - M, t - d_up], known exactly, times (RTT_base + h); they know the past, not the future; their envelope is a reference, not part of the frontier",
            lookbacks_ms: [...CAUSAL_LOOKBACKS_MS],
            quantiles: [...CAUSAL_QUANTILES],
            headrooms_ms: [...CAUSAL_HEADROOMS_MS],
          },
        }
      : {}),
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
    const pts = frontierPoints(trace, { ...opts, headrooms_ms: headrooms, families });
    const atU = (ps: FrontierPoint[]): Record<string, number | null> => Object.fromEntries(FRONTIER_REPORT_UTILIZATIONS.map((u) => [String(u), finite(frontierP95AtUtilization(ps, u))]));
    const at = atU(pts);
    const byFamily = Object.fromEntries(families.map((f) => [f, atU(pts.filter((p) => p.family === f))]));
    out.traces[t.name] = { path: t.path, points: pts.map(toJson), envelope: frontierEnvelope(pts).map(toJson), p95_at_utilization_ms: at, p95_at_utilization_ms_by_family: byFamily };
    if (opts.causal) {
      const cps = causalFrontPoints(trace, opts);
      out.traces[t.name]!.causal = { points: cps.map(toJson), envelope: frontierEnvelope(cps).map(toJson), p95_at_utilization_ms: atU(cps) };
    }
    log(`${describeTraceFrontier(t.name, out.traces[t.name]!)} (${((Date.now() - t0) / 1000).toFixed(1)} s CPU)`);
  }
  return out;
}

/**
 * One frontier file from several computed apart (one trace each: `./nuwa frontier`'s Ray cells,
 * e2e/src/cells.ts): the settings of the first, the traces of all in the given order.
 * @throws Error if there are none, their settings differ, or two hold the same trace name
 */
export function mergeFrontiers(parts: readonly FrontierJson[]): FrontierJson {
  if (parts.length === 0) throw new Error("mergeFrontiers: nothing to merge");
  const { traces: _, ...head } = parts[0]!;
  const out: FrontierJson = { ...head, traces: {} };
  for (const p of parts) {
    const { traces, ...settings } = p;
    if (JSON.stringify(settings) !== JSON.stringify(head)) throw new Error("mergeFrontiers: the parts were computed with different settings");
    for (const [name, t] of Object.entries(traces)) {
      if (name in out.traces) throw new Error(`frontier: two traces named ${name}`);
      out.traces[name] = t;
    }
  }
  return out;
}
