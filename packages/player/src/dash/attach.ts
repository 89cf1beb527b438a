/**
 * Public API for a site that already uses dash.js: `attachNuwa(player, dashjs, options)`
 * makes the player load everything over a Nuwa session, feeds Nuwa's estimate
 * to dash.js's ABR (through its ThroughputController and, by default, a Nuwa
 * rule), and reports typed telemetry. Call it after
 * `dashjs.MediaPlayer().create()` and before `player.initialize(...)`.
 */
import type { NuwaConfig } from "@nuwa/cc";
import { NuwaSession, type SessionMode, type TelemetryEvent } from "../session.js";
import { type AbrDecision, type EstimateSource, makeNuwaAbrRule, makeThroughputOverride } from "./abr.js";
import { makeNuwaLoader } from "./loader.js";

/** Target-delay presets per application, ms (DESIGN.md: Td per application). */
export const TD_PRESETS_MS = { vod: 20, live_low_latency: 10 } as const;
export type Preset = keyof typeof TD_PRESETS_MS;

export interface AttachOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`. */
  url: string;
  serverCertificateHashHex?: string;
  cc?: Partial<NuwaConfig>;
  /** `control` grants the window; `observe` estimates only (the server runs its own cubic). */
  mode?: SessionMode;
  /** `nuwa`: Nuwa's rule decides; `dashjs`: dash.js's own rules decide. */
  abr?: "nuwa" | "dashjs";
  /** `nuwa`: dash.js's throughput figure is Nuwa's; `dashjs`: dash.js keeps its own. */
  estimate?: "nuwa" | "dashjs";
  preset?: Preset;
  onTelemetry?: (e: TelemetryEvent | { type: "abr"; t_us: number; decision: AbrDecision }) => void;
  /** dash.js's own throughput average, kbit/s, whenever its rules ask for it. */
  onDashjsEstimate?: (kbps: number) => void;
}

/** Slice of the dash.js MediaPlayer used here. */
export interface DashPlayerLike {
  extend(name: string, child: unknown, override: boolean): void;
  addABRCustomRule(type: string, name: string, rule: unknown): void;
  updateSettings(s: unknown): void;
  getDashMetrics(): { getCurrentBufferLevel(type: string): number };
}

/** Slice of the dashjs module used here. */
export interface DashjsLike {
  FactoryMaker: { getClassFactory(fn: unknown): unknown; getClassFactoryByName(name: string): (ctx: unknown) => { create(): { representation?: unknown; priority?: number; reason?: unknown } } };
}

export interface NuwaAttachment {
  /** Resolves when the session is open; rejects if the handshake fails. */
  session: Promise<NuwaSession>;
  /** Change Td (and ρ, k) while playing. */
  setPreset(p: Preset): void;
  setParams(p: Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss">>): void;
  /** Current estimate, bits per second (NaN before data). */
  estimateBps(): number;
  close(): void;
}

export function attachNuwa(player: DashPlayerLike, dashjs: DashjsLike, o: AttachOptions): NuwaAttachment {
  const now_us = () => performance.now() * 1000;
  const cc = { ...o.cc };
  if (o.preset && cc.target_delay_ms === undefined) cc.target_delay_ms = TD_PRESETS_MS[o.preset];
  let current: NuwaSession | null = null;
  const session = NuwaSession.connect({ url: o.url, serverCertificateHashHex: o.serverCertificateHashHex, cc, mode: o.mode ?? "control", onTelemetry: o.onTelemetry }).then((s) => {
    current = s;
    return s;
  });
  const src: EstimateSource = { controller: () => current?.controller ?? null, now_us };
  player.extend("XHRLoader", makeNuwaLoader(() => session), false);
  player.extend("ThroughputController", makeThroughputOverride(src, (o.estimate ?? "nuwa") === "nuwa", o.onDashjsEstimate), true);
  if ((o.abr ?? "nuwa") === "nuwa") {
    const SwitchRequest = dashjs.FactoryMaker.getClassFactoryByName("SwitchRequest");
    const rule = makeNuwaAbrRule(
      src,
      (ctx) => SwitchRequest(ctx).create(),
      (t) => player.getDashMetrics().getCurrentBufferLevel(t) || 0,
      (decision) => o.onTelemetry?.({ type: "abr", t_us: now_us(), decision }),
    );
    // Nuwa's rule decides alone: dash.js's own rules would override it at low buffer
    // (InsufficientBufferRule), undo switches (SwitchHistoryRule) or abandon segments
    // on progress figures our loader does not produce (AbandonRequestsRule).
    const off = { active: false };
    player.updateSettings({
      streaming: { abr: { rules: { throughputRule: off, bolaRule: off, insufficientBufferRule: off, switchHistoryRule: off, droppedFramesRule: off, abandonRequestsRule: off, l2ARule: off, loLPRule: off } } },
    });
    player.addABRCustomRule("qualitySwitchRules", "NuwaAbrRule", dashjs.FactoryMaker.getClassFactory(rule));
  }
  return {
    session,
    setPreset: (p) => current?.controller.setParams({ target_delay_ms: TD_PRESETS_MS[p] }),
    setParams: (p) => current?.controller.setParams(p),
    estimateBps: () => (current ? current.controller.estimate(now_us()).bps : Number.NaN),
    close: () => current?.close(),
  };
}
