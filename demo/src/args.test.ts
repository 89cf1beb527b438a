/** `./nuwa demo` arguments (args.ts) and the content catalog (content.ts), issue 19 item 6. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkDemoArgs } from "./args.js";
import { demoContents } from "./content.js";

const root = mkdtempSync(join(tmpdir(), "nuwa-demo-args-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
/** A directory holding `files` (empty files). */
function dir(name: string, files: string[]): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  for (const f of files) writeFileSync(join(d, f), "");
  return d;
}

describe("./nuwa demo arguments", () => {
  it("defaults: dash.js, no own content", () => {
    expect(checkDemoArgs({})).toEqual({ player: "dashjs", trace: undefined, port: undefined, delay_ms: undefined, queue_packets: undefined, out_dir: undefined, content: undefined });
  });

  it("--content DIR with an MPD and --player are taken; numbers parsed", () => {
    const vod = dir("vod", ["stream.mpd", "seg.mp4"]);
    expect(checkDemoArgs({ content: vod, player: "shaka", port: "0", "delay-ms": "10", "queue-packets": "50" })).toMatchObject({ content: vod, player: "shaka", port: 0, delay_ms: 10, queue_packets: 50 });
  });

  it("--content that is not a directory, or holds no MPD, is refused naming it", () => {
    expect(() => checkDemoArgs({ content: join(root, "missing") })).toThrow(/--content .*missing: not a directory/);
    const empty = dir("empty", ["a.mp4"]);
    expect(() => checkDemoArgs({ content: empty })).toThrow(/--content .*empty: no \.mpd file/);
  });

  it("--player must be one of the three; hls.js needs HLS in --content", () => {
    expect(() => checkDemoArgs({ player: "vlc" })).toThrow("--player must be one of dashjs, hlsjs, shaka (got vlc)");
    const vod = dir("vod2", ["manifest.mpd"]);
    expect(() => checkDemoArgs({ player: "hlsjs", content: vod })).toThrow(/--player hlsjs: .* has no HLS playlist/);
    const both = dir("both", ["manifest.mpd", "master.m3u8"]);
    expect(checkDemoArgs({ player: "hlsjs", content: both }).player).toBe("hlsjs");
    expect(checkDemoArgs({ player: "hlsjs" }).player).toBe("hlsjs"); // the ladder has HLS playlists
  });

  it("a bad number names its option", () => {
    expect(() => checkDemoArgs({ port: "-1" })).toThrow("--port must be an integer >= 0 (got -1)");
    expect(() => checkDemoArgs({ "queue-packets": "0" })).toThrow("--queue-packets must be an integer >= 1 (got 0)");
  });
});

describe("demo contents", () => {
  it("the ladder, and --content DIR as `own` with its MPD (manifest.mpd, else the one *.mpd) and HLS when it has master.m3u8", () => {
    const ladder = dir("ladder", ["manifest.mpd", "master.m3u8"]);
    const vod = dir("my vod", ["Big Buck.mpd"]);
    const cs = demoContents(ladder, vod);
    expect(cs.map((c) => [c.id, c.root, c.mpd, c.hls])).toEqual([
      ["ladder", ladder, "/manifest.mpd", "/master.m3u8"],
      ["own", vod, "/Big%20Buck.mpd", null],
    ]);
    expect(cs[1]?.label).toBe("my vod (--content)");
    expect(demoContents(dir("ladder-dash", ["manifest.mpd"])).map((c) => [c.id, c.hls])).toEqual([["ladder", null]]);
  });
});
