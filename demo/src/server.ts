/**
 * The demo's Node side: the content (the cached ffmpeg ladder with its HLS playlists, and
 * `--content DIR` when given), the aioquic server and the trace-driven emulator (e2e
 * `startLink`), and a Vite dev server for the page with a small JSON API under `/api/`
 * (`startDemoCore`: everything but Vite, which unit tests drive over plain HTTP):
 *
 * - `GET /api/config`: session URL, certificate hash, the content served (`content`: id, label,
 *   MPD and HLS paths; `mpd`) and every content (`contents`), the page's default `player`,
 *   trace, link epoch.
 * - `GET /api/traces`: the bundled traces (path, family, mean Mbit/s).
 * - `POST /api/trace` `{"path": "traces/4G/x.mahi"}`: restart server + emulator on that trace; answers the new config.
 * - `POST /api/content` `{"id": "ladder" | "own"}`: restart server + emulator serving that content
 *   (same trace); answers the new config.
 * - `GET /api/link?from_ms=F`: link clock now (ms after the emulator's T0), the
 *   trace's capacity per 200 ms bin from bin floor(F/200) up to now, and the
 *   emulator log's per-bin queuing delay / delivered rate / drops for the bins the
 *   log has completed. Alignment: both processes read CLOCK_MONOTONIC (Python
 *   `time.monotonic()`, Node `process.hrtime`), so link ms = hrtime ms − T0 with T0
 *   the emulator's `base_timestamp_ms`; the page maps its own clock onto link ms
 *   from this answer's `link_now_ms` and the request's round trip.
 */
import { mkdir, open, readdir, readFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join, relative, resolve } from "node:path";
import { createServer, type Plugin, type ViteDevServer } from "vite";
import { ensureContent } from "../../e2e/src/play.js";
import { type Link, type LinkSetup, REPO_ROOT, startLink } from "../../e2e/src/procs.js";
import type { DemoContentInfo, DemoPlayerKind } from "./choice.js";
import { contentInfo, type DemoContent, demoContents } from "./content.js";
import { capacityBins, LogTail, type MahimahiTrace, meanRateBps, parseTrace } from "./link-truth.js";

const ORT_DIST = join(REPO_ROOT, "packages/player/node_modules/onnxruntime-web/dist");
/** Files served as they are: the shipped Nuwa-RL model and onnxruntime-web's wasm entry (the page's `?tuner=rl`). */
const STATIC_ASSETS: Record<string, { path: string; type: string }> = {
  "/models/nuwa-rl.onnx": { path: join(REPO_ROOT, "models/nuwa-rl.onnx"), type: "application/octet-stream" },
  "/models/nuwa-rl.json": { path: join(REPO_ROOT, "models/nuwa-rl.json"), type: "application/json" },
  "/ort/ort-wasm-simd-threaded.wasm": { path: join(ORT_DIST, "ort-wasm-simd-threaded.wasm"), type: "application/wasm" },
  "/ort/ort-wasm-simd-threaded.mjs": { path: join(ORT_DIST, "ort-wasm-simd-threaded.mjs"), type: "text/javascript" },
};

/** Plot bin, ms. */
export const BIN_MS = 200;
const TRACES_DIR = join(REPO_ROOT, "traces");

export interface DemoOptions {
  /** Trace to start with, a path under `traces/` (absolute or relative to the repo root). */
  trace?: string;
  /** HTTP port for the page (0: any free port). */
  port?: number;
  delay_ms?: number;
  queue_packets?: number;
  /** Run directory for server and emulator logs (one sub-directory per link start). */
  out_dir?: string;
  content_duration_s?: number;
  /** `--content DIR`: the viewer's DASH VOD, offered beside the ladder and served first. */
  content?: string;
  /** The page's default player (its `?player=` overrides it); default dash.js. */
  player?: DemoPlayerKind;
  /** The ladder's directory when already made (tests); default: ensureContent, with HLS playlists. */
  ladder_dir?: string;
  /** Starts server + emulator (tests pass a stand-in); default e2e `startLink`. */
  start_link?: (l: LinkSetup) => Promise<Link>;
}

/** What `GET /api/config` answers. */
export interface DemoConfig {
  epoch: number;
  session_url: string;
  cert_sha256_hex: string;
  /** The MPD of the content served (content.mpd). */
  mpd: string;
  content: DemoContentInfo;
  contents: DemoContentInfo[];
  player: DemoPlayerKind;
  trace: TraceInfo;
  delay_ms: number;
  queue_packets: number;
  bin_ms: number;
}

/** The demo without its page server: link state and the `/api/` middleware. */
export interface DemoCore {
  /** Connect-style middleware: `/api/…` and the fixed static assets; anything else goes to `next`. */
  middleware: (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
  config: () => DemoConfig | null;
  /** Stop the emulator and the server (idempotent). */
  stop: () => Promise<void>;
}

export interface TraceInfo {
  /** Repo-relative path, e.g. `traces/4G/mahimahi-verizon-lte-short.mahi`. */
  path: string;
  family: string;
  name: string;
  mean_mbps: number;
  period_s: number;
  description: string;
}

export interface Demo {
  url: string;
  port: number;
  /** Stop Vite, the emulator and the server (idempotent). */
  stop: () => Promise<void>;
}

interface LinkState {
  epoch: number;
  link: Link;
  trace: TraceInfo;
  content: DemoContent;
  parsed: MahimahiTrace;
  t0_ms: number;
  log_path: string;
  tail: LogTail;
  log_offset: number;
}

const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** The `.mahi` files under `traces/`, with descriptions from `traces/index.json` where it has them. */
export async function listTraces(): Promise<TraceInfo[]> {
  const index = JSON.parse(await readFile(join(TRACES_DIR, "index.json"), "utf8")) as { traces: { file: string; description?: string }[] };
  const desc = new Map(index.traces.map((t) => [t.file, t.description ?? ""]));
  const out: TraceInfo[] = [];
  for (const family of (await readdir(TRACES_DIR, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)) {
    for (const f of (await readdir(join(TRACES_DIR, family))).filter((x) => x.endsWith(".mahi")).sort()) {
      const parsed = parseTrace(await readFile(join(TRACES_DIR, family, f), "utf8"), f);
      out.push({ path: `traces/${family}/${f}`, family, name: f.replace(/\.mahi$/, ""), mean_mbps: meanRateBps(parsed) / 1e6, period_s: parsed.period_ms / 1000, description: desc.get(`${family}/${f}`) ?? "" });
    }
  }
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, limit_bytes = 4096): Promise<string> {
  let s = "";
  for await (const c of req) {
    s += String(c);
    if (s.length > limit_bytes) throw new Error("request body too large");
  }
  return s;
}

/**
 * Start server and emulator on the first trace and content (`--content DIR` if given, else the
 * ladder) and make the API; no page server.
 * @throws Error if the trace is not one of `traces/`, `content` has no MPD, or the server / emulator fail to start
 */
export async function startDemoCore(o: DemoOptions = {}): Promise<DemoCore> {
  const traces = await listTraces();
  const findTrace = (p: string): TraceInfo => {
    const rel = relative(REPO_ROOT, resolve(REPO_ROOT, p));
    const t = traces.find((x) => x.path === rel);
    if (!t) throw new Error(`unknown trace ${JSON.stringify(p)}: pick one of ${traces.map((x) => x.path).join(", ")}`);
    return t;
  };
  const first_trace = findTrace(o.trace ?? "traces/4G/mahimahi-verizon-lte-short.mahi");
  const out_root = resolve(o.out_dir ?? join(REPO_ROOT, "out/demo"));
  const delay_ms = o.delay_ms ?? 25;
  const queue_packets = o.queue_packets ?? 1000;
  const contents = demoContents(o.ladder_dir ?? (await ensureContent(o.content_duration_s ?? 120, true)), o.content);
  const first_content = contents.find((c) => c.id === "own") ?? (contents[0] as DemoContent);
  const default_player = o.player ?? "dashjs";
  const start_link = o.start_link ?? startLink;

  let state: LinkState | null = null;
  const current = (): LinkState | null => state; // read through a call: closures assign `state`
  let epoch = 0;
  let switching: Promise<void> = Promise.resolve();

  const startOn = async (t: TraceInfo, content: DemoContent): Promise<void> => {
    const old = state;
    state = null;
    await old?.link.stop();
    epoch++;
    const out = join(out_root, `link-${epoch}`);
    await mkdir(join(out, "server"), { recursive: true });
    const link = await start_link({ cc: "nuwa", content_root: content.root, trace: join(REPO_ROOT, t.path), delay_ms, queue_packets, out });
    const parsed = parseTrace(await readFile(join(REPO_ROOT, t.path), "utf8"), t.path);
    state = { epoch, link, trace: t, content, parsed, t0_ms: Number(link.emulator.ready.base_timestamp_ms), log_path: `${out}/emulator.log`, tail: new LogTail(BIN_MS), log_offset: 0 };
  };

  const config = (): DemoConfig | null => {
    const s = state;
    if (!s) return null;
    return {
      epoch: s.epoch,
      session_url: `https://127.0.0.1:${s.link.emulator.ready.listen_port}/nuwa`,
      cert_sha256_hex: String(s.link.server.ready.cert_sha256_hex),
      mpd: s.content.mpd,
      content: contentInfo(s.content),
      contents: contents.map(contentInfo),
      player: default_player,
      trace: s.trace,
      delay_ms,
      queue_packets,
      bin_ms: BIN_MS,
    };
  };

  const readLog = async (s: LinkState): Promise<void> => {
    const fh = await open(s.log_path, "r").catch(() => null);
    if (!fh) return;
    try {
      const buf = Buffer.alloc(1 << 20);
      for (;;) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, s.log_offset);
        if (bytesRead === 0) break;
        s.log_offset += bytesRead;
        s.tail.feed(buf.toString("latin1", 0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  };

  const linkAnswer = async (from_ms: number) => {
    const s = state;
    if (!s) return null;
    await readLog(s);
    const now_ms = monotonicMs() - s.t0_ms;
    const first = Math.max(0, Math.floor(from_ms / BIN_MS), Math.floor(now_ms / BIN_MS) - 600);
    const last = Math.floor(now_ms / BIN_MS); // bins before this one are over
    const count = Math.max(0, last - first);
    const truth_end = Math.min(s.tail.completeBefore(), last);
    const qd_mean_ms: (number | null)[] = [];
    const qd_max_ms: (number | null)[] = [];
    const delivered_bps: number[] = [];
    const drops: number[] = [];
    for (let i = first; i < truth_end; i++) {
      const b = s.tail.bin(i);
      qd_mean_ms.push(b.departures ? b.qd_sum_ms / b.departures : null);
      qd_max_ms.push(b.departures ? b.qd_max_ms : null);
      delivered_bps.push((b.delivered_bytes * 8 * 1000) / BIN_MS);
      drops.push(b.drops);
    }
    return {
      epoch: s.epoch,
      link_now_ms: now_ms,
      bin_ms: BIN_MS,
      first_bin: first,
      capacity_bps: capacityBins(s.parsed, first * BIN_MS, BIN_MS, count),
      truth: { qd_mean_ms, qd_max_ms, delivered_bps, drops },
    };
  };

  /** Restart server + emulator (one change at a time), keeping what `next` does not change. */
  const restart = async (next: { trace?: TraceInfo; content?: DemoContent }): Promise<void> => {
    switching = switching.then(() => {
      const s = current();
      return startOn(next.trace ?? s?.trace ?? first_trace, next.content ?? s?.content ?? first_content);
    });
    await switching;
  };

  const middleware = async (req: IncomingMessage, res: ServerResponse, next: () => void): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://x");
    const asset = STATIC_ASSETS[url.pathname];
    if (asset && req.method === "GET") {
      // The Nuwa-RL model and onnxruntime-web's wasm entry (issue 6: the demo's RL tuner); a fixed list, no path from the request.
      try {
        const body = await readFile(asset.path);
        res.writeHead(200, { "content-type": asset.type, "content-length": body.length });
        return void res.end(body);
      } catch (e) {
        return json(res, 404, { error: `${url.pathname}: ${(e as Error).message}` });
      }
    }
    if (!url.pathname.startsWith("/api/")) return next();
    try {
      if (url.pathname === "/api/config" && req.method === "GET") {
        await switching;
        return json(res, 200, config());
      }
      if (url.pathname === "/api/traces" && req.method === "GET") return json(res, 200, traces);
      if (url.pathname === "/api/link" && req.method === "GET") {
        const from_ms = Number(url.searchParams.get("from_ms") ?? "0");
        if (!Number.isFinite(from_ms) || from_ms < 0) return json(res, 400, { error: "from_ms must be a number >= 0" });
        const a = await linkAnswer(from_ms);
        return a ? json(res, 200, a) : json(res, 503, { error: "link restarting" });
      }
      if (url.pathname === "/api/trace" && req.method === "POST") {
        let body: { path?: unknown };
        try {
          body = JSON.parse(await readBody(req)) as { path?: unknown };
        } catch {
          return json(res, 400, { error: 'body must be JSON {"path": "traces/..."}' });
        }
        if (typeof body.path !== "string") return json(res, 400, { error: 'body must be JSON {"path": "traces/..."}' });
        let t: TraceInfo;
        try {
          t = findTrace(body.path);
        } catch (e) {
          return json(res, 400, { error: String((e as Error).message) });
        }
        await restart({ trace: t });
        return json(res, 200, config());
      }
      if (url.pathname === "/api/content" && req.method === "POST") {
        const usage = `body must be JSON {"id": ${contents.map((c) => JSON.stringify(c.id)).join(" | ")}}`;
        let body: { id?: unknown };
        try {
          body = JSON.parse(await readBody(req)) as { id?: unknown };
        } catch {
          return json(res, 400, { error: usage });
        }
        const c = contents.find((x) => x.id === body.id);
        if (!c) return json(res, 400, { error: `unknown content ${JSON.stringify(body.id)}: ${usage}` });
        await restart({ content: c });
        return json(res, 200, config());
      }
      return json(res, 404, { error: `no such endpoint: ${req.method} ${url.pathname}` });
    } catch (e) {
      return json(res, 500, { error: String(e) });
    }
  };

  await startOn(first_trace, first_content);
  let stopped = false;
  return {
    middleware: (req, res, next) => void middleware(req, res, next),
    config,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await switching.catch(() => {});
      await current()?.link.stop();
    },
  };
}

/**
 * Start everything; resolves once the page can be opened at `url`.
 * @throws Error if the trace is not one of `traces/`, `content` has no MPD, or the server / emulator / Vite fail to start
 */
export async function startDemo(o: DemoOptions = {}): Promise<Demo> {
  const core = await startDemoCore(o);
  const api: Plugin = {
    name: "nuwa-demo-api",
    configureServer(server: ViteDevServer) {
      server.middlewares.use(core.middleware);
    },
  };
  let vite: ViteDevServer;
  let http: Server;
  try {
    // Middleware mode: Vite then installs no SIGTERM/stdin handler that would exit before the link is stopped.
    vite = await createServer({
      configFile: false,
      root: join(REPO_ROOT, "demo"),
      cacheDir: join(REPO_ROOT, "demo/node_modules/.vite"),
      logLevel: "warn",
      clearScreen: false,
      appType: "spa",
      server: { middlewareMode: true, hmr: false },
      resolve: {
        alias: [
          { find: /^@nuwa\/cc$/, replacement: join(REPO_ROOT, "packages/cc/src/index.ts") },
          { find: /^@nuwa\/player$/, replacement: join(REPO_ROOT, "packages/player/src/index.ts") },
          { find: /^@nuwa\/player\/hls$/, replacement: join(REPO_ROOT, "packages/player/src/hls/index.ts") },
          { find: /^@nuwa\/player\/shaka$/, replacement: join(REPO_ROOT, "packages/player/src/shaka/index.ts") },
        ],
      },
      optimizeDeps: { include: ["dashjs", "uplot", "hls.js", "shaka-player"] },
      plugins: [api],
    });
    http = createHttpServer(vite.middlewares);
    const listen = (port: number) =>
      new Promise<void>((ok, bad) => {
        http.once("error", bad);
        http.listen(port, "127.0.0.1", () => {
          http.off("error", bad);
          ok();
        });
      });
    if (o.port !== undefined) await listen(o.port);
    else await listen(5173).catch(() => listen(0)); // 5173 taken: any free port
  } catch (e) {
    await core.stop();
    throw e;
  }
  const port = (http.address() as AddressInfo).port;
  let stopped = false;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      http.closeAllConnections(); // the browser keeps connections alive
      await new Promise<void>((r) => http.close(() => r()));
      await vite.close();
      await core.stop();
    },
  };
}
