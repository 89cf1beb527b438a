/**
 * Playback page for end-to-end runs: dash.js 5 plays the MPD with every
 * request over a Nuwa session (attachNuwa's loader). The schemes of the video
 * ladder (e2e/src/play.ts PLAY_SCHEMES), each one factor from its neighbour:
 * `dashjs` (dash.js as shipped over server cubic: only the loader replaced, no
 * setting changed, no grant sent), `dashjs_grants` (the same over Nuwa's
 * grants), `dashjs_nuwa_estimate` (dash.js's rules fed Nuwa's estimate, grants),
 * `nuwa` (Nuwa ABR, grants), `nuwa_cubic` (Nuwa ABR on Nuwa's estimate over
 * server cubic, no grants); `cubic` and `observe` are the old names of
 * `dashjs` and `nuwa_cubic`. Every 250 ms it samples Nuwa's estimate and
 * dash.js's own (its ThroughputController's average, read at the same
 * instant), the buffer and bitrate; it logs every video segment downloaded or
 * abandoned, stalls and every frame's timing, exposed as `window.__nuwa_play`.
 * Query: url, hash, mpd, duration_s, scheme, cc (JSON), transport
 * (auto | webtransport | websocket), ws_url (the WebSocket fallback's URL),
 * log_level (dash.js's debug level; absent: dash.js's default), cmcd (`query` | `header`: the site
 * turns dash.js's CMCD on, CTA-5004 keys in that transmission mode; absent: off).
 */
import { type AttachOptions, attachNuwa } from "@nuwa/player";
import * as dashjsModule from "dashjs";
import type { PlayLog } from "./play-log.js";
import { watchRendered } from "./rendered.js";

// The ESM build puts FactoryMaker only on its default export (window.dashjs); the typings declare no default.
const dashjs = ((dashjsModule as unknown as { default?: typeof dashjsModule }).default ?? dashjsModule) as typeof dashjsModule;

const q = new URLSearchParams(location.search);
const scheme = q.get("scheme") ?? "nuwa";
const log: PlayLog = { done: false, error: null, scheme, started_us: 0, startup_s: null, frames: { send_us: [], recv_us: [], raw_qd_ms: [] }, samples: [], chunks: [], abandoned: [], quality_changes: [], rendered: [], stalls: [], abr_reasons: [] };
window.__nuwa_play = log;
const now_us = () => performance.now() * 1000;
const video = document.getElementById("video") as HTMLVideoElement;
let stopping = false;
const status = document.getElementById("status")!;

/** The ladder's schemes as attachNuwa options (old names: cubic = dashjs, observe = nuwa_cubic). */
const SCHEMES: Record<string, Pick<AttachOptions, "mode" | "abr" | "estimate" | "estimate_smoothing" | "estimate_share" | "estimate_sample" | "mpc" | "fetch_ahead" | "abandon" | "prefetch_init" | "retry_takeover">> = {
  dashjs: { mode: "observe", abr: "dashjs", estimate: "dashjs" },
  cubic: { mode: "observe", abr: "dashjs", estimate: "dashjs" },
  dashjs_grants: { mode: "control", abr: "dashjs", estimate: "dashjs" },
  dashjs_nuwa_estimate: { mode: "control", abr: "dashjs", estimate: "nuwa" },
  dashjs_nuwa_instant: { mode: "control", abr: "dashjs", estimate: "nuwa", estimate_smoothing: "none" },
  dashjs_nuwa_transfer: { mode: "control", abr: "dashjs", estimate: "nuwa", estimate_share: "transfer" },
  dashjs_nuwa_sustained: { mode: "control", abr: "dashjs", estimate: "nuwa", estimate_sample: "min_over_download" },
  nuwa: { mode: "control", abr: "nuwa", estimate: "nuwa" },
  nuwa_rule: { mode: "control", abr: "nuwa_rule", estimate: "nuwa" },
  nuwa_deepcap: { mode: "control", abr: "nuwa", estimate: "nuwa", mpc: { deep_from_s: 8 } },
  nuwa_nohyst: { mode: "control", abr: "nuwa", estimate: "nuwa", mpc: { down_switch_margin: 0, up_hold_segments: 1 } },
  nuwa_ahead: { mode: "control", abr: "nuwa", estimate: "nuwa", fetch_ahead: "standing" },
  nuwa_ahead_queue: { mode: "control", abr: "nuwa", estimate: "nuwa", fetch_ahead: "queue" },
  nuwa_noreserve: { mode: "control", abr: "nuwa", estimate: "nuwa", mpc: { reserve_s: 0 } },
  nuwa_probe: { mode: "control", abr: "nuwa", estimate: "nuwa", mpc: { first_probe: true } },
  nuwa_abandon: { mode: "control", abr: "nuwa", estimate: "nuwa", abandon: true },
  nuwa_noinit: { mode: "control", abr: "nuwa", estimate: "nuwa", prefetch_init: false },
  nuwa_noretake: { mode: "control", abr: "nuwa", estimate: "nuwa", retry_takeover: false },
  nuwa_cubic: { mode: "observe", abr: "nuwa", estimate: "nuwa" },
  observe: { mode: "observe", abr: "nuwa", estimate: "nuwa" },
};

async function main(): Promise<void> {
  const duration_s = Number(q.get("duration_s") ?? "60");
  const player = dashjs.MediaPlayer().create();
  const opts: AttachOptions = {
    url: q.get("url")!,
    serverCertificateHashHex: q.get("hash") ?? undefined,
    transport: (q.get("transport") ?? "auto") as AttachOptions["transport"],
    websocket_url: q.get("ws_url") ?? undefined,
    cc: JSON.parse(q.get("cc") ?? "{}"),
    ...SCHEMES[scheme],
    preset: "vod",
    onTelemetry: (e) => {
      if (e.type === "frame") {
        log.frames.send_us.push(e.send_time_us);
        log.frames.recv_us.push(e.t_us);
        log.frames.raw_qd_ms.push(e.decision.raw_queuing_delay_ms);
      } else if (e.type === "abr" && log.abr_reasons.length < 200) log.abr_reasons.push(e.decision.reason);
      else if (e.type === "fetch_ahead") {
        log.fetch_ahead = log.fetch_ahead ?? [];
        log.fetch_ahead.push({ t_us: e.t_us, media_type: e.media_type, path: e.path, outcome: e.outcome, bytes: e.bytes });
      }
    },
  };
  if (!SCHEMES[scheme]) throw new Error(`unknown scheme ${scheme}`);
  const nuwa = attachNuwa(player as never, dashjs as never, opts);
  // No dash.js setting is changed here: buffer targets, fast switching and rules stay at dash.js's
  // defaults for the dash.js schemes (attachNuwa changes rules and fast switching only for abr "nuwa").
  if (q.get("log_level") !== null) player.updateSettings({ debug: { logLevel: Number(q.get("log_level")) } });
  const cmcd = q.get("cmcd");
  if (cmcd === "query" || cmcd === "header") player.updateSettings({ streaming: { cmcd: { enabled: true, mode: cmcd, sid: "nuwa-e2e", cid: "nuwa" } } });
  player.on(dashjs.MediaPlayer.events.ERROR, (e: unknown) => console.error("dash.js error", JSON.stringify(e).slice(0, 500)));
  const session = await nuwa.session;
  log.transport = session.transport;
  player.on(dashjs.MediaPlayer.events.QUALITY_CHANGE_RENDERED, (e: { mediaType: string; newRepresentation?: { bandwidth: number } }) => {
    if (e.mediaType === "video" && e.newRepresentation) log.quality_changes.push({ t_us: now_us(), bitrate_kbps: e.newRepresentation.bandwidth / 1000 });
  });
  const reps = player as unknown as { getRepresentationsByType?: (t: string) => { bandwidth?: number; width?: number; height?: number }[] };
  const rungs = () => (reps.getRepresentationsByType?.("video") ?? []).map((r) => ({ kbps: (r.bandwidth ?? 0) / 1000, width: r.width ?? 0, height: r.height ?? 0 }));
  const frameMediaS = watchRendered(video, log.rendered!, rungs, () => stopping, now_us);
  type SegmentRequest = { mediaType: string; type: string; index: number; bandwidth: number; startTime: number; duration: number; bytesLoaded: number };
  player.on(dashjs.MediaPlayer.events.FRAGMENT_LOADING_COMPLETED, (e: { request?: SegmentRequest; error?: unknown }) => {
    const r = e.request;
    if (stopping || !r || r.mediaType !== "video" || r.type !== "MediaSegment" || e.error) return;
    log.chunks.push({ t_us: now_us(), bitrate_kbps: r.bandwidth / 1000, index: r.index, start_s: r.startTime, duration_s: r.duration, bytes: r.bytesLoaded || 0 });
  });
  player.on(dashjs.MediaPlayer.events.FRAGMENT_LOADING_ABANDONED, (e: { request?: SegmentRequest }) => {
    const r = e.request;
    if (stopping || !r || r.mediaType !== "video" || r.type !== "MediaSegment") return;
    log.abandoned.push({ t_us: now_us(), bitrate_kbps: r.bandwidth / 1000, index: r.index, start_s: r.startTime, bytes: r.bytesLoaded || 0 });
  });
  player.on(dashjs.MediaPlayer.events.PLAYBACK_WAITING, () => {
    if (log.startup_s !== null) log.stalls.push({ start_us: now_us(), end_us: null });
  });
  player.on(dashjs.MediaPlayer.events.PLAYBACK_PLAYING, () => {
    const s = log.stalls[log.stalls.length - 1];
    if (s && s.end_us === null) s.end_us = now_us();
    if (log.startup_s === null) log.startup_s = (now_us() - log.started_us) / 1e6;
  });
  const st = (player.getSettings() as { streaming: { buffer: Record<string, unknown>; abr: { rules: Record<string, { active?: boolean }> } } }).streaming;
  log.dashjs_settings = {
    buffer: { bufferTimeDefault: st.buffer.bufferTimeDefault, bufferTimeAtTopQuality: st.buffer.bufferTimeAtTopQuality, bufferTimeAtTopQualityLongForm: st.buffer.bufferTimeAtTopQualityLongForm, fastSwitchEnabled: st.buffer.fastSwitchEnabled },
    active_rules: Object.entries(st.abr.rules)
      .filter(([, r]) => r?.active)
      .map(([k]) => k),
  };
  log.started_us = now_us();
  player.initialize(video, `${new URL(q.get("url")!).origin}${q.get("mpd") ?? "/manifest.mpd"}`, true);
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const t = now_us();
      // The session open now: after a reconnect (server restart, an outage past the stall timeout)
      // the first one is closed and its controller frozen.
      const live = nuwa.current() ?? session;
      // Both estimates at the same instant: Nuwa's controller and dash.js's own ThroughputController.
      const est = live.controller.estimate(t);
      const dashjs_kbps = nuwa.dashjsEstimateKbps();
      const rep = player.getCurrentRepresentationForType?.("video") as { bandwidth?: number } | null;
      log.samples.push({
        t_us: t,
        media_s: video.currentTime,
        frame_media_s: frameMediaS(),
        buffer_s: player.getDashMetrics().getCurrentBufferLevel("video") || 0,
        nuwa_bps: est.bps,
        dashjs_bps: dashjs_kbps * 1000,
        bitrate_kbps: rep?.bandwidth ? rep.bandwidth / 1000 : Number.NaN,
        window_bytes: live.controller.windowBytes,
        qd_ms: log.frames.raw_qd_ms[log.frames.raw_qd_ms.length - 1] ?? 0,
        downloading: live.activeRequests > 0,
      });
      status.textContent = `${scheme}: media ${video.currentTime.toFixed(1)} s, buffer ${(log.samples.at(-1)?.buffer_s ?? 0).toFixed(1)} s, Nuwa ${(est.bps / 1e6).toFixed(2)} Mbit/s, dash.js ${(dashjs_kbps / 1000).toFixed(2)} Mbit/s`;
      // Enough media played, or the media ended first (`--content` shorter than --duration).
      if ((t - log.started_us > duration_s * 1e6 && log.startup_s !== null && video.currentTime >= duration_s - 1) || (log.startup_s !== null && video.ended) || nuwa.contentError()) {
        clearInterval(timer);
        resolve();
      } else if (t - log.started_us > (duration_s + 60) * 1e6) {
        clearInterval(timer);
        resolve();
      }
    }, 250);
  });
  stopping = true; // reset() aborts what is in flight: not an abandonment
  player.reset();
  nuwa.close();
  const refused = nuwa.contentError();
  if (refused) throw refused; // the named error (mpd.ts): DRM, live, codec
}

main()
  .catch((e: unknown) => {
    log.error = String(e);
  })
  .finally(() => {
    log.done = true;
  });
