/**
 * `./nuwa bulk --trace FILE --scheme nuwa|cubic|reno|bbr|nuwa_bbr|pbq --duration S --json OUT [--out DIR]
 *   [--delay-ms 25] [--queue-packets 1000] [--cc JSON] [--grants JSON] [--burst MIN..MAX[:SEED]]`
 */
import { writeFileSync } from "node:fs";
import { DEFAULT_GRANT_POLICY, GrantPolicy } from "@nuwa/player";
import { ALL_BULK_SCHEMES } from "./bench.js";
import { type BulkScheme, describeBulk, runBulk } from "./bulk.js";
import { burstVariant } from "./burst.js";
import { parseCcJson, parseCli, usageError } from "./cli-args.js";
import { resolveTraceSpec } from "./constant-trace.js";

const USAGE = `./nuwa bulk --trace FILE --scheme nuwa|nuwa_adaptive|nuwa_backlog|nuwa_raw|nuwa_fixed_td|nuwa_bbr|cubic|reno|bbr|pbq|oracle --duration S [--json OUT] [--out DIR]
  [--delay-ms 25] [--queue-packets 1000] [--cc JSON]   one bulk download through the trace-driven emulator
  [--grants JSON]   the page's grant cadence over DEFAULT_GRANT_POLICY (@nuwa/player grants.ts; e.g. '{"max_interval_us":5000}')
  (--trace constant:MBPS: a constant-rate trace made into .cache/traces/)
  [--burst MIN..MAX[:SEED]]   run the trace's burst variant (gaps MIN..MAX ms, seed; traces/README.md), made into .cache/traces/`;
const values = parseCli(USAGE, {
  trace: { type: "string", default: "traces/4G/mahimahi-tmobile-lte-short.mahi" },
  scheme: { type: "string", default: "nuwa" },
  duration: { type: "string", default: "30" },
  json: { type: "string" },
  out: { type: "string" },
  "delay-ms": { type: "string", default: "25" },
  "queue-packets": { type: "string", default: "1000" },
  cc: { type: "string", default: "{}" },
  grants: { type: "string", default: "{}" },
  burst: { type: "string" },
});
const cc = parseCcJson(USAGE, values.cc);
const grants = parseCcJson(USAGE, values.grants, "--grants");
for (const k of Object.keys(grants)) {
  if (!(k in DEFAULT_GRANT_POLICY)) usageError(USAGE, `--grants: unknown field ${k} (fields: ${Object.keys(DEFAULT_GRANT_POLICY).join(", ")})`);
}
try {
  new GrantPolicy({ ...DEFAULT_GRANT_POLICY, ...grants }); // the page's own check, before anything starts
} catch (e) {
  usageError(USAGE, `--grants: ${(e as Error).message}`);
}
const scheme = values.scheme as BulkScheme;
if (!ALL_BULK_SCHEMES.includes(scheme)) {
  usageError(USAGE, `--scheme must be one of ${ALL_BULK_SCHEMES.join(", ")} (got ${scheme})`);
}
const duration_s = Number(values.duration);
if (!(duration_s >= 5 && duration_s <= 3600)) {
  usageError(USAGE, `--duration must be 5..3600 s (got ${values.duration})`);
}
let trace = values.trace!;
try {
  trace = resolveTraceSpec(trace);
} catch (e) {
  usageError(USAGE, (e as Error).message);
}
if (values.burst) {
  try {
    trace = burstVariant(trace, values.burst);
  } catch (e) {
    usageError(USAGE, (e as Error).message);
  }
  console.log(`burst variant: ${trace}`);
}
const out_dir = values.out ?? `out/bulk-${scheme}-${Date.now()}`;
const r = await runBulk({
  trace,
  scheme,
  duration_s,
  out_dir,
  delay_ms: Number(values["delay-ms"]),
  queue_packets: Number(values["queue-packets"]),
  cc,
  grants,
});
console.log(describeBulk(r));
console.log(`logs: ${out_dir}`);
if (values.json) writeFileSync(values.json, JSON.stringify(r, null, 2));
