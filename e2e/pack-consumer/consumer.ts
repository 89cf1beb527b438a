/**
 * A TypeScript consumer of the packed packages, type-checked with tsc in an
 * empty project against the published declarations (skipLibCheck off), by
 * e2e/pack.e2e.test.ts. The @ts-expect-error lines fail the check if the
 * declarations degrade to `any`. The repository's own tsc also checks this
 * file (against src/ through tsconfig paths).
 */
import { type Decision, type NuwaConfig, NuwaController } from "@nuwa/cc";
import { type BulkSimResult, constantRateTrace, simulateBulk } from "@nuwa/cc/sim";
import { attachNuwa, createNuwaPlayer, type NuwaPlayer, type NuwaPlayerEvents, type NuwaSession, TD_PRESETS_MS } from "@nuwa/player";
import { attachNuwaToHls } from "@nuwa/player/hls";
import * as dashjs from "dashjs";
import Hls from "hls.js";

const config: Partial<NuwaConfig> = { target_delay_ms: TD_PRESETS_MS.vod };
const c = new NuwaController(config);
const d: Decision = c.onFrame(0, 20_000, 1_220);
export const window_bytes: number = d.window_bytes;
// @ts-expect-error: send time is a number, µs
c.onFrame("0", 1, 2);
export const sim: BulkSimResult = simulateBulk({ trace: constantRateTrace(1e6), duration_s: 1 });

/** The one-call player, with the real dash.js module and its real MediaPlayer type. */
export function start(video: HTMLVideoElement, hash: string): NuwaPlayer<dashjs.MediaPlayerClass> {
  const p = createNuwaPlayer(video, { dashjs, url: "https://127.0.0.1:4433/nuwa", serverCertificateHashHex: hash, mpd: "/manifest.mpd", preset: "vod" });
  p.on("stall", (e) => {
    if (e.state === "end") console.log(e.duration_ms.toFixed(0));
  });
  p.on("qd", (e: NuwaPlayerEvents["qd"]) => e.raw_queuing_delay_ms - e.target_delay_ms);
  const off: () => void = p.on("estimate", (e) => e.bps - e.dashjs_bps);
  off();
  // @ts-expect-error: no such event
  p.on("nope", () => {});
  // @ts-expect-error: a bitrate event has no level_s
  p.on("bitrate", (e) => e.level_s);
  const version: string = p.player.getVersion(); // dash.js's own MediaPlayer type comes through
  console.log(version);
  return p;
}

/** The lower-level API: attach to a MediaPlayer the site built itself. */
export async function attach(): Promise<number> {
  const player = dashjs.MediaPlayer().create();
  const a = attachNuwa(player as never, dashjs as never, { url: "https://127.0.0.1:4433/nuwa", abr: "nuwa" });
  const s: NuwaSession = await a.session;
  return s.controller.windowBytes + a.estimateBps();
}

/** hls.js through `@nuwa/player/hls`: the site's Hls class in, its own Hls type out. */
export function startHls(video: HTMLVideoElement): Hls {
  const nuwa = attachNuwaToHls(Hls, { url: "https://127.0.0.1:4433/nuwa", abr: "nuwa" });
  const hls: Hls = nuwa.create({ maxBufferLength: 30 });
  hls.loadSource("https://127.0.0.1:4433/master.m3u8");
  hls.attachMedia(video);
  const own: number = nuwa.hlsjsEstimateBps() + nuwa.estimateBps();
  console.log(own);
  // @ts-expect-error: no such ABR
  attachNuwaToHls(Hls, { url: "https://127.0.0.1:4433/nuwa", abr: "bola" });
  return hls;
}
