/**
 * Bulk-download page for end-to-end runs: opens a Nuwa session, downloads for
 * `duration_s`, records every frame's (seq, send time, receive time, Qd, window)
 * and exposes the log as `window.__nuwa`. Parameters come from the query string:
 * url, hash, mode (control|observe), duration_s, size_bytes, cc (JSON), grants (JSON),
 * stall_timeout_ms (optional: the session's stall watchdog, default the player's),
 * tuner=rl (optional: the Nuwa-RL tuner sets k every interval; the model and
 * onnxruntime-web's wasm are fetched from /models/ and /ort/).
 *
 * Sessions die on long dark stretches (Chromium's blackhole detection closes
 * the QUIC connection: "session closed during the request: connection
 * lost"); the page then reconnects as the player does (@nuwa/player's
 * SessionManager: capped exponential backoff, a fresh controller per
 * session) and resumes the download on the new session, recording each gap
 * (disconnections.ts) in `sessions` and `disconnections`.
 */
import { NuwaRequestError, NuwaSession, RlTuner, SessionManager, type TelemetryEvent } from "@nuwa/player";
import { type Disconnection, DisconnectionLog } from "./disconnections.js";
import { TrainingPlayerBuffer } from "./training-buffer.js";

interface BulkLog {
  done: boolean;
  error: string | null;
  frames: number;
  bytes: number;
  seq: number[];
  send_us: number[];
  recv_us: number[];
  raw_qd_ms: number[];
  kalman_qd_ms: number[];
  /** The queuing delay the rule read for each frame (Decision.queuing_delay_ms: min(Qd, service delay) under the default qd_source "service"), ms. */
  rule_qd_ms: number[];
  window_bytes: number[];
  phase_changes: [number, string][];
  /** The Td in force whenever it changed: [receiver time µs, ms] (adaptive Td, issue 14). */
  target_delay_ms: [number, number][];
  grants: number;
  rtt_us: number[];
  estimate: { t_us: number; bps: number; basis: string; delivery_rate_bps: number }[];
  started_us: number;
  ended_us: number;
  /** Nuwa-RL decisions (tuner=rl): [receiver time µs, k after the decision, inference ms]. */
  tuner_k: [number, number, number][];
  tuner_state: string | null;
  /** Sessions opened (1 without reconnects). */
  sessions: number;
  /** Each loss of the session carrying the download, until frames came back (disconnections.ts). */
  disconnections: Disconnection[];
}

declare global {
  interface Window {
    __nuwa: BulkLog;
  }
}

const q = new URLSearchParams(location.search);
const log: BulkLog = {
  done: false,
  error: null,
  frames: 0,
  bytes: 0,
  seq: [],
  send_us: [],
  recv_us: [],
  raw_qd_ms: [],
  kalman_qd_ms: [],
  rule_qd_ms: [],
  window_bytes: [],
  phase_changes: [],
  target_delay_ms: [],
  grants: 0,
  rtt_us: [],
  estimate: [],
  started_us: 0,
  ended_us: 0,
  tuner_k: [],
  tuner_state: null,
  sessions: 0,
  disconnections: [],
};
window.__nuwa = log;
const gaps = new DisconnectionLog();
log.disconnections = gaps.entries;
const status = document.getElementById("status")!;
let phase = "";

function onTelemetry(e: TelemetryEvent): void {
  if (e.type === "frame") {
    gaps.onFrame(e.send_time_us, e.t_us);
    log.frames++;
    log.bytes += e.size_bytes;
    log.seq.push(e.seq);
    log.send_us.push(e.send_time_us);
    log.recv_us.push(e.t_us);
    log.raw_qd_ms.push(e.decision.raw_queuing_delay_ms);
    log.kalman_qd_ms.push(e.decision.kalman_queuing_delay_ms);
    log.rule_qd_ms.push(e.decision.queuing_delay_ms);
    log.window_bytes.push(e.decision.window_bytes);
    const td = log.target_delay_ms[log.target_delay_ms.length - 1];
    if (td === undefined || Math.abs(td[1] - e.decision.target_delay_ms) >= 0.5) log.target_delay_ms.push([e.t_us, e.decision.target_delay_ms]);
    if (e.decision.phase !== phase) {
      phase = e.decision.phase;
      log.phase_changes.push([e.t_us, `${phase}: ${e.decision.reason}`]);
    }
  } else if (e.type === "grant") log.grants++;
  else if (e.type === "rtt") log.rtt_us.push(e.rtt_us);
}

/** `p`, or null once `signal` aborts first. */
function untilAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

async function startTuner(session: NuwaSession): Promise<RlTuner> {
  const tuner = await RlTuner.load(session.controller, {
    model: "/models/nuwa-rl.onnx",
    wasm_paths: "/ort/",
    onEvent: (e) => {
      if (e.type === "tuner_decision") log.tuner_k.push([performance.now() * 1000, e.k_mss, e.inference_ms]);
      else if (e.type === "tuner_fallback") log.error = `Nuwa-RL tuner fell back to a fixed k: ${e.error}`;
    },
  });
  log.tuner_state = tuner.state;
  const buffer = new TrainingPlayerBuffer();
  let last_cum = session.controller.cumReceivedBytes;
  let last_ms = performance.now();
  tuner.start(() => {
    const now = performance.now();
    const c = session.controller;
    if (now > last_ms) buffer.step(c.cumReceivedBytes - last_cum, (now - last_ms) / 1000);
    last_cum = c.cumReceivedBytes;
    last_ms = now;
    return { cum_received_bytes: c.cumReceivedBytes, window_bytes: c.windowBytes, buffer_s: buffer.buffer_s, queuing_delay_ms: log.raw_qd_ms[log.raw_qd_ms.length - 1] ?? 0 };
  });
  return tuner;
}

async function main(): Promise<void> {
  const duration_s = Number(q.get("duration_s") ?? "30");
  const size_bytes = Number(q.get("size_bytes") ?? String(2 ** 40));
  const abort = new AbortController();
  let stop: ReturnType<typeof setTimeout> | null = null;
  let tuner: RlTuner | null = null;
  let tuner_for: NuwaSession | null = null;
  const manager = new SessionManager<NuwaSession>(
    (hooks) =>
      NuwaSession.connect({
        url: q.get("url")!,
        serverCertificateHashHex: q.get("hash") ?? undefined,
        mode: (q.get("mode") ?? "control") as "control" | "observe",
        cc: JSON.parse(q.get("cc") ?? "{}"),
        grants: JSON.parse(q.get("grants") ?? "{}"),
        onTelemetry,
        onStall: hooks.onStall,
        ...(q.has("stall_timeout_ms") ? { stall_timeout_ms: Number(q.get("stall_timeout_ms")) } : {}),
      }),
    // A trace that starts dark delays the first handshake too: a few tries before giving up.
    { initial_attempts: 5 },
    {
      onSession: (_s, n) => {
        log.sessions = n;
      },
    },
  );
  const timer = setInterval(() => {
    const s = manager.current;
    if (!s || !log.started_us) return;
    const t = performance.now() * 1000;
    const e = s.controller.estimate(t);
    log.estimate.push({ t_us: t, bps: e.bps, basis: e.basis, delivery_rate_bps: e.delivery_rate_bps });
    status.textContent = `${((t - log.started_us) / 1e6).toFixed(1)} s  ${(log.bytes / 1e6).toFixed(1)} MB  window ${(s.controller.windowBytes / 1000).toFixed(0)} kB  estimate ${(e.bps / 1e6).toFixed(2)} Mbit/s  sessions ${log.sessions}`;
  }, 250);
  try {
    let left_bytes = size_bytes;
    for (;;) {
      const session = log.started_us ? await untilAbort(manager.session(), abort.signal) : await manager.session();
      if (session === null) break;
      if (!log.started_us) {
        log.started_us = performance.now() * 1000;
        stop = setTimeout(() => abort.abort(), duration_s * 1000);
      }
      if (q.get("tuner") === "rl" && tuner_for !== session) {
        tuner?.stop();
        tuner = await startTuner(session);
        tuner_for = session;
      }
      const before = log.bytes;
      try {
        await session.request({ op: "bulk", size_bytes: left_bytes }, { keep_body: false, signal: abort.signal });
        break;
      } catch (e) {
        if (abort.signal.aborted) break;
        // The session died under the request (or stalled and was replaced): resume on the next one.
        if (!(e instanceof NuwaRequestError && e.retryable)) throw e;
        left_bytes = Math.max(1, left_bytes - (log.bytes - before));
        gaps.onLost(performance.now() * 1000, e.message);
        if (session.closeReason === null) session.close(`request failed: ${e.message}`);
      }
    }
  } finally {
    if (stop) clearTimeout(stop);
    clearInterval(timer);
    tuner?.stop();
    log.ended_us = performance.now() * 1000;
    manager.close();
  }
}

main()
  .catch((e: unknown) => {
    log.error = String(e);
  })
  .finally(() => {
    log.done = true;
    status.textContent += "\ndone";
  });
