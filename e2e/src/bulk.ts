/**
 * One end-to-end bulk download: aioquic server → trace-driven emulator →
 * headless Chromium running @nuwa/player, then metrics from the logs
 * (lab/nuwa_lab/bulk_metrics.py). Real parts at every step.
 */
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { launchChromium } from "./browser.js";
import { buildPages } from "./build-pages.js";
import { type Link, PYTHON, REPO_ROOT, startLink } from "./procs.js";
import { serveStatic } from "./static.js";

const execFileP = promisify(execFile);

/**
 * `oracle`: the causal capacity oracle sets the window (issue 5); the page runs the controller and reports bytes received, its window is ignored.
 * `nuwa_adaptive`: `nuwa` with the opt-in adaptive target delay (`adaptive_target_delay: true` over `cc`; docs/DESIGN.md §3).
 * `nuwa_backlog`: `nuwa` as it was before the service-delay signal became the default (`qd_source: "backlog"` over `cc`).
 * `nuwa_raw`: `nuwa` as it was before the backlog signal became the default (`qd_source: "raw"` over `cc`).
 * `nuwa_fixed_td`: `nuwa` as it was before the Td cap in packets became the default (`target_delay_max_packets: 0` over `cc`: Td fixed at 25 ms).
 * `bbr`: the server's BBR (draft-ietf-ccwg-bbr, server/nuwa_server/cc/bbr.py), grants ignored, like `cubic`.
 * `nuwa_bbr`: `nuwa` with BBR instead of Cubic as the ceiling under the grants (server `--ceiling bbr`).
 * `pbq`: the server's PBQ (BBR's pacing, the PPO agent's window every 100 ms; server/nuwa_server/cc/pbq.py, docs/PBQ.md), grants ignored.
 */
export type BulkScheme = "nuwa" | "nuwa_adaptive" | "nuwa_backlog" | "nuwa_raw" | "nuwa_fixed_td" | "nuwa_bbr" | "cubic" | "reno" | "bbr" | "pbq" | "oracle";

/** What each Nuwa variant sets over `cc` (the rest run `cc` as given). */
const SCHEME_CC: Partial<Record<BulkScheme, Record<string, unknown>>> = {
  nuwa_adaptive: { adaptive_target_delay: true },
  nuwa_backlog: { qd_source: "backlog" },
  nuwa_raw: { qd_source: "raw" },
  nuwa_fixed_td: { target_delay_max_packets: 0 },
};

/** The Nuwa variants: the server runs `--cc nuwa` and the page's grants bind. */
const NUWA_VARIANTS: ReadonlySet<BulkScheme> = new Set<BulkScheme>([...(Object.keys(SCHEME_CC) as BulkScheme[]), "nuwa_bbr"]);

/** The server's `--cc` mode of a bulk scheme. */
function serverCc(scheme: BulkScheme): "nuwa" | "cubic" | "reno" | "bbr" | "pbq" | "oracle" {
  return NUWA_VARIANTS.has(scheme) ? "nuwa" : (scheme as Exclude<BulkScheme, "nuwa_adaptive" | "nuwa_backlog" | "nuwa_raw" | "nuwa_fixed_td" | "nuwa_bbr">);
}

/** Whether the page's controller grants the window (the server obeys it) in a bulk scheme. */
function grantsControl(scheme: BulkScheme): boolean {
  return scheme === "nuwa" || scheme === "oracle" || NUWA_VARIANTS.has(scheme);
}

export interface BulkOptions {
  trace: string;
  scheme: BulkScheme;
  duration_s: number;
  out_dir: string;
  /** One-way propagation delay each way, ms. */
  delay_ms?: number;
  /** Drop-tail queue, packets. */
  queue_packets?: number;
  /** Controller settings for the page. */
  cc?: Record<string, unknown>;
  /** The page session's grant cadence over DEFAULT_GRANT_POLICY (GrantPolicyConfig fields; checked by GrantPolicy). */
  grants?: Record<string, unknown>;
  warmup_s?: number;
  /** Scheme oracle: the emulator's capacity window, ms (default: base RTT). */
  oracle_window_ms?: number;
  /** Scheme oracle: the standing queue the server's window keeps, ms (default: the server's). */
  oracle_headroom_ms?: number;
  /** The page session's stall watchdog, ms (default: the player's, 4 s; an outage test needs more). */
  stall_timeout_ms?: number;
  /** "rl": the page runs the Nuwa-RL tuner (models/nuwa-rl.onnx, onnxruntime-web) on its controller; pass cc RL_CC. */
  tuner?: "rl";
  /** Build the test pages first (default true; false when the caller built them: cells.ts). */
  build_pages?: boolean;
}

export interface BulkResult {
  scheme: BulkScheme;
  trace: string;
  duration_s: number;
  utilization: number;
  queuing_delay_ms: { mean: number; p50: number; p95: number; p99: number; max: number };
  loss_rate: number;
  qd_error_ms: { median: number | null; p95: number | null; frames: number; kalman: { median: number | null; p95: number | null } };
  grant_violations: number;
  /** The emulator's summary (lab/nuwa_lab/bulk_metrics.py): `invalid_reasons` says why `valid` is false. */
  emulator: { valid: boolean; invalid_reasons?: string[]; lateness_ms: { p50: number; p99: number; max?: number } };
  /** Sessions the page opened; reconnects after a lost session; time without frames between them, s (bulk_metrics.py). */
  sessions: number;
  reconnects: number;
  disconnected_s: number;
  page: { frames: number; bytes: number; grants: number; error: string | null; phase_changes: [number, string][]; sessions: number };
  [k: string]: unknown;
}

/**
 * Run one bulk download and return its metrics; logs stay in `out_dir`.
 * @throws Error if a process fails to start or the page reports an error
 */
export async function runBulk(o: BulkOptions): Promise<BulkResult> {
  const delay_ms = o.delay_ms ?? 25;
  const grants = o.grants && Object.keys(o.grants).length > 0 ? o.grants : null; // the page's default cadence otherwise
  const out = resolve(o.out_dir);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(`${out}/server`, { recursive: true });
  const trace = resolve(o.trace);
  if (o.build_pages !== false) await buildPages();
  let link: Link | null = null;
  const stopAll = async () => {
    await link?.stop();
  };
  let browser: Awaited<ReturnType<typeof launchChromium>> | null = null;
  const web = await serveStatic(`${REPO_ROOT}e2e/pages`, { "/models/": `${REPO_ROOT}models`, "/ort/": `${REPO_ROOT}packages/player/node_modules/onnxruntime-web/dist` });
  try {
    link = await startLink({ cc: serverCc(o.scheme), ceiling: o.scheme === "nuwa_bbr" ? "bbr" : undefined, content_root: `${REPO_ROOT}e2e/pages`, trace, delay_ms, queue_packets: o.queue_packets ?? 1000, out, oracle_window_ms: o.oracle_window_ms, oracle_headroom_ms: o.oracle_headroom_ms });
    const server = link.server;
    const emu = link.emulator;
    browser = await launchChromium();
    const page = await browser.newPage();
    const params = new URLSearchParams({
      url: `https://127.0.0.1:${emu.ready.listen_port}/nuwa`,
      hash: String(server.ready.cert_sha256_hex),
      mode: grantsControl(o.scheme) ? "control" : "observe",
      duration_s: String(o.duration_s),
      cc: JSON.stringify({ ...o.cc, ...SCHEME_CC[o.scheme] }),
      ...(grants ? { grants: JSON.stringify(grants) } : {}),
      ...(o.stall_timeout_ms === undefined ? {} : { stall_timeout_ms: String(o.stall_timeout_ms) }),
      ...(o.tuner ? { tuner: o.tuner } : {}),
    });
    const console_lines: string[] = [];
    page.on("console", (m) => console_lines.push(`${m.type()}: ${m.text()}`));
    await page.goto(`http://127.0.0.1:${web.port}/bulk.html?${params}`);
    await page.waitForFunction(() => window.__nuwa?.done === true, undefined, { timeout: (o.duration_s + 60) * 1000, polling: 500 });
    const log = await page.evaluate(() => window.__nuwa);
    writeFileSync(`${out}/page.json`, JSON.stringify(log));
    writeFileSync(`${out}/console.log`, console_lines.join("\n"));
    await browser.close();
    browser = null;
    await stopAll();
    if (log.error) throw new Error(`page error: ${log.error} (logs in ${out})`);
    const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.bulk_metrics", "--run-dir", out, "--trace", trace, "--delay-ms", String(delay_ms), "--warmup-s", String(o.warmup_s ?? 2)], {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const metrics = JSON.parse(stdout) as Record<string, unknown>;
    const result = {
      scheme: o.scheme,
      trace: o.trace,
      duration_s: o.duration_s,
      ...(grants ? { grants } : {}),
      ...metrics,
      page: { frames: log.frames, bytes: log.bytes, grants: log.grants, error: log.error, phase_changes: log.phase_changes.slice(0, 50), sessions: log.sessions },
    } as BulkResult;
    writeFileSync(`${out}/result.json`, JSON.stringify(result, null, 2));
    return result;
  } finally {
    if (browser) await browser.close().catch(() => {});
    await stopAll();
    web.server.close();
  }
}

/** One human-readable line for a result. */
export function describeBulk(r: BulkResult): string {
  const q = r.queuing_delay_ms;
  const f = (x: number | null | undefined, d = 1) => (x === null || x === undefined ? "n/a" : x.toFixed(d));
  return (
    `${r.scheme.padEnd(5)} ${r.trace.split("/").pop()}: utilization ${f(r.utilization, 3)}, queuing delay mean/p50/p95 ${f(q.mean, 0)}/${f(q.p50, 0)}/${f(q.p95, 0)} ms, ` +
    `loss ${(100 * r.loss_rate).toFixed(2)}%, Qd error median/p95 ${f(r.qd_error_ms.median)}/${f(r.qd_error_ms.p95)} ms, grant violations ${r.grant_violations}, ` +
    `emulator ${r.emulator.valid ? "valid" : "INVALID"} (lateness p50/p99 ${f(r.emulator.lateness_ms?.p50, 2)}/${f(r.emulator.lateness_ms?.p99, 2)} ms)` +
    (r.reconnects || r.disconnected_s ? `, reconnects ${r.reconnects} (${f(r.disconnected_s)} s without a session)` : "")
  );
}
