/**
 * Fault-injection page (issue 4 "bad input", issue 7 item 5): dash.js plays
 * the MPD over Nuwa (attachNuwa) and the page records what a test needs to
 * tell a clear error, a retry or a recovery from a hang: dash.js errors,
 * segment loads (started, completed, abandoned), stalls, Nuwa session
 * closes/opens/reconnects, and a sample of media time, buffer and open
 * requests every 100 ms. Exposed as `window.__nuwa_faults`; the test drives
 * it with `window.__nuwa_faults_seek(t_s)` and `window.__nuwa_faults_stop()`.
 * Query: url, hash, mpd, stall_timeout_ms, buffer_s.
 */
import { attachNuwa } from "@nuwa/player";
import * as dashjsModule from "dashjs";

// The ESM build puts FactoryMaker only on its default export (window.dashjs).
const dashjs = ((dashjsModule as unknown as { default?: typeof dashjsModule }).default ?? dashjsModule) as typeof dashjsModule;

export interface FaultsLog {
  started_ms: number;
  error: string | null;
  /** dash.js ERROR events: code and message. */
  dash_errors: { t_ms: number; code: number; message: string }[];
  /** Session telemetry: session_closed / session_open / session_stalled / reconnect / error. */
  session_events: { t_ms: number; type: string; detail: string }[];
  /** Media segments (video) by dash.js event: started, completed, abandoned. */
  segments: { t_ms: number; event: "started" | "completed" | "abandoned"; media: string; index: number; quality: number; url: string }[];
  stalls: { start_ms: number; end_ms: number | null; media_s: number }[];
  seeks: { t_ms: number; to_s: number }[];
  samples: { t_ms: number; media_s: number; buffer_s: number; active_requests: number; sessions: number; session_open: boolean }[];
  playing_since_ms: number | null;
  stopped: boolean;
}

declare global {
  interface Window {
    __nuwa_faults: FaultsLog;
    __nuwa_faults_seek: (t_s: number) => void;
    __nuwa_faults_stop: () => void;
    /** The page clock of every `t_ms`, ms. */
    __nuwa_faults_now: () => number;
    /** Resolves (polling every 5 ms in the page) once a video segment started at or after `after_ms` has been in flight for `min_ms`; then seeks to `seek_to_s` if given. */
    __nuwa_faults_in_flight: (min_ms: number, after_ms: number, seek_to_s?: number) => Promise<{ url: string; started_ms: number; t_ms: number }>;
  }
}

const q = new URLSearchParams(location.search);
const t0 = performance.now();
const now_ms = () => performance.now() - t0;
const log: FaultsLog = { started_ms: 0, error: null, dash_errors: [], session_events: [], segments: [], stalls: [], seeks: [], samples: [], playing_since_ms: null, stopped: false };
window.__nuwa_faults = log;
window.__nuwa_faults_now = now_ms;
const video = document.getElementById("video") as HTMLVideoElement;
const status = document.getElementById("status")!;

interface SegEvent {
  request?: { mediaType: string; type: string; index: number; quality?: number; representation?: { index?: number; id?: string }; url: string };
}

function main(): void {
  const player = dashjs.MediaPlayer().create();
  const buffer_s = Number(q.get("buffer_s") ?? "12");
  const stall = q.get("stall_timeout_ms");
  const nuwa = attachNuwa(player as never, dashjs as never, {
    url: q.get("url")!,
    serverCertificateHashHex: q.get("hash") ?? undefined,
    preset: "vod",
    stall_timeout_ms: stall === null ? undefined : Number(stall),
    onTelemetry: (e) => {
      if (e.type === "session_closed") log.session_events.push({ t_ms: now_ms(), type: e.type, detail: `${e.reason} (${e.failed_requests} open)` });
      else if (e.type === "session_open") log.session_events.push({ t_ms: now_ms(), type: e.type, detail: `session #${e.sessions}` });
      else if (e.type === "reconnect") log.session_events.push({ t_ms: now_ms(), type: e.type, detail: `attempt ${e.attempt} in ${e.delay_ms.toFixed(0)} ms: ${e.reason}` });
      else if (e.type === "session_stalled") log.session_events.push({ t_ms: now_ms(), type: e.type, detail: `silent ${e.silent_ms.toFixed(0)} ms, ${e.open_requests} open` });
      else if (e.type === "error") log.session_events.push({ t_ms: now_ms(), type: e.type, detail: e.message });
    },
  });
  player.updateSettings({
    debug: { logLevel: 2 },
    streaming: { buffer: { bufferTimeDefault: buffer_s, bufferTimeAtTopQuality: buffer_s, bufferTimeAtTopQualityLongForm: buffer_s } },
  });
  const ev = dashjs.MediaPlayer.events;
  player.on(ev.ERROR, (e: { error?: { code?: number; message?: string } }) => {
    log.dash_errors.push({ t_ms: now_ms(), code: e.error?.code ?? -1, message: String(e.error?.message ?? JSON.stringify(e).slice(0, 300)) });
  });
  const seg = (event: "started" | "completed" | "abandoned") => (e: SegEvent) => {
    const r = e.request;
    if (r?.type !== "MediaSegment") return;
    log.segments.push({ t_ms: now_ms(), event, media: r.mediaType, index: r.index, quality: r.representation?.index ?? r.quality ?? -1, url: r.url });
  };
  player.on(ev.FRAGMENT_LOADING_STARTED, seg("started") as never);
  player.on(ev.FRAGMENT_LOADING_COMPLETED, seg("completed") as never);
  player.on(ev.FRAGMENT_LOADING_ABANDONED, seg("abandoned") as never);
  player.on(ev.PLAYBACK_WAITING, () => {
    if (log.playing_since_ms !== null && log.stalls.at(-1)?.end_ms !== null) log.stalls.push({ start_ms: now_ms(), end_ms: null, media_s: video.currentTime });
  });
  player.on(ev.PLAYBACK_PLAYING, () => {
    if (log.playing_since_ms === null) log.playing_since_ms = now_ms();
    const s = log.stalls.at(-1);
    if (s && s.end_ms === null) s.end_ms = now_ms();
  });
  window.__nuwa_faults_seek = (t_s: number) => {
    log.seeks.push({ t_ms: now_ms(), to_s: t_s });
    player.seek(t_s);
  };
  window.__nuwa_faults_in_flight = (min_ms, after_ms, seek_to_s) =>
    new Promise((resolve) => {
      const poll = setInterval(() => {
        const open = new Map<string, number>();
        for (const e of log.segments) {
          if (e.media !== "video") continue;
          if (e.event === "started") open.set(e.url, e.t_ms);
          else open.delete(e.url);
        }
        const t = now_ms();
        for (const [url, started_ms] of open) {
          if (started_ms >= after_ms && t - started_ms >= min_ms) {
            clearInterval(poll);
            if (seek_to_s !== undefined) window.__nuwa_faults_seek(seek_to_s);
            resolve({ url, started_ms, t_ms: t });
            return;
          }
        }
      }, 5);
    });
  const timer = setInterval(() => {
    const cur = nuwa.current();
    log.samples.push({
      t_ms: now_ms(),
      media_s: video.currentTime,
      buffer_s: player.getDashMetrics().getCurrentBufferLevel("video") || 0,
      active_requests: cur?.activeRequests ?? -1,
      sessions: nuwa.sessionCount(),
      session_open: cur !== null,
    });
    status.textContent = `media ${video.currentTime.toFixed(1)} s, buffer ${(log.samples.at(-1)?.buffer_s ?? 0).toFixed(1)} s, sessions ${nuwa.sessionCount()}`;
  }, 100);
  window.__nuwa_faults_stop = () => {
    clearInterval(timer);
    log.stopped = true;
    player.reset();
    nuwa.close();
  };
  nuwa.session.catch((e: unknown) => {
    log.error = `session did not open: ${String(e)}`;
  });
  log.started_ms = now_ms();
  player.initialize(video, `${new URL(q.get("url")!).origin}${q.get("mpd") ?? "/manifest.mpd"}`, true);
}

try {
  main();
} catch (e) {
  log.error = String(e);
}
