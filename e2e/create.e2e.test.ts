/**
 * createNuwaPlayer end to end: the page makes one call with the real dash.js
 * module, and plays the DASH ladder from the aioquic server through the
 * trace-driven emulator (T-Mobile LTE, 25 ms each way) in headless Chromium.
 * The typed events are held against independent sources: the MPD's ladder
 * (bitrates), the <video> element (media time, its own `waiting` events), and
 * the server's log (grants it received).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TD_PRESETS_MS } from "../packages/player/src/index.js";
import { launchChromium } from "./src/browser.js";
import { ensureContent } from "./src/play.js";
import { type Link, REPO_ROOT, startLink } from "./src/procs.js";
import { serveStatic } from "./src/static.js";

const TRACE = `${REPO_ROOT}traces/4G/mahimahi-tmobile-lte-short.mahi`;
const OUT = `${REPO_ROOT}out/e2e/create`;
const DURATION_S = 20;

type Log = {
  done: boolean;
  error: string | null;
  counts: Record<string, number>;
  first: Record<string, Record<string, unknown>>;
  last: Record<string, Record<string, unknown>>;
  stalls: { state: string; t_us: number; duration_ms?: number }[];
  bitrates_bps: number[];
  max_buffer_s: number;
  errors: string[];
  sessions: { state: string }[];
  grants_tail: { grant_seq: number; window_bytes: number; cum_received_bytes: number }[];
  video_waiting_after_start: number;
  media_s: number;
  qd_unsubscribed: number;
  qd_at_unsubscribe: number;
  after_destroy: number;
  session_after_destroy: boolean;
  version: string;
};

describe("createNuwaPlayer in Chromium over the emulated 4G link", () => {
  let log: Log;
  let ladder_bps: number[];
  const server_grants = new Set<string>();
  let link: Link | null = null;

  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(`${OUT}/server`, { recursive: true });
    const content_dir = await ensureContent(120);
    ladder_bps = [...readFileSync(join(content_dir, "manifest.mpd"), "utf8").matchAll(/bandwidth="(\d+)"/g)].map((m) => Number(m[1]));
    await build({
      entryPoints: [`${REPO_ROOT}e2e/pages/create.ts`],
      outdir: `${REPO_ROOT}e2e/pages/dist`,
      bundle: true,
      format: "esm",
      target: "chrome120",
      logLevel: "warning",
      alias: { "@nuwa/cc": `${REPO_ROOT}packages/cc/src/index.ts`, "@nuwa/player": `${REPO_ROOT}packages/player/src/index.ts` },
    });
    const web = await serveStatic(`${REPO_ROOT}e2e/pages`);
    const browser = await launchChromium();
    try {
      link = await startLink({ cc: "nuwa", content_root: content_dir, trace: TRACE, delay_ms: 25, queue_packets: 1000, out: OUT });
      const page = await browser.newPage();
      const params = new URLSearchParams({ url: `https://127.0.0.1:${link.emulator.ready.listen_port}/nuwa`, hash: String(link.server.ready.cert_sha256_hex), mpd: "/manifest.mpd", duration_s: String(DURATION_S) });
      await page.goto(`http://127.0.0.1:${web.port}/create.html?${params}`);
      await page.waitForFunction(() => window.__nuwa_create?.done === true, undefined, { timeout: (DURATION_S + 90) * 1000, polling: 500 });
      log = (await page.evaluate(() => JSON.parse(JSON.stringify(window.__nuwa_create)))) as Log;
    } finally {
      await browser.close();
      await link?.stop();
      web.server.close();
    }
    // Grants the server received and parsed, from its own log (server/<session>/grants.jsonl).
    for (const d of readdirSync(`${OUT}/server`)) {
      const f = `${OUT}/server/${d}/grants.jsonl`;
      if (!existsSync(f)) continue;
      for (const line of readFileSync(f, "utf8").split("\n")) {
        if (line === "") continue;
        const g = JSON.parse(line) as { grant_seq: number | null; window_bytes: number | null; cum_received_bytes: number | null };
        if (g.grant_seq !== null) server_grants.add(`${g.grant_seq}:${g.window_bytes}:${g.cum_received_bytes}`);
      }
    }
    console.log(`createNuwaPlayer e2e: media ${log.media_s.toFixed(1)} s, events ${JSON.stringify(log.counts)}, stalls ${log.stalls.length}, video waiting ${log.video_waiting_after_start}, server grants ${server_grants.size}`);
  }, 300_000);

  afterAll(async () => {
    await link?.stop();
  });

  it("plays: the page reports no error and the <video> element's media time reaches the target", () => {
    expect(log.error).toBeNull();
    expect(log.errors).toEqual([]);
    expect(log.version).toMatch(/^5\./);
    expect(log.media_s).toBeGreaterThanOrEqual(DURATION_S - 1);
    expect(log.counts.startup).toBe(1);
    expect(log.sessions[0]?.state).toBe("open");
  });

  it("bitrate events name rungs of the MPD ladder; buffer events show a filled buffer", () => {
    expect(log.bitrates_bps.length).toBeGreaterThan(0);
    for (const b of log.bitrates_bps) expect(ladder_bps).toContain(b);
    expect(log.max_buffer_s).toBeGreaterThan(2);
  });

  it("stall events match the <video> element's own waiting events after start", () => {
    const starts = log.stalls.filter((s) => s.state === "start").length;
    const ends = log.stalls.filter((s) => s.state === "end");
    expect(starts).toBe(log.video_waiting_after_start);
    expect(ends.length === starts || ends.length === starts - 1).toBe(true);
    for (const e of ends) expect(e.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("grant, qd and estimate events flow from the live session; Td is the vod preset's", () => {
    expect(log.counts.grant).toBeGreaterThan(DURATION_S * 50); // at least every 10 ms (GrantPolicy max interval) less startup
    // The page's last 200 grant events are grants the server received, field for field (datagrams may be lost: ≥ 90%).
    const matched = log.grants_tail.filter((g) => server_grants.has(`${g.grant_seq}:${g.window_bytes}:${g.cum_received_bytes}`)).length;
    expect(log.grants_tail.length).toBe(200);
    expect(matched / log.grants_tail.length).toBeGreaterThanOrEqual(0.9);
    expect(log.counts.qd).toBeGreaterThan(1000);
    expect(log.last.qd?.target_delay_ms).toBe(TD_PRESETS_MS.vod);
    expect(Number(log.last.grant?.window_bytes)).toBeGreaterThan(0);
    expect(log.counts.estimate).toBeGreaterThan(DURATION_S * 2); // every 250 ms
    expect(Number(log.last.estimate?.bps)).toBeGreaterThan(0);
    expect(log.counts.abr).toBeGreaterThan(0);
  });

  it("unsubscribe stops one handler; destroy stops all and closes the session", () => {
    expect(log.qd_unsubscribed).toBeGreaterThan(0);
    expect(log.qd_unsubscribed).toBeLessThanOrEqual(log.qd_at_unsubscribe);
    expect(log.counts.qd).toBeGreaterThan(log.qd_at_unsubscribe);
    expect(log.after_destroy).toBe(0);
    expect(log.session_after_destroy).toBe(false);
  });
});
