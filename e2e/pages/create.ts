/**
 * createNuwaPlayer in a real page (e2e/create.e2e.test.ts): one call plays the
 * MPD over Nuwa; every typed event is counted and sampled into
 * `window.__nuwa_create`, beside what the <video> element itself reports
 * (its own `waiting` events and currentTime), so the test can hold the
 * events against an independent source. Query: url, hash, mpd, duration_s.
 */
import { createNuwaPlayer, NUWA_PLAYER_EVENT_TYPES, type NuwaPlayerEvents, type NuwaPlayerEventType } from "@nuwa/player";
import * as dashjs from "dashjs";

interface CreateLog {
  done: boolean;
  error: string | null;
  counts: Record<string, number>;
  first: Partial<Record<NuwaPlayerEventType, unknown>>;
  last: Partial<Record<NuwaPlayerEventType, unknown>>;
  stalls: NuwaPlayerEvents["stall"][];
  bitrates_bps: number[];
  max_buffer_s: number;
  errors: string[];
  sessions: NuwaPlayerEvents["session"][];
  /** The last 200 grant events. */
  grants_tail: NuwaPlayerEvents["grant"][];
  /** <video> `waiting` events after its first `playing`: the element's own rebuffer count. */
  video_waiting_after_start: number;
  media_s: number;
  /** qd events seen by a handler unsubscribed after 3 s, and by the one that stayed. */
  qd_unsubscribed: number;
  qd_at_unsubscribe: number;
  /** Events of any type delivered within 1.5 s after destroy(). */
  after_destroy: number;
  /** Whether the attachment still held a session after destroy(). */
  session_after_destroy: boolean;
  version: string;
}

declare global {
  interface Window {
    __nuwa_create: CreateLog;
  }
}

const q = new URLSearchParams(location.search);
const log: CreateLog = { done: false, error: null, counts: {}, first: {}, last: {}, stalls: [], bitrates_bps: [], max_buffer_s: 0, errors: [], sessions: [], grants_tail: [], video_waiting_after_start: 0, media_s: 0, qd_unsubscribed: 0, qd_at_unsubscribe: 0, after_destroy: 0, session_after_destroy: true, version: "" };
window.__nuwa_create = log;
const video = document.getElementById("video") as HTMLVideoElement;
const status = document.getElementById("status")!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const duration_s = Number(q.get("duration_s") ?? "20");
  let video_started = false;
  video.addEventListener("playing", () => {
    video_started = true;
  });
  video.addEventListener("waiting", () => {
    if (video_started) log.video_waiting_after_start++;
  });
  const p = createNuwaPlayer(video, { dashjs, url: q.get("url")!, serverCertificateHashHex: q.get("hash") ?? undefined, mpd: q.get("mpd") ?? "/manifest.mpd", preset: "vod" });
  log.version = p.player.getVersion();
  let destroyed = false;
  for (const t of NUWA_PLAYER_EVENT_TYPES) {
    log.counts[t] = 0;
    p.on(t, (e) => {
      if (destroyed) log.after_destroy++;
      log.counts[t] = (log.counts[t] ?? 0) + 1;
      if (log.first[t] === undefined) log.first[t] = e;
      log.last[t] = e;
    });
  }
  p.on("stall", (e) => log.stalls.push(e));
  p.on("bitrate", (e) => {
    if (e.media_type === "video") log.bitrates_bps.push(e.bitrate_bps);
  });
  p.on("buffer", (e) => {
    log.max_buffer_s = Math.max(log.max_buffer_s, e.level_s);
  });
  p.on("error", (e) => log.errors.push(`${e.source}: ${e.message}`));
  p.on("session", (e) => log.sessions.push(e));
  p.on("grant", (e) => {
    if (log.grants_tail.push(e) > 200) log.grants_tail.shift();
  });
  const offQd = p.on("qd", () => log.qd_unsubscribed++);
  await p.session;
  const t0 = performance.now();
  await sleep(3000);
  offQd();
  log.qd_at_unsubscribe = log.counts.qd ?? 0;
  while (performance.now() - t0 < (duration_s + 30) * 1000) {
    log.media_s = video.currentTime;
    status.textContent = `media ${video.currentTime.toFixed(1)} s, events ${JSON.stringify(log.counts)}`;
    if (video.currentTime >= duration_s) break;
    await sleep(250);
  }
  log.media_s = video.currentTime;
  destroyed = true;
  p.destroy();
  log.session_after_destroy = p.nuwa.current() !== null;
  await sleep(1500);
}

main()
  .catch((e: unknown) => {
    log.error = String(e);
  })
  .finally(() => {
    log.done = true;
  });
