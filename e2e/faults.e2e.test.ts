/**
 * Faults end to end (issue 4 "bad input", issue 7 item 5): the real aioquic
 * server, the trace-driven emulator (T-Mobile LTE, 25 ms each way) and
 * headless Chromium playing the real ffmpeg DASH content with dash.js over
 * Nuwa (e2e/pages/faults.ts). Faults are made by real means: a content copy
 * with a segment deleted or a corrupt MPD, the server process terminated
 * (SIGTERM: it closes the session mid-segment) or killed (SIGKILL: it just
 * goes silent) and started again on the same port, and a seek that makes
 * dash.js abort a segment in flight. Every case must end in a clear dash.js
 * error, a retry, or a recovery; never in a hung player. Facts come from the
 * server's session logs and dash.js's own events, not from the page's word.
 */
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FaultsLog } from "./pages/faults.js";
import { launchChromium } from "./src/browser.js";
import { buildPages } from "./src/build-pages.js";
import { ensureContent } from "./src/play.js";
import { type Link, PYTHON, REPO_ROOT, type Started, startLink, startWithReady } from "./src/procs.js";
import { serveStatic } from "./src/static.js";

const TRACE = `${REPO_ROOT}traces/4G/mahimahi-tmobile-lte-short.mahi`;
const OUT = `${REPO_ROOT}out/e2e/faults`;
const DELAY_MS = 25;

let content_dir = "";
let browser: BrowserContext;
let web: Awaited<ReturnType<typeof serveStatic>>;

/** A copy of the content (hard links: no bytes copied) with `edit` applied; edited files must be replaced, never written through a link. */
function contentCopy(name: string, edit: (dir: string) => void): string {
  const dir = `${REPO_ROOT}.cache/faults/${name}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(content_dir)) {
    if (statSync(join(content_dir, f)).isFile()) linkSync(join(content_dir, f), join(dir, f));
  }
  edit(dir);
  return dir;
}

/** A run: server + emulator, a page, and the means to restart the server on the same port. */
class Run {
  link!: Link;
  server!: Started;
  page!: Page;
  restarts = 0;
  readonly console_lines: string[] = [];
  constructor(
    readonly name: string,
    readonly content_root: string,
    readonly trace = TRACE,
  ) {}

  get out(): string {
    return `${OUT}/${this.name}`;
  }

  async start(query: Record<string, string> = {}): Promise<void> {
    rmSync(this.out, { recursive: true, force: true });
    mkdirSync(`${this.out}/server`, { recursive: true });
    this.link = await startLink({ cc: "nuwa", content_root: this.content_root, trace: this.trace, delay_ms: DELAY_MS, queue_packets: 1000, out: this.out });
    this.server = this.link.server;
    this.page = await browser.newPage();
    this.page.on("console", (m) => this.console_lines.push(`${m.type()}: ${m.text()}`));
    const params = new URLSearchParams({
      url: `https://127.0.0.1:${this.link.emulator.ready.listen_port}/nuwa`,
      hash: String(this.server.ready.cert_sha256_hex),
      mpd: "/manifest.mpd",
      ...query,
    });
    await this.page.goto(`http://127.0.0.1:${web.port}/faults.html?${params}`);
  }

  state(): Promise<FaultsLog> {
    return this.page.evaluate(() => JSON.parse(JSON.stringify(window.__nuwa_faults)) as FaultsLog);
  }

  pageNowMs(): Promise<number> {
    return this.page.evaluate(() => window.__nuwa_faults_now());
  }

  /** Poll the page until `pred` holds; throws with the last state after `timeout_ms`. */
  async until(pred: (s: FaultsLog) => boolean, timeout_ms: number, what: string, poll_ms = 100): Promise<FaultsLog> {
    const end = Date.now() + timeout_ms;
    let s = await this.state();
    while (!pred(s)) {
      if (Date.now() > end) throw new Error(`${this.name}: no "${what}" within ${timeout_ms} ms; last sample ${JSON.stringify(s.samples.at(-1))}, session events ${JSON.stringify(s.session_events)}, dash.js errors ${JSON.stringify(s.dash_errors)}`);
      await new Promise((r) => setTimeout(r, poll_ms));
      s = await this.state();
    }
    return s;
  }

  /**
   * Wait (polling inside the page, no round trips) until a video segment that
   * started at least `after_ms` into the run has been in flight for `min_ms`,
   * so its HEAD and some DATA have arrived and, at the higher bitrates reached
   * by then, more is to come; seek at that moment if `seek_to_s` is given.
   */
  segmentInFlight(min_ms: number, after_ms: number, timeout_ms: number, seek_to_s?: number): Promise<{ url: string; started_ms: number; t_ms: number }> {
    return Promise.race([
      this.page.evaluate(([m, a, sk]) => window.__nuwa_faults_in_flight(m!, a!, sk ?? undefined), [min_ms, after_ms, seek_to_s ?? null] as const),
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${this.name}: no video segment in flight for ${min_ms} ms within ${timeout_ms} ms`)), timeout_ms)),
    ]);
  }

  /** Stop the server by signal (its PID), then start a new one on the same port after `down_ms`. */
  async restartServer(signal: "SIGTERM" | "SIGKILL", down_ms: number): Promise<void> {
    const proc = this.server.proc;
    const exited = new Promise<void>((r) => (proc.exitCode !== null || proc.signalCode !== null ? r() : proc.once("exit", () => r())));
    proc.kill(signal);
    await exited;
    await new Promise((r) => setTimeout(r, down_ms));
    this.restarts++;
    const port = String(this.server.ready.port);
    mkdirSync(`${this.out}/server-${this.restarts}`, { recursive: true });
    this.server = await startWithReady(
      PYTHON,
      ["-m", "nuwa_server.server", "--host", "::", "--port", port, "--cc", "nuwa", "--content-root", this.content_root, "--state-dir", `${REPO_ROOT}.cache/dev-cert`, "--log-dir", `${this.out}/server-${this.restarts}`],
      `${this.out}/server-${this.restarts}.stderr`,
    );
    expect(this.server.ready.port).toBe(Number(port));
  }

  private stopped = false;

  /** Stop the page, then the server and the emulator (idempotent); keeps the page log in the run directory. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.page?.evaluate(() => window.__nuwa_faults_stop?.()).catch(() => {});
      writeFileSync(`${this.out}/page.json`, JSON.stringify(await this.state().catch(() => null)));
      writeFileSync(`${this.out}/console.log`, this.console_lines.join("\n"));
      await this.page?.close();
    } finally {
      await this.server?.stop();
      await this.link?.stop();
    }
  }

  /** Every session's events.jsonl rows of every server this run started (complete once the run is stopped: the logs are buffered). */
  serverEvents(): Record<string, unknown>[] {
    const rows: Record<string, unknown>[] = [];
    for (const d of readdirSync(this.out)) {
      if (!(d === "server" || d.startsWith("server-")) || !statSync(join(this.out, d)).isDirectory()) continue;
      for (const s of readdirSync(join(this.out, d))) {
        const f = join(this.out, d, s, "events.jsonl");
        try {
          for (const line of readFileSync(f, "utf8").split("\n")) if (line) rows.push({ ...JSON.parse(line), server_dir: d });
        } catch {
          /* no log yet */
        }
      }
    }
    return rows;
  }
}

/** Segment numbers (from the URL, seg-R-NNNNN.m4s) of completed video segments. */
function completedVideoNumbers(s: FaultsLog): number[] {
  return s.segments.filter((e) => e.media === "video" && e.event === "completed").map((e) => Number(/seg-\d+-(\d+)\.m4s/.exec(e.url)?.[1] ?? Number.NaN));
}

/** Whether `nums` covers 1..max(nums) with no hole. */
function contiguousFromOne(nums: number[]): { ok: boolean; missing: number[] } {
  const have = new Set(nums);
  const max = Math.max(...nums);
  const missing: number[] = [];
  for (let i = 1; i <= max; i++) if (!have.has(i)) missing.push(i);
  return { ok: missing.length === 0, missing };
}

const mediaAt = (s: FaultsLog) => s.samples.at(-1)?.media_s ?? 0;

beforeAll(async () => {
  content_dir = await ensureContent(120);
  await buildPages();
  web = await serveStatic(`${REPO_ROOT}e2e/pages`);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  web?.server.close();
});

describe("bad input ends in a clear player error or a retry (issue 4)", () => {
  it("a missing media segment: 404 reaches dash.js, which retries it, then reports DOWNLOAD_ERROR_ID_CONTENT (27)", async () => {
    // Segment 3 of every video rung is gone; everything else is intact.
    const dir = contentCopy("missing-segment", (d) => {
      for (let r = 0; r < 8; r++) rmSync(join(d, `seg-${r}-00003.m4s`));
    });
    const run = new Run("missing-segment", dir);
    try {
      await run.start();
      const s = await run.until((x) => x.dash_errors.length > 0 || x.error !== null, 60_000, "a dash.js error");
      expect(s.error).toBeNull();
      const err = s.dash_errors[0]!;
      console.log(`missing segment: dash.js error ${err.code} "${err.message}" at ${(err.t_ms / 1000).toFixed(1)} s`);
      expect(err.code).toBe(27); // DOWNLOAD_ERROR_ID_CONTENT_CODE
      expect(err.message).toMatch(/seg-\d-00003\.m4s is not available/);
      await run.stop(); // flushes the server's session logs
      // The server answered 404 to the first try and to every dash.js retry (retryAttempts.MediaSegment = 3).
      const not_found = run.serverEvents().filter((e) => e.event === "error_response" && e.status === 404);
      const requests = run.serverEvents().filter((e) => e.event === "request" && /\/seg-[0-7]-00003\.m4s$/.test(String(e.path)));
      expect(not_found.length).toBeGreaterThanOrEqual(4);
      expect(requests.length).toBe(not_found.length);
      // Segments before the hole played: the player was alive, not hung.
      expect(completedVideoNumbers(s)).toEqual(expect.arrayContaining([1, 2]));
    } finally {
      await run.stop();
    }
  });

  it("a malformed MPD: dash.js reports a manifest error at once; no segment is requested", async () => {
    const dir = contentCopy("corrupt-mpd", (d) => {
      const mpd = readFileSync(join(content_dir, "manifest.mpd"), "utf8");
      rmSync(join(d, "manifest.mpd")); // a hard link to the real MPD: replace, never write through it
      writeFileSync(join(d, "manifest.mpd"), `${mpd.slice(0, Math.floor(mpd.length / 2))}<<<`);
    });
    const run = new Run("corrupt-mpd", dir);
    try {
      await run.start();
      const s = await run.until((x) => x.dash_errors.length > 0, 20_000, "a dash.js error");
      console.log(`corrupt MPD: dash.js error ${s.dash_errors[0]!.code} "${s.dash_errors[0]!.message}" at ${(s.dash_errors[0]!.t_ms / 1000).toFixed(1)} s`);
      // MANIFEST_LOADER_PARSING_FAILURE_ERROR_CODE (10) or MANIFEST_ERROR_ID_PARSE_CODE (31).
      expect([10, 31]).toContain(s.dash_errors[0]!.code);
      await run.stop();
      const reqs = run.serverEvents().filter((e) => e.event === "request");
      expect(reqs.map((e) => e.path)).toEqual(["/manifest.mpd"]);
      expect(s.segments).toEqual([]);
    } finally {
      await run.stop();
    }
  });

  it("a missing MPD: 404, three dash.js retries, then DOWNLOAD_ERROR_ID_MANIFEST (25)", async () => {
    const run = new Run("missing-mpd", content_dir);
    try {
      await run.start({ mpd: "/no-such.mpd" });
      const s = await run.until((x) => x.dash_errors.length > 0, 20_000, "a dash.js error");
      expect(s.dash_errors[0]!.code).toBe(25);
      await run.stop();
      const reqs = run.serverEvents().filter((e) => e.event === "error_response" && e.status === 404);
      expect(reqs.length).toBe(4); // retryAttempts.MPD = 3
    } finally {
      await run.stop();
    }
  });

  it("a request aborted by dash.js (seek while a segment is in flight): dash.js abandons it, playback resumes at the new position, the session keeps flowing", async () => {
    const run = new Run("abort-seek", content_dir);
    try {
      await run.start();
      await run.until((x) => x.playing_since_ms !== null, 30_000, "playback");
      const seg = await run.segmentInFlight(150, 4000, 30_000, 80);
      const s = await run.until((x) => mediaAt(x) >= 86, 40_000, "media time 86 s after the seek to 80 s");
      const abandoned = s.segments.filter((e) => e.event === "abandoned");
      expect(s.dash_errors).toEqual([]);
      expect(s.samples.at(-1)?.sessions).toBe(1); // an abort never costs the session
      await run.stop();
      // dash.js aborted the segment in flight; the loader sent a cancel naming it, and the server cut the response short.
      const path = new URL(seg.url).pathname;
      const events = run.serverEvents();
      const req = events.find((e) => e.event === "request" && e.path === path);
      const cancel = events.find((e) => e.event === "cancel" && e.request_id === req?.id);
      console.log(`abort: ${path} in flight ${(seg.t_ms - seg.started_ms).toFixed(0)} ms at the seek; ${abandoned.length} abandoned event(s); server cancel ${JSON.stringify(cancel)}; media ${mediaAt(s).toFixed(1)} s`);
      expect(req).toBeDefined();
      expect(cancel).toBeDefined();
      expect(cancel!.cut).toBe(true);
      // The cancelled stream was read to its end: the grants kept the books straight, the server never wrote past a grant,
      // and everything after the seek still flowed on the same session.
      const summaries = events.filter((e) => e.event === "summary");
      expect(summaries.length).toBe(1);
      expect(summaries[0]!.grant_violations).toBe(0);
      expect(summaries[0]!.cancelled).toBeGreaterThanOrEqual(1);
    } finally {
      await run.stop();
    }
  });
});

describe("server restart mid-playback (issue 7 item 5)", () => {
  it("server closes the session mid-segment (SIGTERM) and comes back: requests fail at once, the player reconnects and resumes the segment from its missing bytes", async () => {
    const run = new Run("close-mid-segment", content_dir);
    try {
      await run.start();
      await run.until((x) => x.playing_since_ms !== null, 30_000, "playback");
      const seg = await run.segmentInFlight(150, 4000, 30_000);
      const t_kill = await run.pageNowMs();
      const before = await run.state();
      const restarted = run.restartServer("SIGTERM", 500);
      const closed = await run.until((x) => x.session_events.some((e) => e.type === "session_closed"), 5_000, "session_closed", 20);
      const ev = closed.session_events.find((e) => e.type === "session_closed")!;
      console.log(`close mid-segment: ${seg.url.split("/").pop()} in flight; session_closed ${(ev.t_ms - t_kill).toFixed(0)} ms after SIGTERM: ${ev.detail}`);
      expect(ev.t_ms - t_kill).toBeLessThan(1000);
      expect(ev.detail).toMatch(/closed by the server|connection lost/);
      await restarted;
      const media_kill = mediaAt(before);
      const s = await run.until((x) => x.samples.at(-1)!.sessions >= 2 && mediaAt(x) >= media_kill + 10, 60_000, "10 s of media after the restart");
      expect(s.dash_errors).toEqual([]);
      const nums = completedVideoNumbers(s);
      const c = contiguousFromOne(nums);
      expect(c.missing, `completed video segments ${nums.join(",")}`).toEqual([]);
      // The segment in flight was finished from where it stopped: a ranged request to the new server.
      await run.stop();
      const path = new URL(seg.url).pathname;
      const resumed = run.serverEvents().filter((e) => e.server_dir !== "server" && e.event === "request" && e.path === path);
      console.log(`close mid-segment: requests for ${path} to the new server: ${JSON.stringify(resumed.map((e) => e.range))}`);
      expect(resumed.length).toBeGreaterThanOrEqual(1);
      expect((resumed[0]!.range as number[] | null)?.[0] ?? 0).toBeGreaterThan(0);
    } finally {
      await run.stop();
    }
  });

  it("server killed (SIGKILL, silent) and restarted on the same port: a short outage is ridden out on the buffer, a long one rebuffers and recovers; no segment lost", async () => {
    const run = new Run("kill-restart", content_dir);
    try {
      await run.start({ buffer_s: "12", stall_timeout_ms: "3000" });
      // Short outage (2 s down, + up to 3 s to notice) with ≥ 10 s buffered: no rebuffer.
      await run.until((x) => (x.samples.at(-1)?.buffer_s ?? 0) >= 10, 60_000, "10 s of buffer");
      const before_short = await run.state();
      const t_short = await run.pageNowMs();
      await run.restartServer("SIGKILL", 2000);
      let s = await run.until((x) => x.samples.at(-1)!.sessions >= 2 && mediaAt(x) >= mediaAt(before_short) + 8, 60_000, "8 s of media after the short outage");
      const stalls_short = s.stalls.filter((x) => x.start_ms >= t_short);
      const closed_short = s.session_events.filter((e) => e.type === "session_closed");
      console.log(`kill (short outage): buffer ${before_short.samples.at(-1)!.buffer_s.toFixed(1)} s at the kill; ${closed_short.map((e) => e.detail).join("; ")}; stalls since: ${stalls_short.length}`);
      expect(closed_short[0]?.detail).toMatch(/stalled: nothing received/);
      expect(stalls_short).toEqual([]);
      // Long outage (18 s down) outlasts the 12 s buffer: one rebuffer, then playback resumes.
      const t_long = await run.pageNowMs();
      const before_long = await run.state();
      await run.restartServer("SIGKILL", 18_000);
      const t_back = await run.pageNowMs();
      s = await run.until((x) => x.samples.at(-1)!.sessions >= 3 && mediaAt(x) >= mediaAt(before_long) + 16, 90_000, "media 16 s past the long outage");
      const stalls_long = s.stalls.filter((x) => x.start_ms >= t_long);
      const reconnects = s.session_events.filter((e) => e.type === "reconnect" && e.t_ms >= t_long);
      console.log(
        `kill (long outage): buffer ${before_long.samples.at(-1)!.buffer_s.toFixed(1)} s at the kill; stalls ${JSON.stringify(stalls_long.map((x) => [Math.round(x.start_ms - t_long), x.end_ms === null ? null : Math.round(x.end_ms - t_long)]))} ms after the kill (server back at ${Math.round(t_back - t_long)} ms); ${reconnects.length} reconnect attempts, delays ${reconnects.map((e) => e.detail.split(":")[0]).join(" | ")}`,
      );
      expect(stalls_long.length).toBeGreaterThanOrEqual(1);
      expect(stalls_long.every((x) => x.end_ms !== null)).toBe(true);
      // the buffer carried playback first, to its end: the stall starts when the buffer held at the kill
      // ran out (the MPC ABR refills to a higher rung after the short outage, so that buffer is the
      // measure, not a fixed 8 s: CI at 949d673 had 7.0 s at the kill and stalled 6.7 s later)
      const buffer_long_s = before_long.samples.at(-1)!.buffer_s;
      expect(buffer_long_s).toBeGreaterThan(4); // a buffer was rebuilt after the short outage
      expect(stalls_long[0]!.start_ms - t_long).toBeGreaterThan(buffer_long_s * 1000 - 1500);
      expect(s.dash_errors).toEqual([]);
      const nums = completedVideoNumbers(s);
      expect(contiguousFromOne(nums).missing, `completed video segments ${nums.join(",")}`).toEqual([]);
    } finally {
      await run.stop();
    }
  });
});
