// The 18 dev traces in the simulator (simulateBulk, 25 ms each way, 1000 packets) with a controller config,
// scored against issue 14's per-trace bounds with Cubic's END-TO-END figures of the twentieth session.
// Run: node_modules/.bin/tsx docs/bench/s23-causal/sim18.ts '{"target_delay_ms":20}' 60
// (the capacity floor's configs need capacity-floor.patch applied: git apply docs/bench/s23-causal/capacity-floor.patch)
import { readFileSync, readdirSync } from "node:fs";
import { simulateBulk } from "../../../packages/cc/src/sim/bulk.ts";
import { parseMahimahiTrace } from "../../../packages/cc/src/sim/trace.ts";
// e2e cubic figures (s20-bulk): util, p95
const cubic: Record<string, [number, number]> = {
  "mahimahi-tmobile-umts-driving": [0.984, 7395], "norway-hsdpa-bus-1": [0.985, 2581], "norway-hsdpa-train-13": [1.0, 3221],
  "nyc2018-unknownop-3g-subway": [0.957, 7930], "nyc2018-unknownop-3g-subway-cross": [0.973, 1115], "nyc2018-unknownop-3g-timessquare-1": [0.969, 2530],
  "mnwild-tmobile-5g-sa-lowband-walking-r20061": [0.903, 260], "lumos-vzw-lte-driving-50087": [0.788, 421], "mahimahi-att-lte-driving": [0.965, 1308],
  "mahimahi-tmobile-lte-short": [0.944, 1076], "mahimahi-verizon-lte-short": [0.975, 2758], "nyc2018-tmobile-lte-timessquare-static-cross": [1.0, 1226],
  "nyc2018-unknownop-lte-subway-cross": [0.973, 1680], "nyc2019-unknownop-lte-bus-3114405": [0.998, 1174], "nyc2019-unknownop-lte-stationary-home3": [0.999, 796],
  "nyc2019-unknownop-lte-taxi-1": [1.0, 487], "nyc2019-unknownop-lte-walking-3201711": [0.964, 1884], "nyc2019-unknownop-lte-walking-3205967": [0.988, 1131],
};
const cfg = JSON.parse(process.argv[2] ?? "{}");
const dur = Number(process.argv[3] ?? 60);
let u95 = 0, u85 = 0, pok = 0, n = 0; const ps: number[] = []; const us: number[] = [];
for (const fam of ["3G", "4G", "5G"]) for (const f of readdirSync(new URL(`../../../traces/${fam}`, import.meta.url))) {
  const name = f.replace(".mahi", "");
  const tr = parseMahimahiTrace(readFileSync(new URL(`../../../traces/${fam}/${f}`, import.meta.url), "utf8"));
  const r = simulateBulk({ trace: tr, duration_s: dur, one_way_delay_ms: 25, queue_packets: 1000, config: cfg });
  const [cu, cp] = cubic[name];
  const ratio = r.utilization / cu; const bound = Math.max(50, 0.1 * cp);
  n++; if (ratio >= 0.95) u95++; if (ratio >= 0.85) u85++; if (r.queuing_delay_ms.p95 <= bound) pok++;
  ps.push(r.queuing_delay_ms.p95); us.push(r.utilization);
  console.log(`${name.padEnd(46)} util ${r.utilization.toFixed(3)} (${ratio.toFixed(2)}x${ratio >= 0.95 ? "" : " ✗"}) p95 ${r.queuing_delay_ms.p95.toFixed(0)}/${bound.toFixed(0)}${r.queuing_delay_ms.p95 <= bound ? "" : " ✗"} loss ${(r.loss_rate * 100).toFixed(2)}%`);
}
console.log(`SUMMARY ${JSON.stringify(cfg)}: util≥0.95x ${u95}/${n}, ≥0.85x ${u85}/${n}, p95 ${pok}/${n}, mean util ${(us.reduce((a, b) => a + b) / n).toFixed(3)}, mean p95 ${(ps.reduce((a, b) => a + b) / n).toFixed(0)}`);
