/**
 * The log a playback page leaves in `window.__nuwa_play` (e2e/pages/play.ts for dash.js,
 * play-hls.ts for hls.js), read by e2e/src/play.ts and scored by lab/nuwa_lab/play_metrics.py.
 * `dashjs_bps` in samples is the player's own estimate (dash.js's or hls.js's), bit/s;
 * `frame_media_s` the presentation time of the last video frame presented (rendered.ts), s.
 */
export interface PlayLog {
  done: boolean;
  error: string | null;
  scheme: string;
  started_us: number;
  startup_s: number | null;
  frames: { send_us: number[]; recv_us: number[]; raw_qd_ms: number[] };
  samples: { t_us: number; media_s: number; frame_media_s?: number; buffer_s: number; nuwa_bps: number; dashjs_bps: number; bitrate_kbps: number; window_bytes: number; qd_ms: number; downloading: boolean }[];
  /** Video media segments downloaded completely (a re-download of a position appears again). */
  chunks: { t_us: number; bitrate_kbps: number; index: number; start_s: number; duration_s: number; bytes: number }[];
  /** Video media segment requests dash.js abandoned (AbandonRequestsRule, fast switching), with the bytes they had loaded. */
  abandoned: { t_us: number; bitrate_kbps: number; index: number; start_s: number; bytes: number }[];
  /** Segments the loader fetched ahead (attachNuwa `fetch_ahead`) and their outcome; absent: none. */
  fetch_ahead?: { t_us: number; media_type: string; path: string; outcome: "used" | "discarded" | "failed"; bytes: number }[];
  quality_changes: { t_us: number; bitrate_kbps: number }[];
  /**
   * What the viewer saw: one entry each time the displayed frame's size changes (the first frame included),
   * read from the frames presented (`requestVideoFrameCallback`; `resize` events where it is missing).
   * `media_s` is the frame's presentation time, `bitrate_kbps` the representation of that frame size
   * (null when no rung or more than one has it; e2e/pages/rendered.ts). Every rung of the generated
   * ladder has its own frame size (lab/nuwa_lab/dashgen/params.py).
   */
  rendered?: { t_us: number; media_s: number; width: number; height: number; bitrate_kbps: number | null }[];
  stalls: { start_us: number; end_us: number | null }[];
  abr_reasons: string[];
  /** dash.js's settings in force at the start (buffer targets, fast switching, active rules): the baselines must show dash.js's defaults. */
  dashjs_settings?: unknown;
  /** hls.js's settings in force (the hls.js page, e2e/pages/play-hls.ts). */
  hlsjs_settings?: unknown;
  /** The player that played (absent: dash.js). */
  player?: "dashjs" | "hlsjs";
  /** The transport the first session ran on (session.ts `transport`). */
  transport?: string;
}

declare global {
  interface Window {
    __nuwa_play: PlayLog;
  }
}

