/** `./nuwa play --content DIR` (issue 19): which MPD of a content directory is played. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findMpd } from "./play.js";

const root = mkdtempSync(join(tmpdir(), "nuwa-findmpd-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function dir(name: string, files: string[]): string {
  const d = join(root, name);
  mkdirSync(d);
  for (const f of files) writeFileSync(join(d, f), "<MPD/>");
  return d;
}

describe("findMpd", () => {
  it("manifest.mpd first, else the one .mpd at the top", () => {
    expect(findMpd(dir("both", ["stream.mpd", "manifest.mpd", "seg.m4s"]))).toBe("manifest.mpd");
    expect(findMpd(dir("one", ["Movie.MPD", "init.mp4"]))).toBe("Movie.MPD");
  });
  it("says what is wrong: no MPD, several, not a directory", () => {
    expect(() => findMpd(dir("none", ["a.m4s"]))).toThrow(/no \.mpd file at its top/);
    expect(() => findMpd(dir("two", ["a.mpd", "b.mpd"]))).toThrow(/several MPDs \(a\.mpd, b\.mpd\)/);
    expect(() => findMpd(join(root, "missing"))).toThrow(/not a directory/);
  });
});
