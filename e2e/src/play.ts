/**
 * One playback run (issue 4): DASH content made by ffmpeg (cached), the aioquic
 * server serving it, the trace-driven emulator, headless Chromium playing it
 * with dash.js through Nuwa; then summary.json and report.png from the logs
 * (lab/nuwa_lab/play_metrics.py).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { launchChromium } from "./browser.js";
import { buildPages } from "./build-pages.js";
import { type CompetitorFigures, competitorFigures, type FlowLog, startCompetitor } from "./competitor.js";
import { type Link, PYTHON, REPO_ROOT, startLink } from "./procs.js";
import { serveStatic } from "./static.js";

const execFileP = promisify(execFile);

/**
 * The video ladder (issue 13), each scheme one factor from its neighbour:
 * `dashjs`: dash.js 5.2.1 as shipped (its default ABR rules and its own estimate, every setting
 *   untouched; only the loader carries its requests over the session) over the server's cubic;
 * `dashjs_grants`: the same dash.js over Nuwa's grants (the controller grants the window);
 * `dashjs_nuwa_estimate`: dash.js's rules fed Nuwa's estimate (ThroughputController), grants;
 * `nuwa`: Nuwa's ABR (MPC, packages/player/src/dash/mpc.ts) on Nuwa's estimate, grants;
 * `nuwa_cubic`: Nuwa's ABR rule on Nuwa's estimate (observing) over the server's cubic, no grants.
 * Outside the ladder, `dashjs_bbr`: `dashjs` over the server's BBR (server/nuwa_server/cc/bbr.py) instead of cubic;
 * `dashjs_pbq`: `dashjs` over the server's PBQ (server/nuwa_server/cc/pbq.py, docs/PBQ.md).
 */
export const PLAY_LADDER = ["dashjs", "dashjs_grants", "dashjs_nuwa_estimate", "nuwa", "nuwa_cubic"] as const;
/** Old names, still accepted: `cubic` = `dashjs`, `observe` = `nuwa_cubic`. */
export const PLAY_ALIASES = { cubic: "dashjs", observe: "nuwa_cubic" } as const;
/**
 * hls.js (e2e/pages/play-hls.ts, `@nuwa/player/hls`), the same HLS-over-DASH segments:
 * `hlsjs`: hls.js 1.7 as shipped (default ABR and its own EWMA, no setting changed; only the
 *   loader carries its requests over the session) over the server's cubic, no grants;
 * `hlsjs_nuwa_estimate`: hls.js's rules fed Nuwa's estimate, grants;
 * `hlsjs_nuwa`: Nuwa's MPC on Nuwa's estimate inside hls.js's AbrController, grants;
 * `hlsjs_nuwa_perread`: the same deciding whenever hls.js reads the level (attachNuwaToHls
 *   `decide: "per_read"`, the behaviour before the fifty-fourth session) instead of once per fragment.
 */
export const HLS_SCHEMES = ["hlsjs", "hlsjs_nuwa_estimate", "hlsjs_nuwa", "hlsjs_nuwa_perread"] as const;
/** Schemes that run a ladder scheme's page over another server controller: scheme → [page scheme, server cc]. */
export const PLAY_OVER_CC = { dashjs_bbr: ["dashjs", "bbr"], dashjs_pbq: ["dashjs", "pbq"] } as const;
export type PlayScheme = (typeof PLAY_LADDER)[number] | (typeof PLAY_EXTRA)[number] | keyof typeof PLAY_ALIASES | keyof typeof PLAY_OVER_CC | (typeof HLS_SCHEMES)[number] | (typeof SHAKA_SCHEMES)[number];
/** The players `./nuwa play --player` drives (dash.js the default). */
export const PLAYERS = ["dashjs", "hlsjs", "shaka"] as const;
export type PlayPlayer = (typeof PLAYERS)[number];
/**
 * Outside the ladder, for comparison, with grants: `nuwa_rule`, the earlier Nuwa rule (estimate ×
 * safety factor); `nuwa_deepcap`, Nuwa's MPC with the error discount capped at 0.25 from 8 s of buffer
 * (attachNuwa `mpc: { deep_from_s: 8 }`; in the twenty-eighth session's invocation it ran as `nuwa`,
 * and the shipped default as `nuwa_robustmpc`); `nuwa_nohyst`, Nuwa's MPC without the switch hysteresis (mpc.ts
 * mpcHysteresis off: `mpc: { down_switch_margin: 0, up_hold_segments: 1 }`; the default before the thirtieth session,
 * whose invocation ran the hysteresis as `nuwa_hyst` and this as `nuwa`; docs/BENCHMARKS.md); `nuwa_ahead`, Nuwa's
 * MPC with the loader's fetch-ahead while a queue not of our making stands (attachNuwa `fetch_ahead: "standing"`);
 * `nuwa_ahead_queue`, the same with as many segments ahead as the standing wait needs (`fetch_ahead: "queue"`,
 * forty-eighth session);
 * `nuwa_noreserve`, Nuwa's MPC without its terminal buffer reserve (attachNuwa `mpc: { reserve_s: 0 }`: RobustMPC's
 * objective over the horizon only, the default before the forty-fifth session); `nuwa_abandon`, Nuwa's MPC with
 * its abandonment rule on (attachNuwa `abandon: true`, opt-in since the eighteenth session; measured next to a
 * Cubic download in the forty-sixth); `nuwa_probe`, Nuwa's MPC with its first segment sized to measure the top rung
 * (attachNuwa `mpc: { first_probe: true }`, opt-in; the forty-ninth session's invocation ran it as `nuwa` and the
 * default as `nuwa_noprobe`); `nuwa_noinit`, Nuwa's MPC without the loader's init-segment prefetch (attachNuwa
 * `prefetch_init: false`: dash.js asks for a rung's init segment when it switches to it; fifty-third session);
 * `nuwa_noretake`, Nuwa's MPC without the loader's retry takeover (attachNuwa `retry_takeover: false`: a retry of a
 * timed-out segment asks the server afresh from its first byte; fifty-fourth session);
 * `dashjs_nuwa_instant`, `dashjs_nuwa_estimate` without dash.js's own EWMA over the figure (attachNuwa
 * `estimate_smoothing: "none"`: the figure at the instant the rules ask; the default before the thirty-second
 * session, whose invocation ran it as `dashjs_nuwa_estimate` and the average as `dashjs_nuwa_ewma`);
 * `dashjs_nuwa_transfer`, `dashjs_nuwa_estimate` with the share of the capacity measured over each segment's
 * transfer, first byte to last (`estimate_share: "transfer"`); `dashjs_nuwa_sustained`, `dashjs_nuwa_estimate`
 * with each segment's sample the lower of the figure at its request and at its completion
 * (`estimate_sample: "min_over_download"`).
 */
export const PLAY_EXTRA = ["nuwa_rule", "nuwa_deepcap", "nuwa_nohyst", "nuwa_ahead", "nuwa_ahead_queue", "nuwa_noreserve", "nuwa_probe", "nuwa_abandon", "nuwa_noinit", "nuwa_noretake", "dashjs_nuwa_instant", "dashjs_nuwa_transfer", "dashjs_nuwa_sustained"] as const;
export const PLAY_SCHEMES: readonly PlayScheme[] = [...PLAY_LADDER, ...PLAY_EXTRA, "cubic", "observe", "dashjs_bbr", "dashjs_pbq"];
/**
 * shaka-player's schemes (e2e/pages/play-shaka.ts): `shaka` (shaka 5 as shipped, its own ABR and
 * estimate, only the networking replaced by the Nuwa scheme plugin, over the server's cubic),
 * `shaka_grants` (the same over Nuwa's grants), `shaka_nuwa` (shaka's ABR on Nuwa's estimate, grants),
 * `shaka_nuwa_prefetch` (shaka_nuwa with `streaming.segmentPrefetchLimit: 2`: more of our bytes in flight next
 * to a buffer-filling download; docs/BENCHMARKS.md, twenty-ninth session).
 */
export const SHAKA_SCHEMES = ["shaka", "shaka_grants", "shaka_nuwa", "shaka_nuwa_prefetch"] as const;
/** Schemes whose server obeys Nuwa's grants (the others run the server's cubic). */
export const GRANT_SCHEMES: readonly PlayScheme[] = ["dashjs_grants", "dashjs_nuwa_estimate", "dashjs_nuwa_instant", "dashjs_nuwa_transfer", "dashjs_nuwa_sustained", "nuwa", "nuwa_rule", "nuwa_deepcap", "nuwa_nohyst", "nuwa_ahead", "nuwa_ahead_queue", "nuwa_noreserve", "nuwa_probe", "nuwa_abandon", "nuwa_noinit", "nuwa_noretake", "hlsjs_nuwa_estimate", "hlsjs_nuwa", "hlsjs_nuwa_perread", "shaka_grants", "shaka_nuwa", "shaka_nuwa_prefetch"];
/** Each player's schemes and its default one. */
export const PLAYER_SCHEMES: Record<PlayPlayer, { schemes: readonly PlayScheme[]; default: PlayScheme }> = {
  dashjs: { schemes: PLAY_SCHEMES, default: "nuwa" },
  hlsjs: { schemes: HLS_SCHEMES, default: "hlsjs_nuwa" },
  shaka: { schemes: SHAKA_SCHEMES, default: "shaka_nuwa" },
};
/** Per player: the page, the manifest path and the console prefix of the player's own errors. */
const PLAYER_PAGES: Record<PlayPlayer, { page: string; manifest: string; error_prefix: string }> = {
  dashjs: { page: "play.html", manifest: "/manifest.mpd", error_prefix: "dash.js error" },
  hlsjs: { page: "play-hls.html", manifest: "/master.m3u8", error_prefix: "hls.js fatal error" },
  shaka: { page: "play-shaka.html", manifest: "/manifest.mpd", error_prefix: "shaka error" },
};

export interface PlayOptions {
  trace: string;
  scheme: PlayScheme;
  /** dash.js (default), hls.js or shaka-player; the scheme must be one of the player's (PLAYER_SCHEMES). */
  player?: PlayPlayer;
  duration_s: number;
  out_dir: string;
  delay_ms?: number;
  queue_packets?: number;
  content_duration_s?: number;
  cc?: Record<string, unknown>;
  /** Build the test pages first (default true; false when the caller built them: cells.ts). */
  build_pages?: boolean;
  /**
   * A directory of DASH VOD content from any packager (`./nuwa play --content DIR`) instead of
   * our generated ladder: served as the content root, its MPD found by `findMpd`. dash.js and
   * shaka only (hls.js needs HLS playlists). The summary then has no offline optimum (it needs
   * the ladder's own segment files).
   */
  content?: string;
  /** Extra query parameters for the page (e.g. `cmcd: "query"`: dash.js sends CMCD keys). */
  page_params?: Record<string, string>;
  /**
   * A bulk download of this scheme through the same bottleneck (issue 18: a Nuwa video next to
   * a Cubic download; e2e/src/competitor.ts), starting `competitor_start_s` after the page is
   * loaded and running to the end of the playback. The summary then has `competitor`.
   */
  competitor?: "cubic" | "reno" | "bbr";
  /** When the competitor starts, s after the page is loaded (default 5). */
  competitor_start_s?: number;
  /** The Nuwa server's controller switching (issue 18), default none. */
  switch?: "none" | "rule";
  /** The switch rule's thresholds changed from their defaults (the server's `--switch-rule` JSON). */
  switch_rule?: string;
}

/**
 * The MPD of a content directory: `manifest.mpd` if present, else the one `*.mpd` at its top.
 * @returns its file name (relative to `dir`)
 * @throws Error when `dir` is not a directory or holds no MPD or several (the message lists them)
 */
export function findMpd(dir: string): string {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`--content ${dir}: not a directory`);
  if (existsSync(`${dir}/manifest.mpd`)) return "manifest.mpd";
  const mpds = readdirSync(dir).filter((f) => f.toLowerCase().endsWith(".mpd"));
  if (mpds.length !== 1) throw new Error(`--content ${dir}: ${mpds.length === 0 ? "no .mpd file at its top" : `several MPDs (${mpds.join(", ")}); name one manifest.mpd`}`);
  return mpds[0]!;
}

/** Make (or reuse) the test layouts of issue 19 (lab/nuwa_lab/dashgen/layouts.py); returns layout → directory. */
export async function ensureLayouts(): Promise<Record<string, string>> {
  const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.dashgen.layouts", "--out", `${REPO_ROOT}.cache/layouts`], { cwd: REPO_ROOT });
  return JSON.parse(stdout) as Record<string, string>;
}

/** Make (or reuse) the DASH content, with `hls` also its HLS playlists (dashgen/hls.py); returns its directory. */
export async function ensureContent(duration_s: number, hls = false): Promise<string> {
  const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.dashgen", "--out", `${REPO_ROOT}.cache/content`, "--duration", String(duration_s), "--json", ...(hls ? ["--hls"] : [])], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout) as { dir: string; mpd_path: string };
  return info.dir;
}

export async function runPlay(o: PlayOptions): Promise<Record<string, unknown>> {
  const delay_ms = o.delay_ms ?? 25;
  const out = resolve(o.out_dir);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(`${out}/server`, { recursive: true });
  const trace = resolve(o.trace);
  const player = o.player ?? "dashjs";
  const { schemes } = PLAYER_SCHEMES[player] ?? { schemes: [] };
  if (!schemes.includes(o.scheme)) throw new Error(`runPlay: unknown scheme ${o.scheme} for player ${player} (${schemes.join(", ")})`);
  if (o.content && player === "hlsjs") throw new Error("runPlay: --content is DASH content; --player hlsjs plays HLS playlists (use dashjs or shaka)");
  const own_content = !o.content;
  const content_dir = o.content ? resolve(o.content) : await ensureContent(o.content_duration_s ?? 120, player === "hlsjs");
  const manifest = o.content ? `/${encodeURI(findMpd(content_dir))}` : PLAYER_PAGES[player].manifest;
  if (o.build_pages !== false) await buildPages();
  const over = o.scheme in PLAY_OVER_CC ? PLAY_OVER_CC[o.scheme as keyof typeof PLAY_OVER_CC] : null;
  const page_scheme = over ? over[0] : o.scheme in PLAY_ALIASES ? PLAY_ALIASES[o.scheme as keyof typeof PLAY_ALIASES] : o.scheme;
  const server_cc = over ? over[1] : GRANT_SCHEMES.includes(page_scheme) ? "nuwa" : "cubic";
  let link: Link | null = null;
  const stopAll = async () => {
    await link?.stop();
  };
  let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
  let worker: ReturnType<typeof startCompetitor> | null = null;
  const web = await serveStatic(`${REPO_ROOT}e2e/pages`);
  try {
    link = await startLink({ cc: server_cc, content_root: content_dir, trace, delay_ms, queue_packets: o.queue_packets ?? 1000, out, switch: o.switch, switch_rule: o.switch_rule, competitor_cc: o.competitor });
    const server = link.server;
    const emu = link.emulator;
    browser = await launchChromium();
    const page = await browser.newPage();
    const console_lines: string[] = [];
    const page_errors: string[] = [];
    page.on("console", (m) => console_lines.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => page_errors.push(String(e)));
    const params = new URLSearchParams({
      url: `https://127.0.0.1:${emu.ready.listen_port}/nuwa`,
      hash: String(server.ready.cert_sha256_hex),
      scheme: page_scheme,
      duration_s: String(o.duration_s),
      mpd: manifest,
      cc: JSON.stringify(o.cc ?? {}),
      ...o.page_params,
    });
    // dash.js's log level stays its default unless asked for (no dash.js setting changes by default).
    if (process.env.NUWA_DASHJS_LOG_LEVEL) params.set("log_level", process.env.NUWA_DASHJS_LOG_LEVEL);
    await page.goto(`http://127.0.0.1:${web.port}/${PLAYER_PAGES[player].page}?${params}`);
    const competitor_start_s = o.competitor_start_s ?? 5;
    if (o.competitor) {
      const ports = emu.ready.listen_ports as number[];
      worker = startCompetitor(o.competitor, ports[1]!, competitor_start_s, o.duration_s + 10 - competitor_start_s, `${out}/competitor.json`, `${out}/competitor.stderr`);
    }
    await page.waitForFunction(() => window.__nuwa_play?.done === true, undefined, { timeout: (o.duration_s + 120) * 1000, polling: 1000 });
    const log = await page.evaluate(() => window.__nuwa_play);
    writeFileSync(`${out}/page.json`, JSON.stringify(log));
    writeFileSync(`${out}/console.log`, console_lines.join("\n"));
    await page.screenshot({ path: `${out}/page.png` });
    await browser.close();
    browser = null;
    if (worker) {
      // the worker writes its JSON when its span ends, a few seconds after the playback
      const w = worker;
      await new Promise<void>((r) => (w.exitCode !== null ? r() : w.once("exit", () => r())));
      worker = null;
    }
    await stopAll();
    if (log.error) throw new Error(`page error: ${log.error} (logs in ${out})`);
    const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.play_metrics", "--run-dir", out, "--trace", trace, "--scheme", o.scheme, "--delay-ms", String(delay_ms), ...(own_content ? ["--content-dir", content_dir] : [])], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 });
    const summary = JSON.parse(stdout) as Record<string, unknown>;
    const emu_summary = JSON.parse(await (await import("node:fs/promises")).readFile(`${out}/emulator-summary.json`, "utf8")) as { valid: boolean; lateness_ms: unknown; invalid_reasons?: string[] };
    // invalid_reasons tells a run void for lateness from one whose log failed its own checks (valid-run.ts).
    summary.emulator = { valid: emu_summary.valid, lateness_ms: emu_summary.lateness_ms, invalid_reasons: emu_summary.invalid_reasons ?? [] };
    summary.page_errors = page_errors;
    summary.player = player;
    summary.content = o.content ? content_dir : null;
    summary.player_errors = console_lines.filter((l) => l.includes(PLAYER_PAGES[player].error_prefix));
    if (o.competitor) {
      const flow_log = JSON.parse(readFileSync(`${out}/flows.json`, "utf8")) as FlowLog;
      const competitor_json = JSON.parse(readFileSync(`${out}/competitor.json`, "utf8")) as { errors: string[] };
      const switches = readFileSync(`${out}/server.stderr`, "utf8").split("\n").filter((l) => l.includes("controller switch")).length;
      summary.competitor = { scheme: o.competitor, start_s: competitor_start_s, switch: o.switch ?? "none", ...(o.switch_rule ? { switch_rule: o.switch_rule } : {}), switches, errors: competitor_json.errors, ...competitorFigures(flow_log) };
      writeFileSync(`${out}/competitor-summary.json`, JSON.stringify({ ...(summary.competitor as object), emulator_valid: emu_summary.valid, rebuffer_s: summary.rebuffer_s, rebuffer_count: summary.rebuffer_count, bitrate_kbps_mean: summary.bitrate_kbps_mean, qoe_per_chunk: summary.qoe_per_chunk }, null, 1));
    }
    return summary;
  } finally {
    if (worker?.exitCode === null) worker.kill("SIGTERM");
    if (browser) await browser.close().catch(() => {});
    await stopAll();
    web.server.close();
  }
}

/** A summary a person can read. */
export function describePlay(s: Record<string, unknown>, out_dir: string): string {
  const n = (x: unknown, d = 1) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "n/a");
  const q = s.queuing_delay_ms as { p50: number; p95: number };
  const e = s.estimate_error as { nuwa: number; dashjs: number };
  const own = s.player === "hlsjs" ? "hls.js" : s.player === "shaka" ? "shaka" : "dash.js";
  return [
    `Nuwa playback: ${s.scheme} (${own}) on ${String(s.trace).split("/").pop()}`,
    `  played ${n(s.media_played_s)} s of video, startup ${n(s.startup_s, 2)} s`,
    `  mean bitrate ${n(s.bitrate_kbps_mean, 0)} kbit/s, ${s.switches} switches, rebuffering ${n(s.rebuffer_s, 2)} s in ${s.rebuffer_count} stalls${typeof s.frozen_s === "number" && s.frozen_s > 0 ? ` (${n(s.frozen_s, 2)} s of it a frozen picture while audio played on)` : ""}`,
    `  QoE per chunk ${n(s.qoe_per_chunk, 2)} over ${s.chunks} played chunks (Pensieve linear: Mbit/s − 4.3·rebuffer s − |Δ Mbit/s|; bitrate ${s.quality_basis === "rendered" ? "of the frames shown" : "of each position's last download"}); re-downloaded ${n(Number(s.redownloaded_bytes) / 1e6, 2)} MB, ${s.abandoned_requests} abandoned requests (${n(Number(s.abandoned_bytes) / 1e6, 2)} MB)`,
    `  QoE ${n(s.qoe_per_chunk, 2)} = ${typeof s.qoe_fraction === "number" ? `${(100 * s.qoe_fraction).toFixed(0)}%` : "n/a"} of the offline optimum ${n(s.qoe_optimum, 2)} (this run's capacity, real segment sizes and start-up known in advance; lab/nuwa_lab/abr_optimum.py)`,
    `  queuing delay at the bottleneck p50 ${n(q.p50, 0)} ms, p95 ${n(q.p95, 0)} ms; utilization while downloading ${n(s.utilization, 2)}`,
    `  estimate error vs real capacity (median over the same 1 s bins, both sampled at the same instants): Nuwa ${n(100 * e.nuwa, 0)}%, ${own} ${n(100 * e.dashjs, 0)}%`,
    ...(s.competitor ? [describeCompetitor(s.competitor as CompetitorFigures & { scheme: string; start_s: number; switch: string; switches: number })] : []),
    `  files: ${out_dir}/summary.json, ${out_dir}/report.png${s.competitor ? `, ${out_dir}/competitor-summary.json` : ""}`,
  ].join("\n");
}

function describeCompetitor(c: CompetitorFigures & { scheme: string; start_s: number; switch: string; switches: number }): string {
  return `  next to a ${c.scheme} download (from ${c.start_s} s; switch ${c.switch}, ${c.switches} switches): video ${(c.video_bps / 1e6).toFixed(2)} Mbit/s, ${c.scheme} ${(c.competitor_bps / 1e6).toFixed(2)} Mbit/s, video share ${c.video_share.toFixed(2)}, Jain ${c.jain_index.toFixed(3)}, video's queuing p95 ${c.video_queuing_delay_ms.p95.toFixed(0)} ms (the figures above count both flows' packets)`;
}
