/**
 * `./nuwa signals [--configs JSON] [--duration 60] [--json OUT]`: which queuing-delay signal should
 * drive the window (docs/DESIGN.md §3 "Service delay"), SIMULATED on the one engine
 * (packages/cc/src/sim: pacing, the ceiling, QUIC repair), every config measured in the same run:
 * - the recordings: every 3G, 4G and low-band 5G trace of the end-to-end set, one flow, deep queue;
 * - their burst variants (deliveries regrouped into 20–100 ms bursts, bytes conserved, seed 1;
 *   traces/README.md "Burst variants"), the bursty-delivery regime of issue 14;
 * - flows sharing one queue on a constant link (2 on 12, 5 on 6, 20 on 24 Mbit/s; starts 0.5 s
 *   apart, Jain's index and p95 from 20 s).
 * Default configs: the raw Qd, the backlog delay, the service delay (the default), and the
 * service delay with the adaptive Td; `--configs '{"name": {...NuwaConfig}}'` replaces them.
 * Prints one row per config (mean (min) utilization / mean p95 ms, and Jain / p95 per shared
 * link) and, with --json, every cell. One core, a few minutes per config; no emulator.
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { NuwaConfig } from "@nuwa/cc";
import { burstVariant, constantRateTrace, parseMahimahiTrace, simulateBulk, simulateShared } from "@nuwa/cc/sim";
import { listTraces } from "./bench.js";
import { parseCli, usageError } from "./cli-args.js";

const USAGE = `./nuwa signals [--configs JSON] [--duration 60] [--json OUT]
  the queuing-delay signals (raw, backlog, service, service + adaptive Td) on every 3G/4G/low-band 5G
  trace, their burst variants and shared constant links, SIMULATED, all in one run`;
const values = parseCli(USAGE, {
  configs: { type: "string" },
  duration: { type: "string", default: "60" },
  json: { type: "string" },
});
const duration_s = Number(values.duration);
if (!(duration_s >= 25 && duration_s <= 600)) usageError(USAGE, `--duration must be 25..600 s (got ${values.duration})`);
let configs: Record<string, Partial<NuwaConfig>> = {
  raw: { qd_source: "raw" },
  backlog: { qd_source: "backlog" },
  service: { qd_source: "service" },
  "service + adaptive Td": { qd_source: "service", adaptive_target_delay: true },
};
if (values.configs) {
  try {
    configs = JSON.parse(values.configs) as Record<string, Partial<NuwaConfig>>;
  } catch (e) {
    usageError(USAGE, `--configs is not JSON: ${String(e)}`);
  }
}

const traces = listTraces().e2e.map((t) => ({ name: t.name, trace: parseMahimahiTrace(readFileSync(t.path, "utf8")) }));
const SHARED: [string, number, number][] = [
  ["2 on 12 Mbit/s", 12e6, 2],
  ["5 on 6 Mbit/s", 6e6, 5],
  ["20 on 24 Mbit/s", 24e6, 20],
];
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const out: Record<string, unknown> = {};
console.log(`| signal | recordings (${traces.length}): mean (min) util / p95 ms | burst variants (${traces.length}) | ${SHARED.map((s) => s[0]).join(" | ")} (Jain / p95 ms) |`);
console.log(`|---|---|---|${SHARED.map(() => "---").join("|")}|`);
for (const [name, config] of Object.entries(configs)) {
  const rec = traces.map((t) => ({ trace: t.name, ...pick(simulateBulk({ trace: t.trace, duration_s, config })) }));
  const bur = traces.map((t) => ({ trace: `${t.name}-burst20..100-s1`, ...pick(simulateBulk({ trace: burstVariant(t.trace, 20, 100, 1), duration_s, config })) }));
  const sh = SHARED.map(([label, bps, n]) => {
    const r = simulateShared({ trace: constantRateTrace(bps, 1000), duration_s, fair_from_s: 20, flows: Array.from({ length: n }, (_, i) => ({ start_s: i * 0.5, config })) });
    return { link: label, jain_index: r.jain_index, utilization: r.utilization, p95_ms: r.queuing_delay_ms.p95 };
  });
  out[name] = { config, recordings: rec, bursts: bur, shared: sh };
  const cell = (xs: { utilization: number; p95_ms: number }[]) =>
    `${mean(xs.map((x) => x.utilization)).toFixed(3)} (${Math.min(...xs.map((x) => x.utilization)).toFixed(3)}) / ${mean(xs.map((x) => x.p95_ms)).toFixed(0)}`;
  console.log(`| ${name} | ${cell(rec)} | ${cell(bur)} | ${sh.map((s) => `${s.jain_index.toFixed(3)} / ${s.p95_ms.toFixed(0)}`).join(" | ")} |`);
}
if (values.json) writeFileSync(values.json, `${JSON.stringify({ duration_s, configs: out }, null, 1)}\n`);

function pick(r: ReturnType<typeof simulateBulk>): { utilization: number; p95_ms: number; loss_rate: number } {
  return { utilization: r.utilization, p95_ms: r.queuing_delay_ms.p95, loss_rate: r.loss_rate };
}
