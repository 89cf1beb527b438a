/**
 * Nuwa-RL tuner: a PPO-LSTM agent (nuwa-rl-journal §V-B) that picks the
 * controller's k every decision interval, from the receiver's own view.
 *
 * The model is the ONNX actor step exported by `models/nuwa_rl/export.py`
 * (obs, h, c, episode_start → logits, h_out, c_out) with its metadata JSON
 * (observation layout and normalisation, action set, interval). It runs in
 * onnxruntime-web's wasm entry, from its own timer and asynchronously: never
 * inside the controller's per-frame path (STYLE habit 10: an optional part,
 * injected). k is applied with `controller.setParams({ aggressiveness_mss })`.
 *
 * Failure never stops the session: a model that will not load, a model whose
 * input shape is not the metadata's, metadata this tuner cannot compute, or a
 * NaN / negative observation puts the tuner in `fallback`: k returns to the
 * controller's configured value and stays fixed, and a `tuner_fallback` event
 * says why.
 */
import type { NuwaConfig } from "@nuwa/cc";

/** The part of NuwaController the tuner needs. */
export interface KTarget {
  readonly config: Readonly<Pick<NuwaConfig, "aggressiveness_mss">>;
  setParams(p: { aggressiveness_mss: number }): void;
}

/** models/nuwa-rl.json (the fields the tuner reads). */
export interface RlModelMetadata {
  version: number;
  inputs: { obs: [string | number, number] };
  lstm: { hidden_size: number };
  observation: { history_len: number; features: { name: string; normalise: string }[] };
  actions: number[];
  k_min_mss: number;
  k_max_mss: number;
  k_initial_mss: number;
  interval_ms: number;
  /** Controller settings the model was trained with (step, target_delay_ms, sensitivity_ms). */
  controller?: { step?: string; target_delay_ms?: number; sensitivity_ms?: number };
}

/** What the receiver saw at the end of an interval. */
export interface TunerInput {
  /** All frame bytes received so far (controller.cumReceivedBytes), bytes. */
  cum_received_bytes: number;
  /** The controller's window, bytes. */
  window_bytes: number;
  /** The player's buffer level, s. */
  buffer_s: number;
  /** The controller's raw Eq. 1 queuing delay of the last frame, ms. */
  queuing_delay_ms: number;
}

export type TunerEvent =
  | { type: "tuner_ready"; t_ms: number; create_ms: number; interval_ms: number; hidden_size: number; obs_dim: number }
  | { type: "tuner_decision"; t_ms: number; k_mss: number; action: number; factor: number; inference_ms: number; reason: string }
  | { type: "tuner_fallback"; t_ms: number; k_mss: number; error: string };

/** The slice of onnxruntime-web (or -node) the tuner uses. */
export interface OrtTensorLike {
  readonly data: unknown;
  readonly dims: readonly number[];
}
export interface OrtSessionLike {
  run(feeds: Record<string, OrtTensorLike>): Promise<Record<string, OrtTensorLike>>;
}
export interface OrtLike {
  InferenceSession: { create(model: string | Uint8Array, options?: Record<string, unknown>): Promise<OrtSessionLike> };
  Tensor: new (type: "float32", data: Float32Array, dims: number[]) => OrtTensorLike;
}

export interface RlTunerOptions {
  /** Model URL, or its bytes. */
  model: string | Uint8Array;
  /** Metadata, or its URL. Default: the model URL with `.json` for `.onnx`. */
  metadata?: RlModelMetadata | string;
  /** onnxruntime to use. Default: `import("onnxruntime-web/wasm")`, one wasm thread. */
  ort?: OrtLike;
  /** Where onnxruntime-web finds its .wasm (ort.env.wasm.wasmPaths). */
  wasm_paths?: string;
  /** k kept on any failure, MSS per RTT. Default: the controller's configured k. */
  fallback_k_mss?: number;
  /** Telemetry / log sink. */
  onEvent?: (e: TunerEvent) => void;
  /** Clock, ms. Default performance.now(). */
  now_ms?: () => number;
}

/** The feature contract this tuner computes (models/nuwa_rl/agent.py FEATURES), name → normalisation. */
export const TUNER_FEATURES: readonly { name: string; normalise: string }[] = [
  { name: "throughput", normalise: "log2(1 + throughput_Mbps) / 10" },
  { name: "window", normalise: "log2(1 + window_bytes / 1200) / 16" },
  { name: "buffer", normalise: "buffer_s / 30" },
  { name: "queuing_delay", normalise: "min(queuing_delay_ms, 1000) / 100" },
  { name: "k", normalise: "k_mss / 9" },
];

/**
 * One interval's normalised v_t (agent.features in Python; parity vectors in nuwa-rl.fixtures.json).
 * @throws RangeError naming the input on NaN, infinite or negative values
 */
export function tunerFeatures(throughput_bps: number, window_bytes: number, buffer_s: number, queuing_delay_ms: number, k_mss: number): Float32Array {
  const raw = { throughput_bps, window_bytes, buffer_s, queuing_delay_ms, k_mss };
  for (const [name, v] of Object.entries(raw)) {
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`observation ${name} must be finite and ≥ 0 (got ${v})`);
  }
  return Float32Array.from([
    Math.log2(1 + throughput_bps / 1e6) / 10,
    Math.log2(1 + window_bytes / 1200) / 16,
    buffer_s / 30,
    Math.min(queuing_delay_ms, 1000) / 100,
    k_mss / 9,
  ]);
}

export type TunerState = "running" | "fallback";

export class RlTuner {
  private state_: TunerState;
  private error_: string | null = null;
  private k_mss: number;
  private readonly rows: Float32Array[] = [];
  private h: Float32Array;
  private c: Float32Array;
  private episode_start = 1;
  private last_cum_bytes = Number.NaN;
  private last_t_ms = Number.NaN;
  private busy = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Inference times of the decisions so far, ms. */
  readonly inference_ms: number[] = [];

  private constructor(
    private readonly target: KTarget,
    private readonly opts: RlTunerOptions,
    private readonly fallback_k_mss: number,
    private readonly ort: OrtLike | null,
    private readonly session: OrtSessionLike | null,
    readonly meta: RlModelMetadata | null,
    error: string | null,
  ) {
    this.state_ = session && meta ? "running" : "fallback";
    const hidden = meta?.lstm.hidden_size ?? 0;
    this.h = new Float32Array(hidden);
    this.c = new Float32Array(hidden);
    this.k_mss = meta?.k_initial_mss ?? fallback_k_mss;
    if (this.state_ === "running") this.apply(this.k_mss);
    else this.fallback(error ?? "no model");
  }

  /**
   * Load the model and check it; never rejects. On any failure the tuner is
   * returned in `fallback` with the reason in `error` and a `tuner_fallback` event.
   */
  static async load(target: KTarget, opts: RlTunerOptions): Promise<RlTuner> {
    const now = opts.now_ms ?? (() => performance.now());
    const fallback_k = opts.fallback_k_mss ?? target.config.aggressiveness_mss;
    let ort: OrtLike | null = null;
    let meta: RlModelMetadata | null = null;
    try {
      const t0 = now();
      ort = opts.ort ?? (await defaultOrt(opts.wasm_paths));
      meta = await loadMetadata(opts);
      checkMetadata(meta);
      let session: OrtSessionLike;
      try {
        session = await ort.InferenceSession.create(opts.model);
      } catch (e) {
        throw new Error(`RL model failed to load (${typeof opts.model === "string" ? opts.model : `${opts.model.byteLength} bytes`}): ${errText(e)}`);
      }
      await probe(ort, session, meta);
      const tuner = new RlTuner(target, opts, fallback_k, ort, session, meta, null);
      const obs_dim = meta.observation.history_len * meta.observation.features.length;
      opts.onEvent?.({ type: "tuner_ready", t_ms: now(), create_ms: now() - t0, interval_ms: meta.interval_ms, hidden_size: meta.lstm.hidden_size, obs_dim });
      return tuner;
    } catch (e) {
      return new RlTuner(target, opts, fallback_k, ort, null, meta, errText(e));
    }
  }

  get state(): TunerState {
    return this.state_;
  }
  /** Why the tuner fell back (null while running). */
  get error(): string | null {
    return this.error_;
  }
  /** k the tuner last applied, MSS per RTT. */
  get kMss(): number {
    return this.k_mss;
  }

  /**
   * One decision: observe (Eq. 10), infer, k ← clamp(k · a, k_min, k_max) (Eq. 11), apply.
   * A bad observation puts the tuner in fallback (k fixed) instead of throwing.
   * @returns the k in force after the decision, MSS per RTT
   */
  async decide(input: TunerInput, now_ms = (this.opts.now_ms ?? (() => performance.now()))()): Promise<number> {
    if (this.state_ !== "running" || !this.session || !this.meta || !this.ort) return this.k_mss;
    const meta = this.meta;
    let obs: Float32Array;
    try {
      const dt_s = Number.isNaN(this.last_t_ms) ? meta.interval_ms / 1000 : (now_ms - this.last_t_ms) / 1000;
      const prev = Number.isNaN(this.last_cum_bytes) ? input.cum_received_bytes : this.last_cum_bytes;
      if (!(dt_s > 0)) throw new RangeError(`decision interval must be > 0 s (got ${dt_s})`);
      const throughput_bps = ((input.cum_received_bytes - prev) * 8) / dt_s;
      const v = tunerFeatures(throughput_bps, input.window_bytes, input.buffer_s, input.queuing_delay_ms, this.k_mss);
      this.last_cum_bytes = input.cum_received_bytes;
      this.last_t_ms = now_ms;
      this.rows.push(v);
      if (this.rows.length > meta.observation.history_len) this.rows.shift();
      obs = new Float32Array(meta.observation.history_len * v.length); // oldest first, zero-padded (Eq. 10)
      obs.set(this.rows.flatMap((r) => Array.from(r)), obs.length - this.rows.length * v.length);
    } catch (e) {
      this.fallback(`bad observation: ${errText(e)}`, now_ms);
      return this.k_mss;
    }
    const t0 = performance.now();
    let logits: Float32Array;
    try {
      const H = meta.lstm.hidden_size;
      const T = this.ort.Tensor;
      const out = await this.session.run({
        obs: new T("float32", obs, [1, obs.length]),
        h: new T("float32", this.h, [1, 1, H]),
        c: new T("float32", this.c, [1, 1, H]),
        episode_start: new T("float32", Float32Array.of(this.episode_start), [1]),
      });
      logits = out.logits!.data as Float32Array;
      this.h = Float32Array.from(out.h_out!.data as Float32Array);
      this.c = Float32Array.from(out.c_out!.data as Float32Array);
      if (logits.length !== meta.actions.length || !logits.every(Number.isFinite)) throw new Error(`model gave ${logits.length} logits (${Array.from(logits).join(", ")}), expected ${meta.actions.length} finite`);
    } catch (e) {
      this.fallback(`inference failed: ${errText(e)}`, now_ms);
      return this.k_mss;
    }
    const inference_ms = performance.now() - t0;
    this.inference_ms.push(inference_ms);
    this.episode_start = 0;
    let action = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[action]!) action = i; // greedy
    const factor = meta.actions[action]!;
    const k = Math.min(meta.k_max_mss, Math.max(meta.k_min_mss, this.k_mss * factor)); // Eq. 11
    this.apply(k);
    this.opts.onEvent?.({ type: "tuner_decision", t_ms: now_ms, k_mss: k, action, factor, inference_ms, reason: `RL: k × ${factor} → ${k.toFixed(3)} MSS/RTT` });
    return k;
  }

  /**
   * Decide every interval_ms from `observe()`, off the frame path; an overrunning
   * decision skips a tick, and so does `observe()` returning null (no session).
   */
  start(observe: () => TunerInput | null): void {
    if (this.timer || this.state_ !== "running" || !this.meta) return;
    this.timer = setInterval(() => {
      if (this.busy || this.state_ !== "running") return;
      this.busy = true;
      let input: TunerInput | null;
      try {
        input = observe();
      } catch (e) {
        this.busy = false;
        this.fallback(`observation failed: ${errText(e)}`);
        return;
      }
      if (input === null) {
        this.busy = false;
        return;
      }
      void this.decide(input).finally(() => {
        this.busy = false;
      });
    }, this.meta.interval_ms);
  }

  /** A new controller (a reconnect): clear the history and the LSTM state, k back to the model's initial k. */
  newEpisode(): void {
    if (this.state_ !== "running" || !this.meta) return;
    this.rows.length = 0;
    this.h.fill(0);
    this.c.fill(0);
    this.episode_start = 1;
    this.last_cum_bytes = Number.NaN;
    this.last_t_ms = Number.NaN;
    this.apply(this.meta.k_initial_mss);
  }

  /** Stop tuning for good: k back to the fallback, with the reason in `error` and a `tuner_fallback` event. */
  disable(reason: string): void {
    if (this.state_ === "running") this.fallback(reason);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private apply(k: number): void {
    this.target.setParams({ aggressiveness_mss: k });
    this.k_mss = k;
  }

  private fallback(error: string, t_ms = (this.opts.now_ms ?? (() => performance.now()))()): void {
    this.state_ = "fallback";
    this.error_ = error;
    this.stop();
    try {
      this.apply(this.fallback_k_mss);
    } catch (e) {
      this.error_ += `; fallback k ${this.fallback_k_mss} rejected: ${errText(e)}`;
    }
    this.opts.onEvent?.({ type: "tuner_fallback", t_ms, k_mss: this.k_mss, error: `${this.error_}; keeping k = ${this.k_mss} MSS/RTT` });
  }
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function defaultOrt(wasm_paths?: string): Promise<OrtLike> {
  const ort = await import("onnxruntime-web/wasm");
  ort.env.wasm.numThreads = 1; // no SharedArrayBuffer needed; the model is tiny
  if (wasm_paths) ort.env.wasm.wasmPaths = wasm_paths;
  return ort as unknown as OrtLike;
}

async function loadMetadata(opts: RlTunerOptions): Promise<RlModelMetadata> {
  if (opts.metadata && typeof opts.metadata === "object") return opts.metadata;
  const url = opts.metadata ?? (typeof opts.model === "string" ? opts.model.replace(/\.onnx(\?.*)?$/, ".json$1") : null);
  if (!url) throw new Error("RL model metadata is required when the model is given as bytes");
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new Error(`RL model metadata failed to load (${url}): ${errText(e)}`);
  }
  if (!res.ok) throw new Error(`RL model metadata failed to load (${url}): HTTP ${res.status}`);
  return (await res.json()) as RlModelMetadata;
}

/** @throws Error if the metadata asks for an observation this tuner does not compute */
export function checkMetadata(m: RlModelMetadata): void {
  const feats = m?.observation?.features;
  if (!Array.isArray(feats) || feats.length !== TUNER_FEATURES.length || feats.some((f, i) => f.name !== TUNER_FEATURES[i]!.name || f.normalise !== TUNER_FEATURES[i]!.normalise)) {
    throw new Error(`RL model expects features ${JSON.stringify(feats?.map((f) => f.name))}; this tuner computes ${JSON.stringify(TUNER_FEATURES.map((f) => f.name))} (models/nuwa_rl/agent.py FEATURES)`);
  }
  const obs_dim = m.observation.history_len * feats.length;
  if (!(Number.isInteger(m.observation.history_len) && m.observation.history_len > 0) || m.inputs?.obs?.[1] !== obs_dim) {
    throw new Error(`RL model metadata: obs input ${JSON.stringify(m.inputs?.obs)} is not [batch, history_len × features = ${obs_dim}]`);
  }
  if (!Array.isArray(m.actions) || m.actions.length === 0 || !m.actions.every((a) => a > 0 && Number.isFinite(a))) throw new Error(`RL model metadata: bad action set ${JSON.stringify(m.actions)}`);
  if (!(m.k_min_mss > 0 && m.k_max_mss >= m.k_min_mss && m.k_initial_mss >= m.k_min_mss && m.k_initial_mss <= m.k_max_mss)) throw new Error("RL model metadata: bad k range");
  if (!(Number.isInteger(m.interval_ms) && m.interval_ms > 0)) throw new Error(`RL model metadata: bad interval_ms ${m.interval_ms}`);
  if (!(Number.isInteger(m.lstm?.hidden_size) && m.lstm.hidden_size > 0)) throw new Error("RL model metadata: bad lstm.hidden_size");
}

/** Run the model once on zeros: catches a model whose inputs or outputs are not the metadata's. */
async function probe(ort: OrtLike, session: OrtSessionLike, m: RlModelMetadata): Promise<void> {
  const H = m.lstm.hidden_size;
  const D = m.inputs.obs[1];
  try {
    const out = await session.run({
      obs: new ort.Tensor("float32", new Float32Array(D), [1, D]),
      h: new ort.Tensor("float32", new Float32Array(H), [1, 1, H]),
      c: new ort.Tensor("float32", new Float32Array(H), [1, 1, H]),
      episode_start: new ort.Tensor("float32", Float32Array.of(1), [1]),
    });
    const n = (out.logits?.data as Float32Array | undefined)?.length;
    if (n !== m.actions.length) throw new Error(`logits has ${n} values, the action set ${m.actions.length}`);
    if ((out.h_out?.data as Float32Array | undefined)?.length !== H) throw new Error(`h_out is not [1, 1, ${H}]`);
  } catch (e) {
    throw new Error(`RL model does not match its metadata (obs [1, ${D}], LSTM ${H}, ${m.actions.length} actions): ${errText(e)}`);
  }
}
