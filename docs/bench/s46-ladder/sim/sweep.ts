import { readFileSync, writeFileSync } from "node:fs";
import { parseMahimahiTrace, simulateBulk } from "../../../../packages/cc/src/sim/index.ts";
import { listTraces } from "../../../../e2e/src/bench.ts";
const variants = JSON.parse(process.argv[2]!);
const traces = listTraces().e2e.map((t) => ({ name: t.name, trace: parseMahimahiTrace(readFileSync(t.path, "utf8")) }));
const out: Record<string, unknown> = {};
for (const [name, config] of Object.entries(variants) as [string, any][]) {
  const rec = traces.map((t) => {
    const r = simulateBulk({ trace: t.trace, duration_s: 60, config });
    let n = 0, over = 0; const s = r.samples;
    for (let i = 0; i < s.length; i += 3) { n++; if (s[i + 1]! > 500) over++; }
    return { trace: t.name, utilization: r.utilization, p95_ms: r.queuing_delay_ms.p95, loss_rate: r.loss_rate, over500: over / n };
  });
  out[name] = { recordings: rec };
  console.error(name, "done");
}
writeFileSync(process.argv[3]!, JSON.stringify({ configs: out }));
