/**
 * What the demo can serve (issue 19 item 6), on the Node side: the generated ladder and,
 * with `./nuwa demo --content DIR`, the viewer's own DASH VOD. Each is a content root for the
 * server (`--content-root`) with its MPD and, where present, an HLS multivariant playlist.
 */
import { existsSync } from "node:fs";
import { basename, resolve } from "node:path";
import { findMpd } from "../../e2e/src/play.js";
import type { DemoContentInfo } from "./choice.js";

/** A content choice with its directory (never sent to the page). */
export interface DemoContent extends DemoContentInfo {
  /** Absolute content root the server serves. */
  root: string;
}

/** The HLS multivariant playlist of a content root, if it has one (`master.m3u8` at its top). */
function hlsOf(root: string): string | null {
  return existsSync(resolve(root, "master.m3u8")) ? "/master.m3u8" : null;
}

/**
 * The demo's contents: `ladder` (the generated ladder at `ladder_dir`: `manifest.mpd`, and HLS
 * when its playlists were written) and, given `own_dir`, `own` (its MPD found as `./nuwa play
 * --content` finds it: `manifest.mpd`, else the one `*.mpd` at its top).
 * @throws Error naming `own_dir` when it is not a directory or holds no MPD, or several
 */
export function demoContents(ladder_dir: string, own_dir?: string): DemoContent[] {
  const ladder_root = resolve(ladder_dir);
  const out: DemoContent[] = [{ id: "ladder", label: "generated ladder (H.264 300–8000 kbit/s, 2 s segments)", root: ladder_root, mpd: "/manifest.mpd", hls: hlsOf(ladder_root) }];
  if (own_dir !== undefined) {
    const root = resolve(own_dir);
    const mpd = findMpd(root);
    out.push({ id: "own", label: `${basename(root)} (--content)`, root, mpd: `/${encodeURI(mpd)}`, hls: hlsOf(root) });
  }
  return out;
}

/** The page's view of a content (no directory). */
export function contentInfo(c: DemoContent): DemoContentInfo {
  return { id: c.id, label: c.label, mpd: c.mpd, hls: c.hls };
}
