/** The demo's player/content choice (choice.ts, issue 19 item 6). */
import { describe, expect, it } from "vitest";
import { choosePlayer, type DemoContentInfo, manifestFor, unsupportedReason } from "./choice.js";

const ladder: DemoContentInfo = { id: "ladder", label: "generated ladder", mpd: "/manifest.mpd", hls: "/master.m3u8" };
const dashOnly: DemoContentInfo = { id: "own", label: "vod (--content)", mpd: "/stream.mpd", hls: null };

describe("demo player choice", () => {
  it("every player plays content with an MPD and HLS playlists; each loads its manifest", () => {
    for (const p of ["dashjs", "hlsjs", "shaka"] as const) expect(choosePlayer(p, "dashjs", ladder)).toEqual({ player: p, error: null });
    expect(manifestFor("dashjs", ladder)).toBe("/manifest.mpd");
    expect(manifestFor("shaka", dashOnly)).toBe("/stream.mpd");
    expect(manifestFor("hlsjs", ladder)).toBe("/master.m3u8");
  });

  it("no ?player: the demo's default (./nuwa demo --player)", () => {
    expect(choosePlayer(null, "shaka", ladder)).toEqual({ player: "shaka", error: null });
    expect(choosePlayer(null, "dashjs", dashOnly)).toEqual({ player: "dashjs", error: null });
  });

  it("hls.js on DASH-only content is refused with the reason, never swapped for another player", () => {
    expect(unsupportedReason("hlsjs", dashOnly)).toMatch(/hls\.js plays HLS playlists and vod \(--content\) has none/);
    expect(unsupportedReason("dashjs", dashOnly)).toBeNull();
    expect(unsupportedReason("shaka", dashOnly)).toBeNull();
    const c = choosePlayer("hlsjs", "dashjs", dashOnly);
    expect(c.player).toBeNull();
    expect(c.error).toMatch(/no master\.m3u8/);
    expect(() => manifestFor("hlsjs", dashOnly)).toThrow(/HLS/);
  });

  it("an unknown player name is an error that lists the players", () => {
    expect(choosePlayer("vlc", "dashjs", ladder)).toEqual({ player: null, error: 'unknown player "vlc": pick one of dashjs, hlsjs, shaka' });
  });
});
