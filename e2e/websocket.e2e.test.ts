/**
 * Issue 7 item 6: a browser without WebTransport plays over the WebSocket fallback.
 *
 * Real parts: ffmpeg DASH content, the Python server with its WebSocket
 * endpoint (`--ws-port`), the emulator's TCP relay (`--tcp`) replaying a real
 * 4G trace (25 ms each way), headless Chromium with `WebTransport` deleted
 * from the page before any script runs, dash.js through @nuwa/player, which
 * falls back to @moq/web-transport-ws and sends its grants on a stream. About 30 s
 * of playback; the run's files stay in out/e2e-websocket.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { launchChromium } from "./src/browser.js";
import { buildPages } from "./src/build-pages.js";
import { ensureContent } from "./src/play.js";
import { PYTHON, REPO_ROOT, type Started, startWithReady } from "./src/procs.js";
import { serveStatic } from "./src/static.js";
import { FUNCTIONAL_P99_LATENESS_MS } from "./src/valid-run.js";

const execFileP = promisify(execFile);
const TRACE = resolve(REPO_ROOT, "traces/4G/mahimahi-verizon-lte-short.mahi");
const DURATION_S = 30;
const DELAY_MS = 25;

describe("browser without WebTransport", () => {
  it(
    "falls back to the WebSocket polyfill, grants on a stream, plays through the TCP relay under a 4G trace",
    async () => {
      const out = resolve(REPO_ROOT, "out/e2e-websocket");
      rmSync(out, { recursive: true, force: true });
      mkdirSync(`${out}/server`, { recursive: true });
      const content = await ensureContent(120);
      await buildPages();
      const procs: Started[] = [];
      const web = await serveStatic(`${REPO_ROOT}e2e/pages`);
      let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
      try {
        const server = await startWithReady(
          PYTHON,
          ["-m", "nuwa_server.server", "--host", "127.0.0.1", "--port", "0", "--ws-port", "0", "--cc", "nuwa", "--content-root", content, "--state-dir", `${REPO_ROOT}.cache/dev-cert`, "--log-dir", `${out}/server`],
          `${out}/server.stderr`,
        );
        procs.push(server);
        expect(server.ready.ws_port).toBeGreaterThan(0);
        const emu = await startWithReady(
          PYTHON,
          ["-m", "nuwa_lab.emulator", "--tcp", "--listen", "127.0.0.1:0", "--server", `127.0.0.1:${server.ready.ws_port}`, "--trace", TRACE, "--delay-ms", String(DELAY_MS), "--uplink-delay-ms", String(DELAY_MS), "--queue-bytes", "150000", "--log", `${out}/emulator.log`, "--summary-json", `${out}/emulator-summary.json`],
          `${out}/emulator.stderr`,
        );
        procs.unshift(emu);
        expect(emu.ready.mode).toBe("tcp");
        browser = await launchChromium();
        const page = await browser.newPage();
        const page_errors: string[] = [];
        const console_lines: string[] = [];
        page.on("pageerror", (e) => page_errors.push(String(e)));
        page.on("console", (m) => console_lines.push(`${m.type()}: ${m.text()}`));
        await page.addInitScript(() => {
          delete (window as { WebTransport?: unknown }).WebTransport;
        });
        const params = new URLSearchParams({
          // The session URL names the MPD's origin; the bytes go to ws_url (plain ws: on loopback).
          url: `https://127.0.0.1:${emu.ready.listen_port}/nuwa`,
          ws_url: `http://127.0.0.1:${emu.ready.listen_port}/nuwa`,
          scheme: "nuwa",
          duration_s: String(DURATION_S),
          mpd: "/manifest.mpd",
        });
        await page.goto(`http://127.0.0.1:${web.port}/play.html?${params}`);
        expect(await page.evaluate(() => typeof (window as { WebTransport?: unknown }).WebTransport)).toBe("undefined");
        await page.waitForFunction(() => window.__nuwa_play?.done === true, undefined, { timeout: (DURATION_S + 40) * 1000, polling: 1000 });
        const log = await page.evaluate(() => window.__nuwa_play);
        writeFileSync(`${out}/page.json`, JSON.stringify(log));
        writeFileSync(`${out}/console.log`, console_lines.join("\n"));
        await browser.close();
        browser = null;
        for (const p of procs) await p.stop();

        expect(log.error).toBeNull();
        expect(page_errors).toEqual([]);
        expect(log.transport).toBe("websocket");
        expect(log.startup_s).not.toBeNull();
        const media_s = log.samples.at(-1)?.media_s ?? 0;
        expect(media_s).toBeGreaterThan(DURATION_S - 5);
        expect(log.frames.send_us.length).toBeGreaterThan(1000);

        // The server: one websocket session, grants received on the stream and obeyed.
        const sessions = readdirSync(`${out}/server`).filter((d) => d.includes("-ws"));
        expect(sessions.length).toBeGreaterThanOrEqual(1);
        const summary = JSON.parse(readFileSync(`${out}/server/${sessions[0]}/summary.json`, "utf8")) as {
          grants_accepted: number;
          grant_violations: number;
          bytes_sent: number;
          fallback_entries: number;
          rtt_us: { min: number | null };
        };
        expect(summary.grants_accepted).toBeGreaterThan(100);
        expect(summary.grant_violations).toBe(0);

        // The link: the emulator's own analysis of its mm-link log.
        const emu_summary = JSON.parse(readFileSync(`${out}/emulator-summary.json`, "utf8")) as {
          packets: { arrived: number; departed: number; dropped: number };
          queuing_delay_ms: { p50: number; p95: number };
          utilization: number;
          delivered_bytes: number;
          lateness_ms: { p99: number };
          tcp: { max_held_bytes: number; backpressure_waits: number };
        };
        expect(emu_summary.packets.dropped).toBe(0);
        // The TCP relay's asyncio clock: deliveries late by a few ms (the UDP relay's self-check
        // asks p99 ≤ 2 ms; this relay reaches about 2.5 ms here, so its summary says invalid,
        // and 9.0 ms on a busy CI host): this test's claims are functional, so the bound is
        // the functional one (valid-run.ts), printed with the figures below.
        expect(emu_summary.lateness_ms.p99).toBeLessThan(FUNCTIONAL_P99_LATENESS_MS);
        expect(emu_summary.delivered_bytes).toBeGreaterThan(summary.bytes_sent * 0.9);
        const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.play_metrics", "--run-dir", out, "--trace", TRACE, "--scheme", "nuwa", "--delay-ms", String(DELAY_MS)], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 });
        const play = JSON.parse(stdout) as Record<string, unknown>;
        const figures = {
          media_played_s: media_s,
          startup_s: log.startup_s,
          stalls: log.stalls.length,
          frames: log.frames.send_us.length,
          grants_accepted: summary.grants_accepted,
          grant_fallback_entries: summary.fallback_entries,
          rtt_min_ms: summary.rtt_us.min === null ? null : summary.rtt_us.min / 1000,
          bytes_sent: summary.bytes_sent,
          link: { ...emu_summary.packets, queuing_delay_ms: emu_summary.queuing_delay_ms, utilization: emu_summary.utilization, lateness_p99_ms: emu_summary.lateness_ms.p99, tcp: emu_summary.tcp },
          play_metrics: { bitrate_kbps_mean: play.bitrate_kbps_mean, rebuffer_s: play.rebuffer_s, utilization: play.utilization, queuing_delay_ms: play.queuing_delay_ms },
        };
        writeFileSync(`${out}/figures.json`, JSON.stringify(figures, null, 1));
        console.log(`websocket e2e: ${JSON.stringify(figures)}`);
      } finally {
        if (browser) await browser.close().catch(() => {});
        for (const p of procs) await p.stop();
        web.server.close();
      }
    },
    90_000,
  );
});
