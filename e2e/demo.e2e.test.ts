/**
 * The demo page end to end: `demo/src/cli.ts` starts server, emulator and Vite; headless
 * Chromium opens the page, which plays DASH over Nuwa through the real emulator.
 * Checks that video time advances, that every plotted series gains data, that a Td
 * change through the controls reaches the controller, that a bad trace is refused, and
 * that a trace change restarts the link. With NUWA_LONG=1 also the player and content choice
 * (issue 19 item 6): shaka-player on an ffmpeg SegmentBase layout given as `--content`, hls.js
 * refused for it with the reason, then hls.js on the ladder after the content switch.
 * Screenshots: out/demo-e2e/demo.png (out/demo-e2e-choice/ for the NUWA_LONG test)
 * (NUWA_REFRESH_DEMO_SCREENSHOT=1 also writes demo/screenshot.png, quantized to 256 colours).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./src/browser.js";
import { ensureLayouts } from "./src/play.js";
import { PYTHON, REPO_ROOT, type Started, startWithReady } from "./src/procs.js";

const OUT = `${REPO_ROOT}out/demo-e2e`;
type DemoState = { player: string | null; content: string; manifest: string; tuner: string; tuner_k: number[]; ready: boolean; error: string | null; errors: string[]; epoch: number; ticks: number; media_s: number; clock_rtt_ms: number; filled: Record<string, number>; last: Record<string, number>; bins: number; params: { target_delay_ms: number } | null };
const SERIES = ["qd_page_ms", "qd_emu_ms", "td_ms", "window_kb", "grant_kb", "capacity_mbps", "delivered_mbps", "nuwa_mbps", "dashjs_mbps", "buffer_s", "bitrate_mbps", "k_mss", "rho_ms"];

describe("demo page", () => {
  let demo: Started;
  let url = "";
  beforeAll(async () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    demo = await startWithReady(process.execPath, ["--import", "tsx", "demo/src/cli.ts", "--port", "0", "--out", `${OUT}/run`], `${OUT}/demo.stderr`, 180_000);
    url = String(demo.ready.url);
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it("plays and plots moving data; controls reach the controller; trace change restarts the link", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setViewportSize({ width: 1660, height: 650 });
      const page_errors: string[] = [];
      page.on("pageerror", (e) => page_errors.push(String(e)));
      await page.goto(url);
      await page.waitForFunction(() => window.__nuwa_demo?.ready === true || window.__nuwa_demo?.error !== null, undefined, { timeout: 60_000 });
      const read = () => page.evaluate(() => JSON.parse(JSON.stringify(window.__nuwa_demo)) as DemoState);
      await page.waitForFunction(() => window.__nuwa_demo.media_s > 0.5, undefined, { timeout: 30_000 });
      const a = await read();
      await page.waitForTimeout(8_000);
      // Td through the controls.
      const td0 = a.params!.target_delay_ms;
      const td1 = td0 === 40 ? 60 : 40;
      await page.fill("#td", String(td1));
      await page.click("#apply");
      await page.waitForTimeout(7_000);
      const b = await read();
      await page.screenshot({ path: `${OUT}/demo.png` });
      if (process.env.NUWA_REFRESH_DEMO_SCREENSHOT === "1") {
        // 256 colours without dithering (Pillow, a matplotlib dependency): about 60 KB instead of about 280 KB.
        const quantize = "import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('RGB').quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(sys.argv[2], optimize=True)";
        execFileSync(PYTHON, ["-c", quantize, `${OUT}/demo.png`, `${REPO_ROOT}demo/screenshot.png`]);
      }

      expect(b.errors, b.errors.join("\n")).toEqual([]);
      expect(page_errors).toEqual([]);
      expect(b.media_s - a.media_s).toBeGreaterThan(8); // 15 s of wall time, rebuffering allowed for a few
      for (const s of SERIES) expect(b.filled[s] ?? 0, s).toBeGreaterThan(a.filled[s] ?? 0);
      expect(b.filled.capacity_mbps).toBeGreaterThan(50); // 200 ms bins over ≥ 15 s
      expect(b.params?.target_delay_ms).toBe(td1);
      expect(b.last.td_ms).toBe(td1); // the plotted Td follows the controller's config
      expect(a.last.td_ms).toBe(td0);
      expect(await page.locator(".plot canvas").count()).toBe(5);
      expect(b.clock_rtt_ms).toBeLessThan(50);

      // Alignment: the page's per-bin Qd (its clock mapped onto the emulator's) against the
      // emulator log's per-bin queuing delay. A shift of one 200 ms bin would pull spikes apart.
      const series = await page.evaluate(() => window.__nuwa_demo_series!());
      const diffs = (shift: number) => {
        const d: number[] = [];
        series.y.qd_page_ms.forEach((p, j) => {
          const e = series.y.qd_emu_ms[j + shift];
          if (p !== null && e !== null && e !== undefined) d.push(Math.abs(p - e));
        });
        return d.sort((x, y) => x - y);
      };
      const med = (d: number[]) => d[Math.floor(d.length / 2)]!;
      const aligned = diffs(0);
      const shifted = diffs(1);
      console.log(`demo: page Qd vs emulator queue per 200 ms bin: median |diff| ${med(aligned).toFixed(1)} ms over ${aligned.length} bins (${med(shifted).toFixed(1)} ms if shifted by one bin); clock sync round trip ${b.clock_rtt_ms.toFixed(1)} ms`);
      expect(aligned.length).toBeGreaterThan(30);
      expect(med(aligned)).toBeLessThan(10);
      expect(med(aligned)).toBeLessThan(med(shifted));

      // An out-of-range Td is refused with the controller's reason and changes nothing.
      await page.fill("#td", "-5");
      await page.click("#apply");
      const d = await read();
      expect(d.errors).toHaveLength(1);
      expect(d.errors[0]).toMatch(/parameters refused: .*target_delay_ms/);
      expect(d.params?.target_delay_ms).toBe(td1);

      // A trace that is not bundled is refused with a reason.
      const bad = await page.evaluate(async () => {
        const r = await fetch("/api/trace", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "../etc/passwd" }) });
        return { status: r.status, body: (await r.json()) as { error: string } };
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/unknown trace/);

      // Changing the trace restarts server + emulator and reloads the page on the new link.
      await page.selectOption("#trace", "traces/4G/mahimahi-tmobile-lte-short.mahi");
      await page.waitForFunction(() => window.__nuwa_demo?.epoch === 2 && window.__nuwa_demo.media_s > 0.5, undefined, { timeout: 60_000 });
      const c = await read();
      expect(c.errors).toEqual([]);
      expect(page_errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("?tuner=rl: the Nuwa-RL agent (onnxruntime-web) sets k and the k plot follows it", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const page_errors: string[] = [];
      page.on("pageerror", (e) => page_errors.push(String(e)));
      await page.goto(`${url}?tuner=rl`);
      await page.waitForFunction(() => window.__nuwa_demo?.ready === true || window.__nuwa_demo?.error !== null, undefined, { timeout: 60_000 });
      await page.waitForFunction(() => window.__nuwa_demo.tuner_k.length >= 10 || window.__nuwa_demo.error !== null, undefined, { timeout: 30_000 });
      await page.waitForTimeout(2_000);
      const s = await page.evaluate(() => JSON.parse(JSON.stringify(window.__nuwa_demo)) as DemoState);
      const series = await page.evaluate(() => window.__nuwa_demo_series!());
      console.log(`demo RL: ${s.tuner_k.length} decisions, k ${s.tuner_k.slice(0, 12).join(" ")}…`);
      expect(s.errors).toEqual([]);
      expect(page_errors).toEqual([]);
      expect(s.tuner).toBe("rl");
      expect(await page.locator("#tuner").inputValue()).toBe("rl");
      expect(await page.locator("#k").isDisabled()).toBe(true);
      for (const k of s.tuner_k) expect(k >= 1 && k <= 9, `k ${k} outside the paper's [1, 9]`).toBe(true); // Eq. 11
      // The plotted k is the controller's, which the agent set: its last value is the agent's last k.
      const plotted = series.y.k_mss.filter((v): v is number => v !== null);
      expect(plotted.length).toBeGreaterThan(5);
      expect(s.tuner_k).toContain(plotted[plotted.length - 1]);
    } finally {
      await browser.close();
    }
  });
});

describe.skipIf(process.env.NUWA_LONG !== "1")("demo page: player and content choice (NUWA_LONG)", () => {
  const OUT_CHOICE = `${REPO_ROOT}out/demo-e2e-choice`;
  let demo: Started;
  let url = "";
  beforeAll(async () => {
    rmSync(OUT_CHOICE, { recursive: true, force: true });
    mkdirSync(OUT_CHOICE, { recursive: true });
    const layouts = await ensureLayouts();
    demo = await startWithReady(process.execPath, ["--import", "tsx", "demo/src/cli.ts", "--port", "0", "--out", `${OUT_CHOICE}/run`, "--content", String(layouts.segmentbase)], `${OUT_CHOICE}/demo.stderr`, 180_000);
    url = String(demo.ready.url);
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it("shaka plays --content DIR (SegmentBase + sidx); hls.js is refused for it with the reason; after the content switch hls.js plays the ladder", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setViewportSize({ width: 1660, height: 650 });
      const page_errors: string[] = [];
      page.on("pageerror", (e) => page_errors.push(String(e)));
      const read = () => page.evaluate(() => JSON.parse(JSON.stringify(window.__nuwa_demo)) as DemoState);
      const playing = () => page.waitForFunction(() => window.__nuwa_demo?.error !== null || (window.__nuwa_demo?.ready === true && window.__nuwa_demo.media_s > 1 && (window.__nuwa_demo.filled.dashjs_mbps ?? 0) > 0), undefined, { timeout: 60_000 });

      await page.goto(`${url}?player=shaka`);
      await playing();
      const a = await read();
      expect(a.errors).toEqual([]);
      expect([a.player, a.content, a.manifest]).toEqual(["shaka", "own", "/manifest.mpd"]);
      expect(a.filled.nuwa_mbps ?? 0).toBeGreaterThan(0);
      expect(a.filled.qd_page_ms ?? 0).toBeGreaterThan(0);
      expect(await page.locator('#player option[value="hlsjs"]').isDisabled()).toBe(true); // no HLS in this DIR
      await page.screenshot({ path: `${OUT_CHOICE}/shaka-own.png` });

      await page.goto(`${url}?player=hlsjs`);
      await page.waitForFunction(() => window.__nuwa_demo?.error !== null, undefined, { timeout: 30_000 });
      const b = await read();
      expect(b.player).toBeNull();
      expect(b.error).toMatch(/hls\.js plays HLS playlists .*\(no master\.m3u8\)/);

      await page.selectOption("#content", "ladder"); // restarts server + emulator on the ladder, reloads (?player=hlsjs kept)
      await page.waitForFunction(() => window.__nuwa_demo?.epoch === 2, undefined, { timeout: 60_000 });
      await playing();
      const c = await read();
      expect(c.errors).toEqual([]);
      expect([c.player, c.content, c.manifest]).toEqual(["hlsjs", "ladder", "/master.m3u8"]);
      expect(c.filled.bitrate_mbps ?? 0).toBeGreaterThan(0);
      await page.screenshot({ path: `${OUT_CHOICE}/hlsjs-ladder.png` });
      expect(page_errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
