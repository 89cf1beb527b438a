/**
 * The demo page: a player of the viewer's choice (dash.js, hls.js or shaka-player; `?player=`,
 * default `./nuwa demo --player`) plays the content of their choice (the generated ladder or
 * `--content DIR`) over a Nuwa session (players.ts), with live uPlot plots on the
 * emulator's clock: queuing delay (page's Eq. 1 Qd and the emulator's own) against
 * Td; window and last grant; Nuwa's and the player's own estimates against the trace's
 * capacity; buffer and bitrate; k and ρ over time. Td, k and ρ apply at run time
 * through `setParams`; the trace and content selectors restart server and emulator
 * (demo/src/server.ts) and reload the page; the player selector reloads it with `?player=`.
 * State for tests: `window.__nuwa_demo`.
 */
import { DEFAULT_CONFIG } from "@nuwa/cc";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { choosePlayer, DEMO_PLAYERS, type DemoContentInfo, type DemoPlayerKind, manifestFor, PLAYER_NAMES, unsupportedReason } from "./choice.js";
import { type DemoPlayer, startDemoPlayer } from "./players.js";
import { BinStore, type SeriesName } from "./store.js";

interface DemoConfig {
  epoch: number;
  session_url: string;
  cert_sha256_hex: string;
  mpd: string;
  content: DemoContentInfo;
  contents: DemoContentInfo[];
  player: DemoPlayerKind;
  trace: { path: string; name: string; mean_mbps: number; description: string };
  delay_ms: number;
  queue_packets: number;
  bin_ms: number;
}
interface TraceInfo {
  path: string;
  family: string;
  name: string;
  mean_mbps: number;
}
interface LinkAnswer {
  epoch: number;
  link_now_ms: number;
  bin_ms: number;
  first_bin: number;
  capacity_bps: number[];
  truth: { qd_mean_ms: (number | null)[]; qd_max_ms: (number | null)[]; delivered_bps: number[]; drops: number[] };
}

/** What the e2e test reads. */
interface DemoState {
  ready: boolean;
  error: string | null;
  errors: string[];
  epoch: number;
  ticks: number;
  media_s: number;
  clock_rtt_ms: number;
  filled: Partial<Record<SeriesName, number>>;
  /** Latest non-null value of each series. */
  last: Partial<Record<SeriesName, number>>;
  bins: number;
  params: { target_delay_ms: number; aggressiveness_mss: number; sensitivity_ms: number } | null;
  /** k tuner: "fixed" or "rl", and the Nuwa-RL decisions so far (k after each). */
  tuner: "fixed" | "rl";
  tuner_k: number[];
  /** The player running (null when the choice was refused) and the content served. */
  player: DemoPlayerKind | null;
  content: string;
  manifest: string;
}

declare global {
  interface Window {
    __nuwa_demo: DemoState;
    /** The plotted arrays (x: link s), for tests and the console. */
    __nuwa_demo_series?: () => { x: number[]; y: Record<SeriesName, (number | null)[]> };
  }
}

const state: DemoState = { ready: false, error: null, errors: [], epoch: 0, ticks: 0, media_s: 0, clock_rtt_ms: Number.NaN, filled: {}, last: {}, bins: 0, params: null, tuner: "fixed", tuner_k: [], player: null, content: "", manifest: "" };
window.__nuwa_demo = state;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusEl = $("status");
const video = $<HTMLVideoElement>("video");

function fail(msg: string): void {
  state.errors.push(msg);
  state.error ??= msg;
  statusEl.classList.add("error");
  statusEl.textContent = msg;
}

async function getJson<T>(path: string, init?: RequestInit): Promise<T> {
  const r = await fetch(path, init);
  const body = (await r.json()) as T & { error?: string };
  if (!r.ok) throw new Error(`${path}: ${r.status} ${body.error ?? ""}`);
  return body;
}

/**
 * Page clock → emulator link clock. Both are monotonic; the offset is taken from the
 * /api/link answer with the shortest round trip (NTP-style midpoint), so its error is
 * at most half that round trip (about a millisecond on loopback).
 */
class LinkClock {
  offset_ms = Number.NaN;
  rtt_ms = Number.POSITIVE_INFINITY;
  observe(sent_ms: number, recv_ms: number, link_now_ms: number): void {
    const rtt = recv_ms - sent_ms;
    if (rtt <= this.rtt_ms) {
      this.rtt_ms = rtt;
      this.offset_ms = link_now_ms - (sent_ms + recv_ms) / 2;
    }
  }
  link_ms(page_ms: number): number {
    return page_ms + this.offset_ms;
  }
}

function makePlot(el: HTMLElement, title: string, series: uPlot.Series[], axes: uPlot.Axis[], scales: uPlot.Scales = {}, width = 560): uPlot {
  const h = document.createElement("h2");
  h.textContent = title;
  el.appendChild(h);
  const data = [[], ...series.map(() => [])] as unknown as uPlot.AlignedData;
  return new uPlot({ width, height: 190, series: [{ label: "link s" }, ...series], axes: [{ label: "emulator time, s" }, ...axes], scales: { x: { time: false }, ...scales }, legend: { live: false }, cursor: { show: false } }, data, el);
}

const line = (label: string, stroke: string, scale = "y", extra: Partial<uPlot.Series> = {}): uPlot.Series => ({ label, stroke, width: 1.5, scale, spanGaps: false, ...extra });

async function main(): Promise<void> {
  const q = new URLSearchParams(location.search);
  const [cfg, traces] = await Promise.all([getJson<DemoConfig>("/api/config"), getJson<TraceInfo[]>("/api/traces")]);
  state.epoch = cfg.epoch;
  state.content = cfg.content.id;
  const chosen = choosePlayer(q.get("player"), cfg.player, cfg.content);
  const store = new BinStore(cfg.bin_ms, 600);
  const clock = new LinkClock();

  // Controls.
  const sel = $<HTMLSelectElement>("trace");
  for (const t of traces) {
    const o = document.createElement("option");
    o.value = t.path;
    o.textContent = `${t.family} ${t.name} (${t.mean_mbps.toFixed(1)} Mbit/s mean)`;
    o.selected = t.path === cfg.trace.path;
    sel.appendChild(o);
  }
  // Player and content (issue 19 item 6): a player that cannot play a content is disabled, with why.
  const playerSel = $<HTMLSelectElement>("player");
  for (const p of DEMO_PLAYERS) {
    const o = document.createElement("option");
    o.value = p;
    o.textContent = PLAYER_NAMES[p];
    const why = unsupportedReason(p, cfg.content);
    o.disabled = why !== null;
    if (why) o.title = why;
    o.selected = p === (chosen.player ?? q.get("player") ?? cfg.player);
    playerSel.appendChild(o);
  }
  const contentSel = $<HTMLSelectElement>("content");
  for (const c of cfg.contents) {
    const o = document.createElement("option");
    o.value = c.id;
    o.textContent = c.label;
    o.selected = c.id === cfg.content.id;
    contentSel.appendChild(o);
  }
  playerSel.addEventListener("change", () => {
    q.set("player", playerSel.value);
    location.search = `?${q}`; // a new player: the page reloads with it
  });
  contentSel.addEventListener("change", async () => {
    statusEl.textContent = `restarting server and emulator on ${contentSel.selectedOptions[0]?.textContent ?? contentSel.value}…`;
    try {
      const next = await getJson<DemoConfig>("/api/content", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: contentSel.value }) });
      // Keep the player if it plays the new content, else fall back to the demo's default.
      if (q.has("player") && unsupportedReason(q.get("player") as DemoPlayerKind, next.content)) q.delete("player");
      location.search = `?${q}`;
    } catch (e) {
      fail(`content change failed: ${(e as Error).message}`);
    }
  });
  if (chosen.player === null) {
    fail(chosen.error);
    return;
  }
  const kind = chosen.player;
  state.player = kind;
  state.manifest = manifestFor(kind, cfg.content);
  const num = (k: string, d: number) => (q.has(k) && Number.isFinite(Number(q.get(k))) ? Number(q.get(k)) : d);
  const td = $<HTMLInputElement>("td");
  const kk = $<HTMLInputElement>("k");
  const rho = $<HTMLInputElement>("rho");
  td.value = String(num("td", DEFAULT_CONFIG.target_delay_ms));
  kk.value = String(num("k", DEFAULT_CONFIG.aggressiveness_mss));
  rho.value = String(num("rho", DEFAULT_CONFIG.sensitivity_ms));
  // k tuner (issue 6): `?tuner=rl` runs the Nuwa-RL agent, which sets k every interval; the k plot shows its choices.
  const tunerSel = $<HTMLSelectElement>("tuner");
  const useRl = q.get("tuner") === "rl" && kind === "dashjs"; // the RL tuner runs in attachNuwa (dash.js)
  tunerSel.value = useRl ? "rl" : "fixed";
  if (kind !== "dashjs") {
    tunerSel.disabled = true;
    tunerSel.title = "the Nuwa-RL tuner runs with dash.js only";
  }
  // k acts only in the additive step (Nuwa-RL's RL_CC); the default multiplicative step moves the
  // window by θ·(g·w + a) per RTT, so there the field only shows k and setParams would refuse it.
  kk.disabled = true;
  kk.title = useRl ? "k is set by the Nuwa-RL agent every 200 ms" : "k has no effect under the default multiplicative step (g = 0.25 per RTT); pick the Nuwa-RL tuner to see k tuned";
  state.tuner = useRl ? "rl" : "fixed";
  let tunerNote = useRl ? "Nuwa-RL: loading" : "";
  $("note").textContent = `${PLAYER_NAMES[kind]} plays ${cfg.content.label} (${state.manifest}). ${cfg.trace.path}: ${cfg.trace.description || "bundled trace"} Link: ${cfg.delay_ms} ms each way, ${cfg.queue_packets}-packet drop-tail queue. Capacity and the emulator's queuing delay come from the trace and the emulator's log on its own clock.`;

  // Clock sync before anything is binned.
  const syncLink = async (from_ms: number): Promise<LinkAnswer> => {
    const t0 = performance.now();
    const a = await getJson<LinkAnswer>(`/api/link?from_ms=${from_ms}`);
    clock.observe(t0, performance.now(), a.link_now_ms);
    state.clock_rtt_ms = clock.rtt_ms;
    if (a.epoch !== cfg.epoch) throw new Error("the link was restarted (another tab changed the trace): reload");
    return a;
  };
  for (let i = 0; i < 5; i++) await syncLink(0);

  // Player (players.ts): the same plotted quantities from whichever player runs.
  let grant_bytes = Number.NaN;
  const binOfUs = (t_us: number) => store.binOf(clock.link_ms(t_us / 1000));
  let np: DemoPlayer;
  try {
    np = await startDemoPlayer(kind, video, {
      session_url: cfg.session_url,
      cert_sha256_hex: cfg.cert_sha256_hex,
      manifest: state.manifest,
      target_delay_ms: Number(td.value),
      sensitivity_ms: Number(rho.value),
      rl: useRl,
      estimate_interval_ms: cfg.bin_ms,
      onQd: (t_us, qd_ms) => store.addQd(binOfUs(t_us), qd_ms),
      onGrant: (w) => {
        grant_bytes = w;
      },
      onTuner: (note, k, failed) => {
        tunerNote = note;
        if (k !== null) state.tuner_k.push(k);
        if (failed) fail(note);
      },
      onError: fail,
    });
  } catch (e) {
    fail(`${PLAYER_NAMES[kind]} failed to start: ${(e as Error).message}`);
    return;
  }
  await np.session;

  tunerSel.addEventListener("change", () => {
    if (tunerSel.value === "rl") q.set("tuner", "rl");
    else q.delete("tuner");
    np.destroy();
    location.search = `?${q}`; // a new player: the tuner is chosen when the player is made
  });
  $("apply").addEventListener("click", () => {
    const p = { target_delay_ms: Number(td.value), sensitivity_ms: Number(rho.value) };
    try {
      np.setParams(p); // throws RangeError on a value out of range (resolveConfig)
      q.set("td", td.value);
      q.set("rho", rho.value);
      history.replaceState(null, "", `?${q}`);
      statusEl.classList.remove("error");
    } catch (e) {
      fail(`parameters refused: ${(e as Error).message}`);
    }
  });
  sel.addEventListener("change", async () => {
    statusEl.textContent = `restarting server and emulator on ${sel.value}…`; // same content
    try {
      await getJson<DemoConfig>("/api/trace", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: sel.value }) });
      np.destroy();
      location.reload();
    } catch (e) {
      fail(`trace change failed: ${(e as Error).message}`);
    }
  });

  // Plots.
  const pQd = makePlot($("plot-qd"), "Queuing delay vs Td (ms)", [line("page Qd (Eq. 1)", "#d62728"), line("emulator queue", "#555", undefined, { dash: [4, 3] }), line("Td", "#2ca02c", undefined, { width: 2 })], [{ label: "ms", scale: "y" }]);
  const pWin = makePlot($("plot-win"), "Window and grant (KB)", [line("controller window", "#1f77b4"), line("last grant sent", "#ff7f0e", undefined, { dash: [4, 3] })], [{ label: "KB", scale: "y" }]);
  const pEst = makePlot($("plot-est"), "Estimates vs real capacity (Mbit/s)", [line("trace capacity", "#555", undefined, { fill: "rgba(0,0,0,0.06)" }), line("delivered (emulator)", "#bbb"), line("Nuwa", "#d62728", undefined, { width: 2 }), line(`${PLAYER_NAMES[kind]} own`, "#9467bd")], [{ label: "Mbit/s", scale: "y" }]);
  const pBuf = makePlot($("plot-buf"), "Buffer (s) and bitrate (Mbit/s)", [line("buffer", "#17becf", "s"), line("bitrate", "#e377c2", "mbps", { paths: uPlot.paths.stepped?.({ align: 1 }) })], [{ label: "s", scale: "s" }, { label: "Mbit/s", scale: "mbps", side: 1, grid: { show: false } }], { s: { auto: true }, mbps: { auto: true } });
  const pPar = makePlot($("plot-params"), "Parameters over time: k (MSS/RTT), ρ (ms)", [line("k", "#8c564b", "k"), line("ρ", "#7f7f7f", "rho", { dash: [4, 3] })], [{ label: "k", scale: "k" }, { label: "ρ ms", scale: "rho", side: 1, grid: { show: false } }], { k: { range: (_u, _min, max) => [0, Math.max(1, max * 1.25)] }, rho: { range: (_u, _min, max) => [0, Math.max(1, max * 2)] } }, 478);
  const plots: [uPlot, SeriesName[]][] = [
    [pQd, ["qd_page_ms", "qd_emu_ms", "td_ms"]],
    [pWin, ["window_kb", "grant_kb"]],
    [pEst, ["capacity_mbps", "delivered_mbps", "nuwa_mbps", "dashjs_mbps"]],
    [pBuf, ["buffer_s", "bitrate_mbps"]],
    [pPar, ["k_mss", "rho_ms"]],
  ];

  // Sampling (every bin) and link truth (every second).
  let next_truth_bin = store.binOf(clock.link_ms(performance.now()));
  let next_cap_bin = next_truth_bin;
  let fetching = false;
  const pullLink = async () => {
    if (fetching) return;
    fetching = true;
    try {
      const a = await syncLink(Math.min(next_truth_bin, next_cap_bin) * cfg.bin_ms);
      a.capacity_bps.forEach((c, j) => {
        store.set("capacity_mbps", a.first_bin + j, c / 1e6);
      });
      next_cap_bin = Math.max(next_cap_bin, a.first_bin + a.capacity_bps.length);
      a.truth.qd_mean_ms.forEach((v, j) => {
        store.set("qd_emu_ms", a.first_bin + j, v);
        store.set("delivered_mbps", a.first_bin + j, a.truth.delivered_bps[j]! / 1e6);
      });
      next_truth_bin = Math.max(next_truth_bin, a.first_bin + a.truth.qd_mean_ms.length);
    } catch (e) {
      fail(String((e as Error).message));
    } finally {
      fetching = false;
    }
  };
  const sample = () => {
    const c = np.controller();
    if (!c) return; // between sessions (reconnecting)
    const i = store.binOf(clock.link_ms(performance.now()));
    store.set("td_ms", i, c.config.target_delay_ms);
    store.set("window_kb", i, c.windowBytes / 1000);
    store.set("grant_kb", i, grant_bytes / 1000);
    const est_bps = np.nuwaBps();
    const own_bps = np.playerBps();
    const buffer_s = np.bufferS();
    const bitrate_bps = np.bitrateBps();
    store.set("nuwa_mbps", i, est_bps / 1e6);
    store.set("dashjs_mbps", i, own_bps / 1e6); // the player's own estimate (series name kept for the e2e test)
    store.set("buffer_s", i, buffer_s);
    store.set("bitrate_mbps", i, bitrate_bps / 1e6);
    store.set("k_mss", i, c.config.aggressiveness_mss);
    store.set("rho_ms", i, c.config.sensitivity_ms);
    state.ticks++;
    state.media_s = video.currentTime;
    state.params = { target_delay_ms: c.config.target_delay_ms, aggressiveness_mss: c.config.aggressiveness_mss, sensitivity_ms: c.config.sensitivity_ms };
    const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "–");
    if (!state.error)
      statusEl.textContent = `${PLAYER_NAMES[kind]}, ${cfg.trace.name}: video ${f(video.currentTime, 1)} s, buffer ${f(buffer_s, 1)} s, bitrate ${f(bitrate_bps / 1e6)} Mbit/s, ${np.stalls()} stalls | Nuwa ${f(est_bps / 1e6)} Mbit/s, ${PLAYER_NAMES[kind]} ${f(own_bps / 1e6)} Mbit/s | window ${f(c.windowBytes / 1000, 0)} KB, Td ${c.config.target_delay_ms} ms, k ${c.config.aggressiveness_mss}, ρ ${c.config.sensitivity_ms} ms | clock sync ±${f(clock.rtt_ms / 2, 1)} ms${tunerNote ? ` | ${tunerNote}` : ""}`;
  };
  const draw = () => {
    for (const [p, names] of plots) p.setData([store.x, ...names.map((n) => store.y[n])] as unknown as uPlot.AlignedData);
    state.bins = store.x.length;
    for (const [, names] of plots)
      for (const n of names) {
        state.filled[n] = store.filled(n);
        const ys = store.y[n];
        for (let j = ys.length - 1; j >= 0; j--) {
          const v = ys[j];
          if (v !== null && v !== undefined) {
            state.last[n] = v;
            break;
          }
        }
      }
  };
  window.__nuwa_demo_series = () => ({ x: [...store.x], y: Object.fromEntries(Object.entries(store.y).map(([k, v]) => [k, [...v]])) as Record<SeriesName, (number | null)[]> });
  setInterval(sample, cfg.bin_ms);
  setInterval(() => void pullLink(), 1000);
  setInterval(draw, 500);
  state.ready = true;
}

window.addEventListener("error", (e) => fail(`page error: ${e.message}`));
window.addEventListener("unhandledrejection", (e) => fail(`unhandled rejection: ${String(e.reason)}`));
main().catch((e: unknown) => fail(`demo failed: ${(e as Error).message ?? String(e)}`));
