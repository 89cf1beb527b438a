/**
 * Playback page for hls.js (issue 19 item 3): hls.js 1.7 plays the HLS playlists written
 * over the same DASH segments (lab/nuwa_lab/dashgen/hls.py) with every request over a Nuwa
 * session (`@nuwa/player/hls`). Schemes:
 * `hlsjs` (hls.js as shipped over the server's cubic: its default ABR and estimate, every
 * setting untouched, only the loader replaced, no grant sent), `hlsjs_nuwa_estimate`
 * (hls.js's rules fed Nuwa's estimate, grants), `hlsjs_nuwa` (Nuwa's MPC on Nuwa's
 * estimate, grants), `hlsjs_nuwa_perread` (the same with the MPC deciding on every read of the
 * level: `decide: "per_read"`).
 *
 * It writes `window.__nuwa_play` in the dash.js page's shape (e2e/pages/play.ts), so
 * lab/nuwa_lab/play_metrics.py scores both the same way; the player's own estimate goes in
 * the `dashjs_bps` field (here: hls.js's EWMA, read at the same instant as Nuwa's).
 * Query: url, hash, mpd (the master playlist's path), duration_s, scheme, cc (JSON), cmcd
 * (`query` | `header`: the site turns hls.js's CMCD on, `config.cmcd`, `useHeaders` for header;
 * the adapter carries the keys as the request's `cmcd`, logged by the server; absent: off).
 */
import { attachNuwaToHls, bufferAheadS, type HlsAttachOptions } from "@nuwa/player/hls";
import Hls from "hls.js";
import type { PlayLog } from "./play-log.js";
import { watchRendered } from "./rendered.js";

const q = new URLSearchParams(location.search);
const scheme = q.get("scheme") ?? "hlsjs_nuwa";
const log: PlayLog = { done: false, error: null, scheme, player: "hlsjs", started_us: 0, startup_s: null, frames: { send_us: [], recv_us: [], raw_qd_ms: [] }, samples: [], chunks: [], abandoned: [], quality_changes: [], rendered: [], stalls: [], abr_reasons: [] };
window.__nuwa_play = log;
const now_us = () => performance.now() * 1000;
const video = document.getElementById("video") as HTMLVideoElement;
const status = document.getElementById("status")!;
let stopping = false;

const SCHEMES: Record<string, Pick<HlsAttachOptions, "mode" | "abr" | "estimate" | "decide">> = {
  hlsjs: { mode: "observe", abr: "hlsjs", estimate: "hlsjs" },
  hlsjs_nuwa_estimate: { mode: "control", abr: "hlsjs", estimate: "nuwa" },
  hlsjs_nuwa: { mode: "control", abr: "nuwa", estimate: "nuwa" },
  hlsjs_nuwa_perread: { mode: "control", abr: "nuwa", estimate: "nuwa", decide: "per_read" },
};

type FragInfo = { type: string; sn: number | string; level: number; start: number; duration: number; stats: { loaded: number } };

async function main(): Promise<void> {
  if (!SCHEMES[scheme]) throw new Error(`unknown scheme ${scheme}`);
  const duration_s = Number(q.get("duration_s") ?? "60");
  const nuwa = attachNuwaToHls(Hls, {
    url: q.get("url")!,
    serverCertificateHashHex: q.get("hash") ?? undefined,
    cc: JSON.parse(q.get("cc") ?? "{}"),
    ...SCHEMES[scheme],
    preset: "vod",
    onTelemetry: (e) => {
      if (e.type === "frame") {
        log.frames.send_us.push(e.send_time_us);
        log.frames.recv_us.push(e.t_us);
        log.frames.raw_qd_ms.push(e.decision.raw_queuing_delay_ms);
      } else if (e.type === "abr" && log.abr_reasons.length < 200) log.abr_reasons.push(e.reason);
    },
  });
  const session = await nuwa.session;
  log.transport = session.transport;
  const cmcd = q.get("cmcd");
  // No other hls.js setting changed: the baseline runs hls.js's defaults.
  const hls = nuwa.create(cmcd === "query" || cmcd === "header" ? { cmcd: { sessionId: "nuwa-e2e", contentId: "nuwa", useHeaders: cmcd === "header" } } : {});
  const kbps = (level: number) => (hls.levels[level]?.bitrate ?? Number.NaN) / 1000;
  hls.on(Hls.Events.ERROR, (_e, d) => console.error(d.fatal ? "hls.js fatal error" : "hls.js warning", d.type, d.details, String(d.error ?? "").slice(0, 300)));
  const frameMediaS = watchRendered(video, log.rendered!, () => hls.levels.map((l) => ({ kbps: l.bitrate / 1000, width: l.width, height: l.height })), () => stopping, now_us);
  hls.on(Hls.Events.LEVEL_SWITCHED, (_e, d) => log.quality_changes.push({ t_us: now_us(), bitrate_kbps: kbps(d.level) }));
  hls.on(Hls.Events.FRAG_LOADED, (_e, d) => {
    const f = d.frag as unknown as FragInfo;
    if (stopping || f.type !== "main" || typeof f.sn !== "number") return;
    log.chunks.push({ t_us: now_us(), bitrate_kbps: kbps(f.level), index: f.sn, start_s: f.start, duration_s: f.duration, bytes: f.stats.loaded });
  });
  hls.on(Hls.Events.FRAG_LOAD_EMERGENCY_ABORTED, (_e, d) => {
    const f = d.frag as unknown as FragInfo;
    if (stopping || f.type !== "main" || typeof f.sn !== "number") return;
    log.abandoned.push({ t_us: now_us(), bitrate_kbps: kbps(f.level), index: f.sn, start_s: f.start, bytes: d.stats.loaded });
  });
  video.addEventListener("waiting", () => {
    if (log.startup_s !== null && !stopping) log.stalls.push({ start_us: now_us(), end_us: null });
  });
  video.addEventListener("playing", () => {
    const s = log.stalls[log.stalls.length - 1];
    if (s && s.end_us === null) s.end_us = now_us();
    if (log.startup_s === null) log.startup_s = (now_us() - log.started_us) / 1e6;
  });
  const c = hls.config;
  log.hlsjs_settings = { maxBufferLength: c.maxBufferLength, maxMaxBufferLength: c.maxMaxBufferLength, abrBandWidthFactor: c.abrBandWidthFactor, abrBandWidthUpFactor: c.abrBandWidthUpFactor, abrEwmaDefaultEstimate: c.abrEwmaDefaultEstimate, custom_abr: c.abrController !== Hls.DefaultConfig.abrController };
  log.started_us = now_us();
  hls.on(Hls.Events.MANIFEST_PARSED, () => void video.play().catch((e: unknown) => console.error("hls.js fatal error play()", String(e))));
  hls.loadSource(`${new URL(q.get("url")!).origin}${q.get("mpd") ?? "/master.m3u8"}`);
  hls.attachMedia(video);
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const t = now_us();
      const s = nuwa.current() ?? session;
      const est = s.controller.estimate(t);
      const own_bps = nuwa.hlsjsEstimateBps();
      log.samples.push({
        t_us: t,
        media_s: video.currentTime,
        frame_media_s: frameMediaS(),
        buffer_s: bufferAheadS(video),
        nuwa_bps: est.bps,
        dashjs_bps: own_bps,
        bitrate_kbps: kbps(hls.currentLevel),
        window_bytes: s.controller.windowBytes,
        qd_ms: log.frames.raw_qd_ms[log.frames.raw_qd_ms.length - 1] ?? 0,
        downloading: s.activeRequests > 0,
      });
      status.textContent = `${scheme}: media ${video.currentTime.toFixed(1)} s, buffer ${(log.samples.at(-1)?.buffer_s ?? 0).toFixed(1)} s, Nuwa ${(est.bps / 1e6).toFixed(2)} Mbit/s, hls.js ${(own_bps / 1e6).toFixed(2)} Mbit/s`;
      const enough = t - log.started_us > duration_s * 1e6 && log.startup_s !== null && video.currentTime >= duration_s - 1;
      if (enough || t - log.started_us > (duration_s + 60) * 1e6) {
        clearInterval(timer);
        resolve();
      }
    }, 250);
  });
  stopping = true;
  hls.destroy();
  nuwa.close();
}

main()
  .catch((e: unknown) => {
    log.error = String(e);
  })
  .finally(() => {
    log.done = true;
  });
