/**
 * The reference player page a site deploys beside `./nuwa serve` (README "Deploy"):
 * dash.js plays `?mpd=` (default `/manifest.mpd`) with every request over a Nuwa session
 * to the server that served this page. `/nuwa-config.json` (nuwa_server/site.py) says
 * where the session is: the QUIC port, the path, the dev certificate's hash (null with a
 * real certificate: the browser verifies it as for any HTTPS site) and the WebSocket
 * fallback's port. Nothing of the lab: no emulator, no harness parameters.
 * `window.__nuwa_site` holds what a monitoring script (or the e2e test) reads.
 */
import { createNuwaPlayer } from "@nuwa/player";
import * as dashjsModule from "dashjs";

// dash.js's ESM build puts FactoryMaker on its default export only (createNuwaPlayer accepts both forms).
const dashjs = ((dashjsModule as unknown as { default?: typeof dashjsModule }).default ?? dashjsModule) as typeof dashjsModule;

interface SiteConfig {
  port: number;
  path: string;
  cert_sha256_hex: string | null;
  ws_port: number | null;
}

interface SiteState {
  state: "connecting" | "playing" | "error";
  error: string | null;
  session_url: string;
  grants: number;
  max_window_bytes: number;
  stalls: number;
  bitrate_bps: number;
  estimate_bps: number;
  played_s: number;
  close_reason: string | null;
  /** The transport the session runs on (WebTransport, or the WebSocket fallback when its handshake failed). */
  transport: string | null;
}

declare global {
  interface Window {
    __nuwa_site: SiteState;
  }
}

const state: SiteState = { state: "connecting", error: null, session_url: "", grants: 0, max_window_bytes: 0, stalls: 0, bitrate_bps: Number.NaN, estimate_bps: Number.NaN, played_s: 0, close_reason: null, transport: null };
window.__nuwa_site = state;
const stats = document.getElementById("stats") as HTMLElement;
const video = document.getElementById("video") as HTMLVideoElement;

function show(): void {
  const mbps = (bps: number) => (Number.isFinite(bps) ? `${(bps / 1e6).toFixed(2)} Mbit/s` : "–");
  stats.textContent = [
    `session   ${state.session_url} over ${state.transport ?? "…"} (${state.state}${state.error ? `: ${state.error}` : ""})`,
    `estimate  ${mbps(state.estimate_bps)}   bitrate ${mbps(state.bitrate_bps)}`,
    `played    ${state.played_s.toFixed(1)} s   stalls ${state.stalls}   grants ${state.grants}`,
  ].join("\n");
}

async function main(): Promise<void> {
  const res = await fetch("/nuwa-config.json", { cache: "no-store" });
  if (!res.ok) throw new Error(`/nuwa-config.json: HTTP ${res.status}`);
  const cfg = (await res.json()) as SiteConfig;
  const q = new URLSearchParams(location.search);
  state.session_url = `https://${location.hostname}:${cfg.port}${cfg.path}`;
  const player = createNuwaPlayer(video, {
    dashjs,
    url: state.session_url,
    mpd: q.get("mpd") ?? "/manifest.mpd",
    preset: "vod",
    ...(cfg.cert_sha256_hex ? { serverCertificateHashHex: cfg.cert_sha256_hex } : {}),
    ...(cfg.ws_port ? { websocket_url: `wss://${location.hostname}:${cfg.ws_port}${cfg.path}` } : {}),
  });
  player.on("grant", (e) => {
    state.grants++;
    state.max_window_bytes = Math.max(state.max_window_bytes, e.window_bytes);
  });
  player.on("estimate", (e) => {
    state.estimate_bps = e.bps;
  });
  player.on("bitrate", (e) => {
    if (e.media_type === "video") state.bitrate_bps = e.bitrate_bps;
  });
  player.on("stall", (e) => {
    if (e.state === "start") state.stalls++;
  });
  player.on("startup", () => {
    state.state = "playing";
  });
  player.on("session", (e) => {
    if (e.state === "closed") state.close_reason = e.reason;
    if (e.state === "open") state.transport = player.nuwa.current()?.transport ?? null;
  });
  player.on("error", (e) => {
    state.error = `${e.source}: ${e.message}`;
    if (e.source === "content") state.state = "error"; // DRM, live, a codec: this content will not play (docs/CONTENT.md)
  });
  video.addEventListener("timeupdate", () => {
    state.played_s = video.currentTime;
  });
  setInterval(show, 500);
}

main().catch((err: unknown) => {
  state.state = "error";
  state.error = err instanceof Error ? err.message : String(err);
  show();
});
