/**
 * The demo's player and content choice (issue 19 item 6), pure: no DOM, no I/O, so the page
 * (main.ts), the Node side (server.ts) and unit tests share it.
 *
 * Players: dash.js (createNuwaPlayer), hls.js (`@nuwa/player/hls`) and shaka-player
 * (`@nuwa/player/shaka`). Contents: the generated ladder (`ladder`: DASH and, written beside
 * it, HLS playlists) and, with `./nuwa demo --content DIR`, that directory (`own`: its MPD,
 * plus HLS when DIR has a `master.m3u8`). dash.js and shaka play an MPD; hls.js plays an
 * HLS multivariant playlist, so it is offered only for content that has one.
 */

export const DEMO_PLAYERS = ["dashjs", "hlsjs", "shaka"] as const;
export type DemoPlayerKind = (typeof DEMO_PLAYERS)[number];

/** Display names, as the page's selector and plot legends show them. */
export const PLAYER_NAMES: Readonly<Record<DemoPlayerKind, string>> = { dashjs: "dash.js", hlsjs: "hls.js", shaka: "shaka-player" };

/** A content the demo can serve, as `/api/config` describes it (paths on the server's content root). */
export interface DemoContentInfo {
  /** `ladder` (the generated ladder) or `own` (`--content DIR`). */
  id: string;
  /** What the selector shows. */
  label: string;
  /** The MPD's path, e.g. `/manifest.mpd`. */
  mpd: string;
  /** The HLS multivariant playlist's path, or null when the content has none. */
  hls: string | null;
}

/** True for one of DEMO_PLAYERS. */
export function isDemoPlayer(x: unknown): x is DemoPlayerKind {
  return typeof x === "string" && (DEMO_PLAYERS as readonly string[]).includes(x);
}

/**
 * Why `player` cannot play `content`, or null when it can.
 * @returns a sentence for the page (the selector's tooltip, the error line)
 */
export function unsupportedReason(player: DemoPlayerKind, content: DemoContentInfo): string | null {
  if (player === "hlsjs" && content.hls === null) return `hls.js plays HLS playlists and ${content.label} has none (no master.m3u8): pick dash.js or shaka-player`;
  return null;
}

/** The manifest `player` loads for `content` (path on the server's origin). */
export function manifestFor(player: DemoPlayerKind, content: DemoContentInfo): string {
  if (player === "hlsjs") {
    if (content.hls === null) throw new Error(unsupportedReason(player, content) ?? "no HLS playlist");
    return content.hls;
  }
  return content.mpd;
}

/**
 * The player the page runs: the `player` query parameter if given, else the demo's default
 * (`./nuwa demo --player`). An unknown name, or a player that cannot play the current content,
 * is an error the page shows (never a silent substitute).
 * @returns `{player}` or `{error}`
 */
export function choosePlayer(query: string | null, default_player: DemoPlayerKind, content: DemoContentInfo): { player: DemoPlayerKind; error: null } | { player: null; error: string } {
  const name = query ?? default_player;
  if (!isDemoPlayer(name)) return { player: null, error: `unknown player ${JSON.stringify(name)}: pick one of ${DEMO_PLAYERS.join(", ")}` };
  const why = unsupportedReason(name, content);
  return why ? { player: null, error: why } : { player: name, error: null };
}
