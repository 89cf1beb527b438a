/**
 * Video playback in the @nuwa/cc simulator engine (issue 15): the shipped MPC rule
 * (dash/abr.ts `decideMpc`, dash/mpc.ts) choosing rungs for a player that fetches one segment at a
 * time through a Nuwa session, the real NuwaController granting the window, on a Mahimahi
 * drop-tail bottleneck under a simulated clock. Seconds of playback in milliseconds of CPU, so an
 * ABR change can be compared on many traces (and traces not in the repository) before an
 * end-to-end invocation confirms it. SIMULATED: figures from here are labelled so.
 *
 * Model (what dash.js and Nuwa's loader do end to end, docs/DESIGN.md §8):
 * - the player first fetches the manifest and init segments (`preroll_bytes`), then video
 *   segments one at a time; each request reaches the server one one-way delay after it leaves,
 *   and the server writes the segment (video + the audio segment of the same position, as the
 *   offline optimum's chunk, lab/nuwa_lab/abr_optimum.py) under the grant rule (flow.ts, app-limited);
 * - the receiver feeds every frame to the controller, gives it one RTT sample per request (the
 *   first byte's time, session.ts), and ticks it with `expecting_data` only while a request is
 *   open (an idle player is not an outage);
 * - a segment is complete when its last frame is read; its (bytes, request-to-complete time)
 *   goes to the MPC's history as the loader's onComplete does (attach.ts);
 * - the next request leaves when the previous segment completes and the buffer is below the
 *   buffer target (`buffer_cap_s`, dash.js's bufferTimeDefault as attachNuwa sets it), else when it
 *   falls below it;
 * - playback starts when the first segment is in, drains the buffer in real time, stalls when it is
 *   empty and resumes when the next segment is in.
 * QoE: Pensieve's linear QoE per chunk (Mao et al., SIGCOMM 2017, §5.1, as play_metrics.qoe):
 * Σ bitrate Mbit/s − 4.3 × stall s − Σ |Δ bitrate| Mbit/s over the chunks that began playing,
 * divided by their number; the start-up delay is reported, not charged (as play_metrics).
 */
import { FRAME_HEADER_BYTES, type NuwaConfig } from "@nuwa/cc";
import { Engine } from "@nuwa/cc/sim";
import { decideMpc, type EstimateSource, estimateWithBasis, type NuwaMpcOptions, type RepresentationLike } from "../dash/abr.js";
import { MPC_DEFAULTS, MPC_REBUFFER_PENALTY, MpcHistory } from "../dash/mpc.js";

/** The content: rungs and real segment sizes (abr_optimum.py `Ladder`). */
export interface VideoLadder {
  /** Nominal bitrate of each rung, kbit/s, ascending (non-empty). */
  bitrates_kbps: readonly number[];
  /** `video_bytes[r][k]`: bytes of rung r's segment k. */
  video_bytes: readonly (readonly number[])[];
  /** Bytes of the audio segment k (empty: no audio). */
  audio_bytes: readonly number[];
  /** Segment duration, s (> 0). */
  segment_s: number;
}

/** What an ABR sees at a decision (the state makeNuwaAbrRule reads in the browser). */
export interface VideoAbrContext {
  src: EstimateSource;
  reps: RepresentationLike[];
  buffer_s: number;
  history: MpcHistory;
  /** Index of the segment to choose a rung for. */
  index: number;
}

/** An ABR under test: the rung index for the next segment. */
export type VideoAbr = (c: VideoAbrContext) => number;

export interface VideoSimOptions {
  trace: Uint32Array;
  ladder: VideoLadder;
  /** Simulated wall time, s (e2e runs: 60 s of playback after start-up). */
  duration_s: number;
  /** One-way propagation delay each way, ms (default 25, as the bench's emulator). */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets (default 1000). */
  queue_packets?: number;
  /** Frame payload, bytes (default 1200). */
  payload_bytes?: number;
  /** The player's buffer target, s (default MPC_DEFAULTS.buffer_cap_s). */
  buffer_cap_s?: number;
  /** Manifest and init segments fetched before the first decision, bytes (default 8000). */
  preroll_bytes?: number;
  /** Controller settings. */
  config?: Partial<NuwaConfig>;
  /** The ABR (default: the shipped MPC, `mpcAbr()`). */
  abr?: VideoAbr;
}

/** One segment as the player fetched it. */
export interface VideoChunk {
  index: number;
  rung: number;
  kbps: number;
  bytes: number;
  request_ms: number;
  complete_ms: number;
}

export interface VideoSimResult {
  /** QoE per chunk (module doc), NaN when no chunk played. */
  qoe: number;
  /** Chunks that began playing. */
  played_chunks: number;
  /** Stall time after start-up, s. */
  rebuffer_s: number;
  /** Rebuffer ÷ (played time + rebuffer). */
  rebuffer_ratio: number;
  /** Rung changes between consecutive played chunks. */
  switches: number;
  /** Of them, up and down; and reversals: switches whose previous switch, at most 3 chunks earlier, went the other way. */
  up_switches: number;
  down_switches: number;
  reversals: number;
  /** Mean nominal bitrate of the played chunks, kbit/s. */
  mean_kbps: number;
  /** First segment complete, s. */
  startup_s: number;
  chunks: VideoChunk[];
}

/** The shipped MPC (dash/abr.ts decideMpc) as a simulator ABR; `o` as attachNuwa's NuwaMpcOptions, minus the history. */
export function mpcAbr(o: Omit<NuwaMpcOptions, "history"> = {}): VideoAbr {
  return (c) => {
    const { kbps, basis } = estimateWithBasis(c.src); // as makeNuwaAbrRule: one estimate per decision
    if (!Number.isFinite(kbps)) return 0; // makeNuwaAbrRule returns no choice: dash.js's start bitrate (the lowest rung here)
    const m = decideMpc(c.src, c.reps, kbps, basis, c.buffer_s, c.history, { ...o, history: () => c.history });
    return c.reps.indexOf(m.rep);
  };
}

/**
 * Play `o.duration_s` of simulated time (module doc). Deterministic for a given input.
 * @throws RangeError on an empty ladder, a ladder whose sizes do not match its rungs, or a bad controller config
 */
export function simulateVideo(o: VideoSimOptions): VideoSimResult {
  const L = o.ladder;
  const n_rungs = L.bitrates_kbps.length;
  if (n_rungs === 0 || L.video_bytes.length !== n_rungs) throw new RangeError("simulateVideo: the ladder needs one size list per rung");
  const n_segments = Math.min(...L.video_bytes.map((v) => v.length));
  if (!(L.segment_s > 0) || n_segments === 0) throw new RangeError("simulateVideo: segment_s must be > 0 and every rung needs segments");
  const payload = o.payload_bytes ?? 1200;
  const frame_bytes = FRAME_HEADER_BYTES + payload;
  const owd = o.one_way_delay_ms ?? 25;
  const cap_s = o.buffer_cap_s ?? MPC_DEFAULTS.buffer_cap_s;
  const abr = o.abr ?? mpcAbr();
  const reps: RepresentationLike[] = L.bitrates_kbps.map((k, i) => ({ id: String(i), bitrateInKbit: k, segmentDuration: L.segment_s }));
  const history = new MpcHistory();

  // The request in flight: frames the server has been given, cumulative, and where this response ends.
  let given_frames = 0;
  const arrivals: { at_ms: number; frames: number }[] = []; // requests on their way to the server
  type Open = { index: number; rung: number; bytes: number; request_ms: number; start_frame: number; end_frame: number; first_read: boolean };
  const state: { open: Open | null } = { open: null }; // a holder: the engine's callbacks read it
  const eng = new Engine({ trace: o.trace, one_way_delay_ms: owd, queue_packets: o.queue_packets }, [
    {
      policy: "grants",
      config: o.config ?? {},
      frame_bytes,
      app_frames: (t) => {
        while (arrivals.length > 0 && arrivals[0]!.at_ms <= t) given_frames += arrivals.shift()!.frames;
        return given_frames;
      },
      expecting_data: () => state.open !== null,
    },
  ]);
  const ctl = eng.flows[0]!.controller!;
  const src: EstimateSource = { controller: () => ctl, now_us: () => eng.nowMs * 1000 };
  let requested_frames = 0;
  const request = (t: number, bytes: number, index: number, rung: number) => {
    const frames = Math.ceil(bytes / payload) + 1; // + the HEAD frame
    arrivals.push({ at_ms: t + owd, frames });
    state.open = { index, rung, bytes, request_ms: t, start_frame: requested_frames, end_frame: requested_frames + frames, first_read: false };
    requested_frames += frames;
  };

  const chunks: VideoChunk[] = [];
  let buffer_s = 0;
  let playing = false;
  let startup_ms = Number.NaN;
  let stall_ms = 0;
  let next = 0; // next segment to request
  let play_pos_chunks = 0; // chunks that began playing
  let into_chunk_s = 0;
  const end_ms = Math.round(o.duration_s * 1000);
  request(0, o.preroll_bytes ?? 8000, -1, -1);
  for (let t = 0; t < end_ms; t++) {
    eng.tick(); // ms t: sends, the bottleneck, reads (the controller ticks inside)
    const read_frames = Math.floor(eng.flows[0]!.read_bytes / frame_bytes);
    const cur = state.open;
    if (cur && !cur.first_read && read_frames > cur.start_frame) {
      cur.first_read = true;
      ctl.onRttSample((t + 1 - cur.request_ms) * 1000); // session.ts: the HEAD frame's arrival
    }
    if (cur && read_frames >= cur.end_frame) {
      state.open = null;
      if (cur.index >= 0) {
        const video = L.video_bytes[cur.rung]![cur.index]!;
        history.add({ bytes: video, duration_s: (t + 1 - cur.request_ms) / 1000, bitrate_kbps: L.bitrates_kbps[cur.rung]!, segment_s: L.segment_s, predicted_kbps: history.next_predicted_kbps });
        chunks.push({ index: cur.index, rung: cur.rung, kbps: L.bitrates_kbps[cur.rung]!, bytes: cur.bytes, request_ms: cur.request_ms, complete_ms: t + 1 });
        buffer_s += L.segment_s;
        if (Number.isNaN(startup_ms)) startup_ms = t + 1;
        playing = true; // playback starts, or a stall ends, when a segment is in
      }
    }
    // Playback of ms t.
    if (playing) {
      if (buffer_s > 0) {
        const dt = Math.min(0.001, buffer_s);
        buffer_s -= dt;
        if (into_chunk_s === 0) play_pos_chunks++;
        into_chunk_s += dt;
        if (into_chunk_s >= L.segment_s - 1e-9) into_chunk_s = 0;
      }
      if (buffer_s <= 1e-9 && next < n_segments) {
        buffer_s = 0;
        playing = false;
      }
    } else if (!Number.isNaN(startup_ms) && next < n_segments) stall_ms++;
    // The next request: the previous one complete, the buffer below its target.
    if (state.open === null && next < n_segments && buffer_s < cap_s) {
      const rung = Math.max(0, Math.min(n_rungs - 1, abr({ src, reps, buffer_s, history, index: next })));
      const bytes = L.video_bytes[rung]![next]! + (L.audio_bytes[next] ?? 0);
      request(t + 1, bytes, next, rung);
      next++;
    }
  }
  const played = chunks.filter((c) => c.index < play_pos_chunks);
  let q = 0;
  let switches = 0;
  let up_switches = 0;
  let reversals = 0;
  let last_switch: { at: number; up: boolean } | null = null;
  for (let i = 0; i < played.length; i++) {
    q += played[i]!.kbps / 1000;
    if (i > 0 && played[i]!.rung !== played[i - 1]!.rung) {
      const up = played[i]!.rung > played[i - 1]!.rung;
      switches++;
      if (up) up_switches++;
      if (last_switch && i - last_switch.at <= 3 && last_switch.up !== up) reversals++;
      last_switch = { at: i, up };
      q -= Math.abs(played[i]!.kbps - played[i - 1]!.kbps) / 1000;
    }
  }
  q -= (MPC_REBUFFER_PENALTY * stall_ms) / 1000;
  const played_s = played.length * L.segment_s;
  return {
    qoe: played.length > 0 ? q / played.length : Number.NaN,
    played_chunks: played.length,
    rebuffer_s: stall_ms / 1000,
    rebuffer_ratio: stall_ms / 1000 / Math.max(1e-9, played_s + stall_ms / 1000),
    switches,
    up_switches,
    down_switches: switches - up_switches,
    reversals,
    mean_kbps: played.length > 0 ? played.reduce((a, c) => a + c.kbps, 0) / played.length : Number.NaN,
    startup_s: startup_ms / 1000,
    chunks,
  };
}
