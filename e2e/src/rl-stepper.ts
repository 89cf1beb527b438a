/**
 * JSON-lines server over stdin/stdout around @nuwa/cc's BulkStepper, for the
 * Nuwa-RL environment in Python (models/nuwa_rl/env.py). One request per
 * line, one reply per line, in order:
 *
 *   {"cmd":"reset","trace":"traces/4G/x.mahi","trace_start_ms":0,"config":{...},
 *    "one_way_delay_ms":25,"queue_packets":1000}
 *     → {"ok":true,"period_ms":…,"mean_bps":…}
 *   {"cmd":"step","k":2.5,"interval_ms":200}  → {"ok":true,"stats":IntervalStats}
 *   {"cmd":"summary"}  → {"ok":true,"packets":…,"queuing_delay_ms":{"mean":…,"p50":…,"p95":…}}
 *                         (per packet since reset; needs "record_queuing_delays":true at reset)
 *   anything wrong                             → {"ok":false,"error":"…"}
 *
 * Run: node_modules/.bin/tsx e2e/src/rl-stepper.ts
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { BulkStepper, parseMahimahiTrace, percentile, traceMeanBps } from "@nuwa/cc/sim";

const traces = new Map<string, Uint32Array>();
let stepper: BulkStepper | null = null;

function trace(path: string): Uint32Array {
  let t = traces.get(path);
  if (!t) {
    t = parseMahimahiTrace(readFileSync(path, "utf8"));
    traces.set(path, t);
  }
  return t;
}

function handle(req: Record<string, unknown>): Record<string, unknown> {
  switch (req.cmd) {
    case "reset": {
      if (typeof req.trace !== "string") throw new Error("reset: 'trace' (a path) is required");
      const tr = trace(req.trace);
      stepper = new BulkStepper({
        trace: tr,
        trace_start_ms: (req.trace_start_ms as number | undefined) ?? 0,
        config: (req.config as Record<string, unknown> | undefined) ?? {},
        one_way_delay_ms: req.one_way_delay_ms as number | undefined,
        queue_packets: req.queue_packets as number | undefined,
        record_queuing_delays: req.record_queuing_delays === true,
      });
      return { ok: true, period_ms: tr[tr.length - 1], mean_bps: traceMeanBps(tr) };
    }
    case "step": {
      if (!stepper) throw new Error("step before reset");
      if (typeof req.k !== "number") throw new Error("step: 'k' (MSS per RTT) is required");
      stepper.setAggressiveness(req.k);
      return { ok: true, stats: stepper.advance((req.interval_ms as number | undefined) ?? 200) };
    }
    case "summary": {
      if (!stepper) throw new Error("summary before reset");
      const qd = stepper.queuing_delays_ms;
      let sum = 0;
      for (const x of qd) sum += x;
      return { ok: true, packets: qd.length, queuing_delay_ms: { mean: qd.length ? sum / qd.length : Number.NaN, p50: percentile(qd, 50), p95: percentile(qd, 95) } };
    }
    default:
      throw new Error(`unknown cmd ${JSON.stringify(req.cmd)}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let reply: Record<string, unknown>;
  try {
    reply = handle(JSON.parse(line) as Record<string, unknown>);
  } catch (e) {
    reply = { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
});
