/**
 * What the viewer saw, for the playback pages (play.ts, play-hls.ts, play-shaka.ts): each
 * change of the presented frame's size goes into `PlayLog.rendered`, scored by
 * lab/nuwa_lab/play_metrics.py (`rendered_rates`). The generated ladder gives every rung its
 * own frame size (lab/nuwa_lab/dashgen/params.py), so the size names the rung; a size two
 * rungs share (a site's own ladder) names none (`bitrate_kbps` null) and the score falls back
 * to the downloads.
 */
import type { PlayLog } from "./play-log.js";

/** A video rung as the player lists it: bitrate in kbit/s, frame size in pixels. */
export interface RenderedRung {
  kbps: number;
  width: number;
  height: number;
}

type FrameMeta = { mediaTime: number; width: number; height: number };
type FrameCallbackVideo = HTMLVideoElement & { requestVideoFrameCallback?: (cb: (now: number, meta: FrameMeta) => void) => number };

/**
 * Watch `video` until `stopped()` and append to `out` one entry per change of the presented frame
 * size (the first frame included): `media_s` the frame's presentation time (s), the rung of
 * that size from `rungs()` (read at each change: the player lists its rungs once the manifest
 * is parsed). Frames come from `requestVideoFrameCallback`; where it is missing, `resize` events
 * with `currentTime`. `now_us`: the page's clock, µs. Returns a reader of the last presented
 * frame's presentation time (s; NaN before the first frame or without
 * `requestVideoFrameCallback`): the samples log it as `frame_media_s`, and a picture that lags
 * the media clock is a frozen picture (Chromium lets audio play on for up to 3 s after the video
 * runs dry before it declares a stall: media/renderers/renderer_impl.cc,
 * kDefaultVideoUnderflowThresholdMs).
 */
export function watchRendered(
  video: HTMLVideoElement,
  out: NonNullable<PlayLog["rendered"]>,
  rungs: () => RenderedRung[],
  stopped: () => boolean,
  now_us: () => number,
): () => number {
  let last_frame_media_s = Number.NaN;
  const note = (media_s: number, width: number, height: number) => {
    const last = out[out.length - 1];
    if (stopped() || width <= 0 || height <= 0 || (last && last.width === width && last.height === height)) return;
    const same = rungs().filter((r) => r.width === width && r.height === height);
    const kbps = same.length === 1 && same[0]!.kbps > 0 ? same[0]!.kbps : null;
    out.push({ t_us: now_us(), media_s, width, height, bitrate_kbps: kbps });
  };
  const v = video as FrameCallbackVideo;
  if (typeof v.requestVideoFrameCallback === "function") {
    const onFrame = (_now: number, meta: FrameMeta) => {
      last_frame_media_s = meta.mediaTime;
      note(meta.mediaTime, meta.width, meta.height);
      if (!stopped()) v.requestVideoFrameCallback!(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  } else {
    video.addEventListener("resize", () => note(video.currentTime, video.videoWidth, video.videoHeight));
  }
  return () => last_frame_media_s;
}
