/**
 * Playback page for shaka-player 5 (issue 19 item 4): shaka plays the same MPD
 * with every request over a Nuwa session (`@nuwa/player/shaka`'s scheme plugin)
 * and writes `window.__nuwa_play` in the dash.js page's shape (play.ts), so
 * lab/nuwa_lab/play_metrics.py scores it unchanged; `dashjs_bps` there holds the
 * player's own estimate (shaka's EWMA, read at the same instant as Nuwa's).
 * Schemes: `shaka` (shaka as shipped, its ABR and estimate, only the networking
 * replaced, over the server's cubic), `shaka_grants` (the same over Nuwa's
 * grants), `shaka_nuwa` (shaka's SimpleAbrManager on Nuwa's estimate, grants).
 * Query: url, hash, mpd, duration_s, scheme, cc (JSON), cmcd (`query` | `header`: the site
 * turns shaka's CMCD on, `cmcd.enabled`, `useHeaders` for header; the scheme carries the keys
 * as the request's `cmcd`, logged by the server; absent: off).
 */
import { attachNuwaShaka, type ShakaAttachOptions, type ShakaLike } from "@nuwa/player/shaka";
import * as shakaModule from "shaka-player";
import { watchRendered } from "./rendered.js";

type Shaka = typeof shakaModule.default.default;
const shaka = ((shakaModule as unknown as { default?: Shaka }).default ?? shakaModule) as Shaka; // CommonJS: the namespace is module.exports

/** The ladder's shaka schemes as attachNuwaShaka options (and shaka settings of a scheme outside it). */
const SCHEMES: Record<string, Pick<ShakaAttachOptions, "mode" | "estimate"> & { prefetch?: number }> = {
  shaka: { mode: "observe", estimate: "shaka" },
  shaka_grants: { mode: "control", estimate: "shaka" },
  shaka_nuwa: { mode: "control", estimate: "nuwa" },
  // two segments of each stream fetched ahead in parallel (shaka's streaming.segmentPrefetchLimit; 0 by default)
  shaka_nuwa_prefetch: { mode: "control", estimate: "nuwa", prefetch: 2 },
};

const q = new URLSearchParams(location.search);
const scheme = q.get("scheme") ?? "shaka_nuwa";
type Log = Window["__nuwa_play"];
const log: Log = { done: false, error: null, scheme, started_us: 0, startup_s: null, frames: { send_us: [], recv_us: [], raw_qd_ms: [] }, samples: [], chunks: [], abandoned: [], quality_changes: [], rendered: [], stalls: [], abr_reasons: [] };
window.__nuwa_play = log;
const now_us = () => performance.now() * 1000;
const video = document.getElementById("video") as HTMLVideoElement;
const status = document.getElementById("status")!;
let stopping = false;

/** Seconds of video buffered ahead of the playhead. */
function bufferAhead(): number {
  const b = video.buffered;
  for (let i = 0; i < b.length; i++) if (b.start(i) <= video.currentTime + 0.1 && video.currentTime <= b.end(i)) return b.end(i) - video.currentTime;
  return 0;
}

async function main(): Promise<void> {
  if (!SCHEMES[scheme]) throw new Error(`unknown scheme ${scheme}`);
  const duration_s = Number(q.get("duration_s") ?? "60");
  shaka.polyfill.installAll();
  const player = new shaka.Player();
  await player.attach(video);
  const cmcd = q.get("cmcd");
  if (cmcd === "query" || cmcd === "header") player.configure({ cmcd: { enabled: true, sessionId: "nuwa-e2e", contentId: "nuwa", useHeaders: cmcd === "header" } });
  const { prefetch, ...attach } = SCHEMES[scheme]!;
  if (prefetch !== undefined) player.configure({ streaming: { segmentPrefetchLimit: prefetch } });
  const nuwa = attachNuwaShaka(player, shaka as unknown as ShakaLike, {
    url: q.get("url")!,
    serverCertificateHashHex: q.get("hash") ?? undefined,
    cc: JSON.parse(q.get("cc") ?? "{}"),
    ...attach,
    onTelemetry: (e) => {
      if (e.type !== "frame") return;
      log.frames.send_us.push(e.send_time_us);
      log.frames.recv_us.push(e.t_us);
      log.frames.raw_qd_ms.push(e.decision.raw_queuing_delay_ms);
    },
  });
  player.addEventListener("error", (e) => console.error("shaka error", JSON.stringify((e as unknown as { detail: unknown }).detail).slice(0, 500)));
  const session = await nuwa.session;
  log.transport = session.transport;
  const SEGMENT = shaka.net.NetworkingEngine.RequestType.SEGMENT;
  // Completed video media segments, with the representation's bitrate and media position (chunks of play_metrics).
  player.getNetworkingEngine()?.registerResponseFilter((type, response, context) => {
    const seg = context?.segment;
    const stream = context?.stream;
    if (stopping || type !== SEGMENT || !seg || !stream || stream.type !== "video" || context?.isPreload) return;
    const start_s = seg.getStartTime();
    const d_s = seg.getEndTime() - start_s;
    log.chunks.push({ t_us: now_us(), bitrate_kbps: (stream.bandwidth ?? 0) / 1000, index: Math.round(start_s / d_s), start_s, duration_s: d_s, bytes: response.data.byteLength });
  });
  // Video rungs by frame size (a variant pairs one with an audio track: the same rung repeats, once each).
  const rungs = () => {
    const by = new Map<number, { kbps: number; width: number; height: number }>();
    for (const v of player.getVariantTracks()) if (v.videoId != null && v.videoBandwidth) by.set(v.videoId, { kbps: v.videoBandwidth / 1000, width: v.width ?? 0, height: v.height ?? 0 });
    return [...by.values()];
  };
  const frameMediaS = watchRendered(video, log.rendered!, rungs, () => stopping, now_us);
  const activeKbps = () => {
    const t = player.getVariantTracks().find((v) => v.active);
    return t?.videoBandwidth ? t.videoBandwidth / 1000 : Number.NaN;
  };
  player.addEventListener("adaptation", () => log.quality_changes.push({ t_us: now_us(), bitrate_kbps: activeKbps() }));
  player.addEventListener("buffering", (e) => {
    const buffering = (e as unknown as { buffering: boolean }).buffering;
    if (log.startup_s === null) return;
    const last = log.stalls[log.stalls.length - 1];
    if (buffering && !(last && last.end_us === null)) log.stalls.push({ start_us: now_us(), end_us: null });
    else if (!buffering && last && last.end_us === null) last.end_us = now_us();
  });
  video.addEventListener("playing", () => {
    if (log.startup_s === null) log.startup_s = (now_us() - log.started_us) / 1e6;
  });
  log.started_us = now_us();
  await player.load(`${new URL(q.get("url")!).origin}${q.get("mpd") ?? "/manifest.mpd"}`);
  video.muted = true;
  await video.play();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const t = now_us();
      const live = nuwa.current() ?? session; // the session open now (a reconnect closes the first)
      // Both estimates at the same instant: Nuwa's controller and shaka's own EWMA.
      const est = live.controller.estimate(t);
      const shaka_bps = nuwa.shakaEstimateBps();
      log.samples.push({
        t_us: t,
        media_s: video.currentTime,
        frame_media_s: frameMediaS(),
        buffer_s: bufferAhead(),
        nuwa_bps: est.bps,
        dashjs_bps: shaka_bps,
        bitrate_kbps: activeKbps(),
        window_bytes: live.controller.windowBytes,
        qd_ms: log.frames.raw_qd_ms[log.frames.raw_qd_ms.length - 1] ?? 0,
        downloading: live.activeRequests > 0,
      });
      status.textContent = `${scheme}: media ${video.currentTime.toFixed(1)} s, buffer ${bufferAhead().toFixed(1)} s, Nuwa ${(est.bps / 1e6).toFixed(2)} Mbit/s, shaka ${(shaka_bps / 1e6).toFixed(2)} Mbit/s`;
      // Enough media played, or the media ended first (`--content` shorter than --duration).
      const played = (t - log.started_us > duration_s * 1e6 && log.startup_s !== null && video.currentTime >= duration_s - 1) || (log.startup_s !== null && video.ended);
      if (played || t - log.started_us > (duration_s + 60) * 1e6) {
        clearInterval(timer);
        resolve();
      }
    }, 250);
  });
  stopping = true;
  await player.destroy();
  nuwa.close();
}

main()
  .catch((e: unknown) => {
    log.error = String(e instanceof Error ? e : JSON.stringify(e));
  })
  .finally(() => {
    log.done = true;
  });
