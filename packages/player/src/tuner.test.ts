/**
 * Nuwa-RL tuner: the shipped model (models/nuwa-rl.onnx) against the fixtures
 * written when it was exported, under onnxruntime-node and onnxruntime-web
 * (wasm entry, in Node); the observation features against Python's; and each
 * failure (missing / bad model, wrong input shape, foreign metadata, NaN
 * observation) ending in a clear error and a fixed k.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { NuwaController } from "@nuwa/cc";
import * as ortNode from "onnxruntime-node";
import * as ortWeb from "onnxruntime-web/wasm";
import { describe, expect, it, vi } from "vitest";
import { type OrtLike, type RlModelMetadata, RlTuner, type TunerEvent, tunerFeatures } from "./tuner.js";

const MODELS = resolve(__dirname, "../../../models");
const TESTDATA = resolve(__dirname, "testdata");
const model = new Uint8Array(readFileSync(`${MODELS}/nuwa-rl.onnx`));
const meta = JSON.parse(readFileSync(`${MODELS}/nuwa-rl.json`, "utf8")) as RlModelMetadata & { onnx_bytes: number };
const fixtures = JSON.parse(readFileSync(`${MODELS}/nuwa-rl.fixtures.json`, "utf8")) as {
  obs: number[][];
  episode_start: number[];
  logits: number[][];
  actions: number[];
  tolerance_logits: number;
};
ortWeb.env.wasm.numThreads = 1;
const ORT_WEB = ortWeb as unknown as OrtLike;

/** Replay the fixtures through one runtime; returns the max |logit difference|. */
async function replay(ort: OrtLike): Promise<{ actions: number[]; worst: number }> {
  const s = await ort.InferenceSession.create(model);
  const H = meta.lstm.hidden_size;
  let h = new Float32Array(H);
  let c = new Float32Array(H);
  const actions: number[] = [];
  let worst = 0;
  for (let i = 0; i < fixtures.obs.length; i++) {
    const out = await s.run({
      obs: new ort.Tensor("float32", Float32Array.from(fixtures.obs[i]!), [1, fixtures.obs[i]!.length]),
      h: new ort.Tensor("float32", h, [1, 1, H]),
      c: new ort.Tensor("float32", c, [1, 1, H]),
      episode_start: new ort.Tensor("float32", Float32Array.of(fixtures.episode_start[i]!), [1]),
    });
    const logits = out.logits!.data as Float32Array;
    h = Float32Array.from(out.h_out!.data as Float32Array);
    c = Float32Array.from(out.c_out!.data as Float32Array);
    logits.forEach((x, j) => {
      worst = Math.max(worst, Math.abs(x - fixtures.logits[i]![j]!));
    });
    actions.push(logits.indexOf(Math.max(...logits)));
  }
  return { actions, worst };
}

function tuner(opts: Partial<Parameters<typeof RlTuner.load>[1]> = {}, k0 = 4) {
  const ctl = new NuwaController({ step: "additive", aggressiveness_mss: k0 });
  const events: TunerEvent[] = [];
  const load = RlTuner.load(ctl, { model, metadata: meta, ort: ORT_WEB, onEvent: (e) => events.push(e), ...opts });
  return { ctl, events, load };
}

describe("Nuwa-RL model parity with its export-time fixtures", () => {
  it("the fixtures are a real sequence with an LSTM reset in it", () => {
    expect(fixtures.obs.length).toBeGreaterThanOrEqual(16);
    expect(fixtures.episode_start.filter((x) => x === 1).length).toBeGreaterThanOrEqual(2);
    expect(fixtures.obs[0]!.length).toBe(meta.inputs.obs[1]);
  });

  it("onnxruntime-node gives the fixture actions and logits", async () => {
    const r = await replay(ortNode as unknown as OrtLike);
    expect(r.actions).toEqual(fixtures.actions);
    expect(r.worst).toBeLessThanOrEqual(fixtures.tolerance_logits);
  });

  it("onnxruntime-web (wasm entry) gives the fixture actions and logits", async () => {
    const r = await replay(ORT_WEB);
    expect(r.actions).toEqual(fixtures.actions);
    expect(r.worst).toBeLessThanOrEqual(fixtures.tolerance_logits);
  });

  it("metadata describes the shipped file", () => {
    expect(meta.onnx_bytes).toBe(model.byteLength);
    expect(meta.actions).toEqual([0.25, 1, 1.05, 1.25, 2.85]); // Eq. 11
    expect([meta.k_min_mss, meta.k_max_mss]).toEqual([1, 9]);
  });
});

describe("tunerFeatures (agent.features in Python)", () => {
  const vectors = JSON.parse(readFileSync(`${TESTDATA}/features.json`, "utf8")) as { raw: number[]; features: number[] }[];
  it("agrees with Python to 1e-6 on the shared vectors", () => {
    for (const v of vectors) {
      const got = tunerFeatures(...(v.raw as [number, number, number, number, number]));
      for (const [i, x] of v.features.entries()) expect(got[i]!).toBeCloseTo(x, 6);
    }
  });
  it("names the bad input", () => {
    expect(() => tunerFeatures(1, 1, Number.NaN, 1, 1)).toThrow(/buffer_s/);
    expect(() => tunerFeatures(-1, 1, 1, 1, 1)).toThrow(/throughput_bps/);
  });
});

describe("RlTuner", () => {
  it("runs the model each interval and moves k by a factor of the action set, within [1, 9]", async () => {
    const { ctl, events, load } = tuner({}, 4);
    const t = await load;
    expect(t.state).toBe("running");
    expect(ctl.config.aggressiveness_mss).toBe(meta.k_initial_mss);
    let cum = 0;
    let k = t.kMss;
    for (let i = 1; i <= 30; i++) {
      cum += 60_000 + 10_000 * (i % 3);
      const next = await t.decide({ cum_received_bytes: cum, window_bytes: 40_000, buffer_s: Math.min(30, i), queuing_delay_ms: 5 + (i % 7) }, i * 200);
      const ratio = next / k;
      expect(next).toBeGreaterThanOrEqual(1);
      expect(next).toBeLessThanOrEqual(9);
      if (next > 1 && next < 9 && k > 1 && k < 9) expect(meta.actions.some((a) => Math.abs(a - ratio) < 1e-9)).toBe(true);
      expect(ctl.config.aggressiveness_mss).toBe(next);
      k = next;
    }
    const decisions = events.filter((e) => e.type === "tuner_decision");
    expect(decisions).toHaveLength(30);
    expect(events[0]!.type).toBe("tuner_ready");
    expect(t.inference_ms).toHaveLength(30);
  });

  it("a missing model file: clear error, k stays the configured one", async () => {
    const { ctl, events, load } = tuner({ model: `${MODELS}/no-such-model.onnx` }, 4);
    const t = await load;
    expect(t.state).toBe("fallback");
    expect(t.error).toMatch(/RL model failed to load.*no-such-model\.onnx/);
    expect(ctl.config.aggressiveness_mss).toBe(4);
    expect(events).toEqual([expect.objectContaining({ type: "tuner_fallback", k_mss: 4, error: expect.stringMatching(/failed to load.*keeping k = 4/) })]);
    expect(await t.decide({ cum_received_bytes: 1, window_bytes: 1, buffer_s: 1, queuing_delay_ms: 1 }, 200)).toBe(4);
  });

  it("a file that is not a model: clear error, fixed k", async () => {
    const { ctl, load } = tuner({ model: new Uint8Array(readFileSync(`${TESTDATA}/bad.onnx`)) }, 5);
    const t = await load;
    expect(t.state).toBe("fallback");
    expect(t.error).toMatch(/RL model failed to load \(512 bytes\)/);
    expect(ctl.config.aggressiveness_mss).toBe(5);
  });

  it("a model with the wrong input shape: clear error, fixed k", async () => {
    const { ctl, load } = tuner({ model: new Uint8Array(readFileSync(`${TESTDATA}/wrong-shape.onnx`)) }, 6);
    const t = await load;
    expect(t.state).toBe("fallback");
    expect(t.error).toMatch(/does not match its metadata \(obs \[1, 40\].*obs/);
    expect(ctl.config.aggressiveness_mss).toBe(6);
  });

  it("metadata asking for features this tuner does not compute: clear error, fixed k", async () => {
    const other = structuredClone(meta);
    other.observation.features = [...other.observation.features].reverse();
    const t = await tuner({ metadata: other }, 2).load;
    expect(t.state).toBe("fallback");
    expect(t.error).toMatch(/expects features/);
  });

  it("a NaN observation: clear error, k back to the configured one, no more decisions", async () => {
    const { ctl, events, load } = tuner({ fallback_k_mss: 7 }, 4);
    const t = await load;
    await t.decide({ cum_received_bytes: 1e5, window_bytes: 3e4, buffer_s: 2, queuing_delay_ms: 3 }, 200);
    const k = await t.decide({ cum_received_bytes: 2e5, window_bytes: 3e4, buffer_s: Number.NaN, queuing_delay_ms: 3 }, 400);
    expect(k).toBe(7);
    expect(t.state).toBe("fallback");
    expect(t.error).toMatch(/bad observation: observation buffer_s must be finite/);
    expect(ctl.config.aggressiveness_mss).toBe(7);
    expect(events.at(-1)).toMatchObject({ type: "tuner_fallback", k_mss: 7 });
    expect(await t.decide({ cum_received_bytes: 3e5, window_bytes: 3e4, buffer_s: 2, queuing_delay_ms: 3 }, 600)).toBe(7);
  });

  it("start() decides from its own timer, off the frame path", async () => {
    const { load } = tuner({ metadata: { ...meta, interval_ms: 20 } });
    const t = await load;
    let cum = 0;
    t.start(() => ({ cum_received_bytes: (cum += 5000), window_bytes: 2e4, buffer_s: 3, queuing_delay_ms: 2 }));
    // No frame arrives: only the tuner's own 20 ms timer can make decisions. Waited for, not slept
    // for a fixed 300 ms (CI's computation lane once let only 2 ticks run in that time).
    await vi.waitFor(() => expect(t.inference_ms.length).toBeGreaterThanOrEqual(3), { timeout: 10_000 });
    t.stop();
    expect(t.state).toBe("running");
  });
});
