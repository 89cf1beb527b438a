/**
 * The demo page: dash.js 5 plays the DASH ladder over a Nuwa session
 * (`createNuwaPlayer` from @nuwa/player), with live uPlot plots on the
 * emulator's clock: queuing delay (page's Eq. 1 Qd and the emulator's own) against
 * Td; window and last grant; Nuwa's and dash.js's estimates against the trace's
 * capacity; buffer and bitrate; k and ρ over time. Td, k and ρ apply at run time
 * through `setParams`; the trace selector restarts server and emulator (demo/src/server.ts)
 * and reloads the page. State for tests: `window.__nuwa_demo`.
 */
import { DEFAULT_CONFIG } from "@nuwa/cc";
import { createNuwaPlayer, RL_CC } from "@nuwa/player";
import * as dashjsModule from "dashjs";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { BinStore, type SeriesName } from "./store.js";

// The ESM build puts FactoryMaker only on its default export; the typings declare no default.
const dashjs = ((dashjsModule as unknown as { default?: typeof dashjsModule }).default ?? dashjsModule) as typeof dashjsModule;

interface DemoConfig {
  epoch: number;
  session_url: string;
  cert_sha256_hex: string;
  mpd: string;
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
}

declare global {
  interface Window {
    __nuwa_demo: DemoState;
    /** The plotted arrays (x: link s), for tests and the console. */
    __nuwa_demo_series?: () => { x: number[]; y: Record<SeriesName, (number | null)[]> };
  }
}

const state: DemoState = { ready: false, error: null, errors: [], epoch: 0, ticks: 0, media_s: 0, clock_rtt_ms: Number.NaN, filled: {}, last: {}, bins: 0, params: null, tuner: "fixed", tuner_k: [] };
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
  const num = (k: string, d: number) => (q.has(k) && Number.isFinite(Number(q.get(k))) ? Number(q.get(k)) : d);
  const td = $<HTMLInputElement>("td");
  const kk = $<HTMLInputElement>("k");
  const rho = $<HTMLInputElement>("rho");
  td.value = String(num("td", DEFAULT_CONFIG.target_delay_ms));
  kk.value = String(num("k", DEFAULT_CONFIG.aggressiveness_mss));
  rho.value = String(num("rho", DEFAULT_CONFIG.sensitivity_ms));
  // k tuner (issue 6): `?tuner=rl` runs the Nuwa-RL agent, which sets k every interval; the k plot shows its choices.
  const tunerSel = $<HTMLSelectElement>("tuner");
  const useRl = q.get("tuner") === "rl";
  tunerSel.value = useRl ? "rl" : "fixed";
  // k acts only in the additive step (Nuwa-RL's RL_CC); the default multiplicative step moves the
  // window by θ·(g·w + a) per RTT, so there the field only shows k and setParams would refuse it.
  kk.disabled = true;
  kk.title = useRl ? "k is set by the Nuwa-RL agent every 200 ms" : "k has no effect under the default multiplicative step (g = 0.25 per RTT); pick the Nuwa-RL tuner to see k tuned";
  state.tuner = useRl ? "rl" : "fixed";
  let tunerNote = useRl ? "Nuwa-RL: loading" : "";
  $("note").textContent = `${cfg.trace.path}: ${cfg.trace.description || "bundled trace"} Link: ${cfg.delay_ms} ms each way, ${cfg.queue_packets}-packet drop-tail queue. Capacity and the emulator's queuing delay come from the trace and the emulator's log on its own clock.`;

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

  // Player: createNuwaPlayer (dash.js + attachNuwa + typed events).
  let grant_bytes = Number.NaN;
  let est_bps = Number.NaN;
  let dashjs_bps = Number.NaN;
  let buffer_s = Number.NaN;
  let bitrate_bps = Number.NaN;
  let stalls = 0;
  const np = createNuwaPlayer(video, {
    dashjs,
    url: cfg.session_url,
    serverCertificateHashHex: cfg.cert_sha256_hex,
    mpd: cfg.mpd,
    cc: useRl
      ? { ...RL_CC, target_delay_ms: Number(td.value), sensitivity_ms: Number(rho.value), tuner: "rl", model: "/models/nuwa-rl.onnx", tuner_options: { wasm_paths: "/ort/" } }
      : { target_delay_ms: Number(td.value), sensitivity_ms: Number(rho.value) },
    onTelemetry: (e) => {
      if (e.type === "tuner_ready") tunerNote = `Nuwa-RL: running every ${e.interval_ms} ms`;
      else if (e.type === "tuner_decision") {
        tunerNote = `Nuwa-RL: k ${e.k_mss.toFixed(2)} (×${e.factor}, ${e.inference_ms.toFixed(2)} ms)`;
        state.tuner_k.push(e.k_mss);
      }
      else if (e.type === "tuner_fallback") {
        tunerNote = `Nuwa-RL failed, fixed k ${e.k_mss}: ${e.error}`;
        fail(tunerNote);
      }
    },
    mode: "control",
    abr: "nuwa",
    estimate: "nuwa",
    estimate_interval_ms: cfg.bin_ms,
    dashSettings: { debug: { logLevel: 1 }, streaming: { buffer: { bufferTimeDefault: 12, bufferTimeAtTopQuality: 20, bufferTimeAtTopQualityLongForm: 20 } } },
  });
  const binOfUs = (t_us: number) => store.binOf(clock.link_ms(t_us / 1000));
  np.on("qd", (e) => store.addQd(binOfUs(e.t_us), e.raw_queuing_delay_ms));
  np.on("grant", (e) => {
    grant_bytes = e.window_bytes;
  });
  np.on("estimate", (e) => {
    est_bps = e.bps;
    dashjs_bps = e.dashjs_bps;
  });
  np.on("buffer", (e) => {
    if (e.media_type === "video") buffer_s = e.level_s;
  });
  np.on("bitrate", (e) => {
    if (e.media_type === "video") bitrate_bps = e.bitrate_bps;
  });
  np.on("stall", (e) => {
    if (e.state === "start") stalls++;
  });
  np.on("error", (e) => fail(`${e.source}: ${e.message}`));
  np.player.on(dashjs.MediaPlayer.events.PLAYBACK_ENDED, () => np.player.seek(0)); // loop the 120 s ladder
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
    statusEl.textContent = `restarting server and emulator on ${sel.value}…`;
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
  const pEst = makePlot($("plot-est"), "Estimates vs real capacity (Mbit/s)", [line("trace capacity", "#555", undefined, { fill: "rgba(0,0,0,0.06)" }), line("delivered (emulator)", "#bbb"), line("Nuwa", "#d62728", undefined, { width: 2 }), line("dash.js own", "#9467bd")], [{ label: "Mbit/s", scale: "y" }]);
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
    const c = np.nuwa.current()?.controller;
    if (!c) return; // between sessions (reconnecting)
    const i = store.binOf(clock.link_ms(performance.now()));
    store.set("td_ms", i, c.config.target_delay_ms);
    store.set("window_kb", i, c.windowBytes / 1000);
    store.set("grant_kb", i, grant_bytes / 1000);
    store.set("nuwa_mbps", i, est_bps / 1e6);
    store.set("dashjs_mbps", i, dashjs_bps / 1e6);
    store.set("buffer_s", i, buffer_s);
    store.set("bitrate_mbps", i, bitrate_bps / 1e6);
    store.set("k_mss", i, c.config.aggressiveness_mss);
    store.set("rho_ms", i, c.config.sensitivity_ms);
    state.ticks++;
    state.media_s = video.currentTime;
    state.params = { target_delay_ms: c.config.target_delay_ms, aggressiveness_mss: c.config.aggressiveness_mss, sensitivity_ms: c.config.sensitivity_ms };
    const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "–");
    if (!state.error)
      statusEl.textContent = `${cfg.trace.name}: video ${f(video.currentTime, 1)} s, buffer ${f(buffer_s, 1)} s, bitrate ${f(bitrate_bps / 1e6)} Mbit/s, ${stalls} stalls | Nuwa ${f(est_bps / 1e6)} Mbit/s, dash.js ${f(dashjs_bps / 1e6)} Mbit/s | window ${f(c.windowBytes / 1000, 0)} KB, Td ${c.config.target_delay_ms} ms, k ${c.config.aggressiveness_mss}, ρ ${c.config.sensitivity_ms} ms | clock sync ±${f(clock.rtt_ms / 2, 1)} ms${tunerNote ? ` | ${tunerNote}` : ""}`;
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
