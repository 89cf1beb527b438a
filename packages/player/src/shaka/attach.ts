/**
 * `attachNuwaShaka(player, shaka, options)`: a shaka-player plays over a Nuwa
 * session. Registers the Nuwa scheme plugin (scheme.ts) for `https` (the
 * session's origin over the session, any other origin through shaka's own
 * HttpFetchPlugin) and for `nuwa:`, with progress support, and with
 * `estimate: "nuwa"` (default) sets `abrFactory` to shaka's SimpleAbrManager on
 * Nuwa's estimate (abr.ts). With `estimate: "shaka"` only the networking is
 * replaced: shaka's ABR and every setting stay as shipped. Call it after
 * `new shaka.Player(video)` and before `player.load(...)`; scheme plugins are
 * global to the page's shaka, so one attachment at a time.
 */
import { type NuwaConfig, NuwaController } from "@nuwa/cc";
import type { EstimateSource } from "../dash/abr.js";
import { MpcHistory } from "../dash/mpc.js";
import { type ReconnectPolicy, SessionManager } from "../reconnect.js";
import { NuwaSession, type SessionMode, type TelemetryEvent, type TransportKind } from "../session.js";
import { makeNuwaAbrFactory, type NuwaAbrManager, nuwaShakaEstimateBps } from "./abr.js";
import { makeNuwaScheme } from "./scheme.js";
import type { ShakaLike, ShakaPlayerLike } from "./types.js";

export interface ShakaAttachOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`; its origin's requests go over the session. */
  url: string;
  serverCertificateHashHex?: string;
  /** `auto` (default): WebTransport if the page has it, else the WebSocket fallback (session.ts). */
  transport?: "auto" | TransportKind;
  websocket_url?: string;
  cc?: Partial<NuwaConfig>;
  /** `control` (default) grants the window; `observe` estimates only (the server runs its own cubic). */
  mode?: SessionMode;
  /** `nuwa` (default): shaka's ABR decides on Nuwa's estimate; `shaka`: shaka's own estimate, ABR untouched. */
  estimate?: "nuwa" | "shaka";
  onTelemetry?: (e: TelemetryEvent) => void;
  reconnect?: Partial<ReconnectPolicy>;
  /** Stall watchdog, ms (session.ts, default 4000; 0: never). */
  stall_timeout_ms?: number;
}

export interface ShakaAttachment {
  /** Resolves when the first session is open; rejects if the handshake fails. */
  session: Promise<NuwaSession>;
  /** The session open now, or null while reconnecting. */
  current(): NuwaSession | null;
  sessionCount(): number;
  /** Nuwa's estimate now (the controller's figure), bit/s; NaN before data. */
  estimateBps(): number;
  /** shaka's own estimate now, bit/s (its EWMA, or its default 1 Mbit/s before 128 kB sampled). */
  shakaEstimateBps(): number;
  setParams(p: Partial<Pick<NuwaConfig, "target_delay_ms" | "sensitivity_ms" | "aggressiveness_mss">>): void;
  /** Close the session and give `https` back to shaka's HttpFetchPlugin. */
  close(): void;
}

export function attachNuwaShaka(player: ShakaPlayerLike, shaka: ShakaLike, o: ShakaAttachOptions): ShakaAttachment {
  const estimate = o.estimate ?? "nuwa";
  if (estimate !== "nuwa" && estimate !== "shaka") throw new TypeError(`attachNuwaShaka: estimate must be "nuwa" or "shaka", got ${String(estimate)}`);
  const url = new URL(o.url);
  if (url.protocol !== "https:") throw new TypeError(`attachNuwaShaka: options.url must be https: (WebTransport), got ${url.protocol}`);
  const now_us = () => performance.now() * 1000;
  const cc: Partial<NuwaConfig> = { ...(o.cc ?? {}) };
  const manager = new SessionManager(
    (hooks) =>
      NuwaSession.connect({ url: o.url, serverCertificateHashHex: o.serverCertificateHashHex, transport: o.transport, websocket_url: o.websocket_url, cc, mode: o.mode ?? "control", onTelemetry: o.onTelemetry, stall_timeout_ms: o.stall_timeout_ms, onStall: hooks.onStall }),
    o.reconnect,
    { onTelemetry: o.onTelemetry, now_us },
  );
  const session = manager.session();
  const src: EstimateSource = { controller: () => manager.current?.controller ?? null, now_us };
  const history = new MpcHistory(); // completed video segment downloads: the flow's measured share
  const NE = shaka.net.NetworkingEngine;
  const plugin = makeNuwaScheme(shaka, () => manager.session(), {
    origin: url.origin,
    fallback: shaka.net.HttpFetchPlugin?.parse,
    onComplete: (c) => {
      if (c.request_type !== NE.RequestType.SEGMENT || (c.content_type !== null && c.content_type !== "video")) return;
      history.add({ bytes: c.bytes, duration_s: c.duration_ms / 1000, bitrate_kbps: Number.NaN, segment_s: Number.NaN, predicted_kbps: history.next_predicted_kbps });
    },
  });
  NE.registerScheme("https", plugin, NE.PluginPriority.APPLICATION, true);
  NE.registerScheme("nuwa", plugin, NE.PluginPriority.APPLICATION, true);
  const abr: { m: NuwaAbrManager | null } = { m: null };
  if (estimate === "nuwa") {
    player.configure({ abrFactory: makeNuwaAbrFactory(shaka, () => nuwaShakaEstimateBps(src, history), (m) => (abr.m = m)) });
  }
  return {
    session,
    current: () => manager.current,
    sessionCount: () => manager.count,
    estimateBps: () => {
      const c = manager.current;
      return c ? c.controller.estimate(now_us()).bps : Number.NaN;
    },
    shakaEstimateBps: () => (abr.m ? abr.m.shakaEstimateBps() : player.getStats().estimatedBandwidth),
    setParams: (p) => {
      (manager.current?.controller ?? new NuwaController(cc)).setParams(p); // validated even between sessions
      Object.assign(cc, p);
    },
    close: () => {
      NE.unregisterScheme("nuwa");
      NE.unregisterScheme("https");
      const fetch = shaka.net.HttpFetchPlugin?.parse;
      if (fetch) NE.registerScheme("https", fetch, NE.PluginPriority.PREFERRED, true); // shaka's own registration (http_fetch_plugin.js)
      manager.close();
    },
  };
}
