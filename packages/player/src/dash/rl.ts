/**
 * Nuwa-RL with dash.js: runs an RlTuner (../tuner.ts) on top of an attachNuwa()
 * attachment, without touching the session. The receiver's view the model
 * needs (Eq. 10) comes from the open session's controller (received bytes,
 * window), the telemetry stream (queuing delay of the last frame) and dash.js
 * (buffer level); k goes out through `attachment.setParams`, so it also holds
 * for the sessions a reconnect opens (each starts a new episode).
 *
 * Usage:
 *   const rl = attachRlTuner(() => attachment, player, { model: "/models/nuwa-rl.onnx" });
 *   const attachment = attachNuwa(player, dashjs, { ..., cc: { step: "additive", ...rl.cc },
 *                                                   onTelemetry: (e) => { rl.onTelemetry(e); mine(e); } });
 */
import type { NuwaConfig } from "@nuwa/cc";
import type { TelemetryEvent } from "../session.js";
import { type KTarget, RlTuner, type RlTunerOptions, type TunerInput } from "../tuner.js";
import type { DashPlayerLike, NuwaAttachment } from "./attach.js";

/** Controller settings the shipped model was trained with (models/nuwa-rl.json "controller"). */
export const RL_CC: Readonly<Partial<NuwaConfig>> = Object.freeze({ step: "additive", target_delay_ms: 25, sensitivity_ms: 15 });

export interface RlTuning {
  /** Forward every session telemetry event here (AttachOptions.onTelemetry): the tuner reads the queuing delay from frame events. */
  onTelemetry(e: TelemetryEvent): void;
  /** Settings to merge into AttachOptions.cc (RL_CC). */
  cc: Readonly<Partial<NuwaConfig>>;
  /** The tuner once loaded (in `fallback` if the model failed). */
  tuner: Promise<RlTuner>;
  stop(): void;
}

/**
 * Start Nuwa-RL over an attachment (given lazily, so the tuning can be created first and its
 * `onTelemetry` passed to attachNuwa). Never throws: failures end in a fixed k and a `tuner_fallback` event.
 */
export function attachRlTuner(attachment: () => Pick<NuwaAttachment, "current" | "setParams"> | null, player: Pick<DashPlayerLike, "getDashMetrics">, o: RlTunerOptions): RlTuning {
  let last_qd_ms = 0;
  let controller_seen: unknown = null;
  let stopped = false;
  const configured_k = (): number => attachment()?.current()?.controller.config.aggressiveness_mss ?? o.fallback_k_mss ?? 9;
  const target: KTarget = {
    get config() {
      return { aggressiveness_mss: configured_k() };
    },
    setParams: (p) => attachment()?.setParams(p),
  };
  const observe = (t: RlTuner): TunerInput | null => {
    const c = attachment()?.current()?.controller ?? null;
    if (!c) return null; // reconnecting: skip this interval
    if (c !== controller_seen) {
      if (controller_seen !== null) t.newEpisode();
      controller_seen = c;
      const want = t.meta?.controller;
      if (want?.step && c.config.step !== want.step) {
        t.disable(`the model was trained with cc.step = "${want.step}", this controller runs "${c.config.step}" (k would have no effect): pass cc: { ...RL_CC }`);
        return null;
      }
    }
    const buffer_s = player.getDashMetrics().getCurrentBufferLevel("video");
    return { cum_received_bytes: c.cumReceivedBytes, window_bytes: c.windowBytes, buffer_s: Number.isNaN(buffer_s) ? 0 : buffer_s, queuing_delay_ms: last_qd_ms };
  };
  const tuner = RlTuner.load(target, o).then((t) => {
    if (!stopped) t.start(() => observe(t));
    return t;
  });
  return {
    onTelemetry: (e) => {
      if (e.type === "frame") last_qd_ms = Math.max(0, e.decision.raw_queuing_delay_ms);
    },
    cc: RL_CC,
    tuner,
    stop: () => {
      stopped = true;
      void tuner.then((t) => t.stop());
    },
  };
}
