/**
 * Nuwa-RL in Chromium (rl.e2e.test.ts): the shipped model under onnxruntime-web's
 * wasm entry replays its export-time fixtures (parity), then the RlTuner makes
 * 300 decisions on the main thread and reports their inference times.
 */
import { type OrtLike, type RlModelMetadata, RlTuner } from "@nuwa/player";
import * as ort from "onnxruntime-web/wasm";

interface Fixtures {
  obs: number[][];
  episode_start: number[];
  logits: number[][];
  actions: number[];
}

const status = document.getElementById("status")!;

async function main(): Promise<Record<string, unknown>> {
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = "/ort/";
  const model = new Uint8Array(await (await fetch("/models/nuwa-rl.onnx")).arrayBuffer());
  const meta = (await (await fetch("/models/nuwa-rl.json")).json()) as RlModelMetadata;
  const fx = (await (await fetch("/models/nuwa-rl.fixtures.json")).json()) as Fixtures;
  const t_create0 = performance.now();
  const s = await ort.InferenceSession.create(model);
  const create_ms = performance.now() - t_create0;
  const H = meta.lstm.hidden_size;
  let h = new Float32Array(H);
  let c = new Float32Array(H);
  const actions: number[] = [];
  let worst = 0;
  for (let i = 0; i < fx.obs.length; i++) {
    const out = await s.run({
      obs: new ort.Tensor("float32", Float32Array.from(fx.obs[i]!), [1, fx.obs[i]!.length]),
      h: new ort.Tensor("float32", h, [1, 1, H]),
      c: new ort.Tensor("float32", c, [1, 1, H]),
      episode_start: new ort.Tensor("float32", Float32Array.of(fx.episode_start[i]!), [1]),
    });
    const logits = out.logits!.data as Float32Array;
    h = Float32Array.from(out.h_out!.data as Float32Array);
    c = Float32Array.from(out.c_out!.data as Float32Array);
    for (let j = 0; j < logits.length; j++) worst = Math.max(worst, Math.abs(logits[j]! - fx.logits[i]![j]!));
    actions.push(logits.indexOf(Math.max(...logits)));
  }
  // The tuner as the player runs it (its default runtime: onnxruntime-web/wasm).
  let k = 4;
  const target = {
    config: { aggressiveness_mss: 4 },
    setParams: (p: { aggressiveness_mss: number }) => {
      k = p.aggressiveness_mss;
    },
  };
  const tuner = await RlTuner.load(target, { model, metadata: meta, ort: ort as unknown as OrtLike });
  let cum = 0;
  const wall: number[] = [];
  for (let i = 1; i <= 300; i++) {
    cum += 50_000 + 20_000 * (i % 5);
    const t0 = performance.now();
    await tuner.decide({ cum_received_bytes: cum, window_bytes: 30_000 + 1000 * (i % 7), buffer_s: Math.min(30, i / 5), queuing_delay_ms: i % 40 }, i * 200);
    wall.push(performance.now() - t0);
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const q = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.round(p * (xs.length - 1)))]!;
  const inf = tuner.inference_ms.slice(20); // after warm-up
  return {
    actions,
    worst_logit_diff: worst,
    create_ms,
    tuner_state: tuner.state,
    tuner_error: tuner.error,
    k_final: k,
    decisions: tuner.inference_ms.length,
    inference_ms: { p50: q(inf, 0.5), p95: q(inf, 0.95), max: Math.max(...inf) },
    decide_wall_ms: { p50: q(wall.slice(20), 0.5), p95: q(wall.slice(20), 0.95) },
    model_bytes: model.byteLength,
    user_agent: navigator.userAgent,
  };
}

main().then(
  (r) => {
    (window as unknown as { __result: unknown }).__result = r;
    status.textContent = JSON.stringify(r, null, 1);
  },
  (e: unknown) => {
    (window as unknown as { __result: unknown }).__result = { error: String(e) };
    status.textContent = String(e);
  },
);
