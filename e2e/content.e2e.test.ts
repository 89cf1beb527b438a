/**
 * Your own content (issue 19 item 2): `./nuwa play --content DIR` plays DASH VOD in the layouts
 * packagers produce, made by ffmpeg at test time and cached (lab/nuwa_lab/dashgen/layouts.py:
 * a few seconds of 360p/180p test source, separate audio): SegmentTemplate $Number$ (ours),
 * $Time$ with a SegmentTimeline, SegmentList with byte ranges in one file, SegmentBase with a
 * sidx (byte-range requests over the session), and two Periods. Each plays for a few seconds of
 * media under a 4G trace through the emulator with dash.js and Nuwa's MPC: media plays, no
 * player or page error, grants obeyed; with an index (SegmentList, sidx) the MPC's decisions
 * say they used the real segment sizes. One run has dash.js's CMCD on (item 7): the server's
 * log records bl, mtp and br. Content with DRM ends in the named error, not a hang.
 * CI form under 45 s; `NUWA_LONG=1` adds the single-period $Number$ layout and plays each layout's full 8 s.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildPages } from "./src/build-pages.js";
import { ensureLayouts, runPlay } from "./src/play.js";
import { functionalEmulatorProblems, onFunctionalEmulator } from "./src/valid-run.js";

const LONG = process.env.NUWA_LONG === "1";
const TRACE = "traces/4G/mahimahi-verizon-lte-short.mahi";
/** Media seconds played per layout (the layouts are 8 s long). */
const PLAY_S = LONG ? 8 : 4;
/**
 * CI: four layouts (multiperiod is also our $Number$ template, two Periods of 4 s: a 4 s play
 * reaches the second); NUWA_LONG adds the single-period $Number$ layout. About 10 s a run here
 * (server, emulator and Chromium start, 4 s of media, the metrics), so CI stays under 45 s.
 */
const LAYOUTS = LONG ? (["number", "timeline", "segmentlist", "segmentbase", "multiperiod"] as const) : (["timeline", "segmentlist", "segmentbase", "multiperiod"] as const);
/** Layouts whose real segment sizes the MPC reads from an index. */
const INDEXED = new Set(["segmentlist", "segmentbase"]);

type Summary = Record<string, unknown> & {
  media_played_s: number;
  grant_violations: number;
  grant_check: { frames: number };
  emulator: { valid: boolean; lateness_ms: { p99: number | null }; invalid_reasons?: string[] };
  page_errors: string[];
  player_errors: string[];
};

let dirs: Record<string, string> = {};
beforeAll(async () => {
  dirs = await ensureLayouts();
  await buildPages(); // once; each run below skips it
}, 120_000);

/** Every `request` event of the server's session logs under a run's out dir. */
function requestEvents(out: string): { path: string; cmcd?: Record<string, unknown> }[] {
  const rows: { path: string; cmcd?: Record<string, unknown> }[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name === "events.jsonl") {
        for (const line of readFileSync(join(d, e.name), "utf8").split("\n")) {
          if (!line) continue;
          const r = JSON.parse(line) as { event: string; path: string; cmcd?: Record<string, unknown> };
          if (r.event === "request") rows.push(r);
        }
      }
    }
  };
  walk(`${out}/server`);
  return rows;
}

describe("plays DASH VOD from other packagers (ffmpeg layouts)", () => {
  it.each(LAYOUTS)(
    "%s: media plays, no player error, grants obeyed",
    async (layout) => {
      const out = `out/e2e/content-${layout}`;
      const cmcd = layout === "timeline"; // one run with dash.js's CMCD on (query mode)
      // These claims are functional (plays, no error, grants obeyed, the index read): a run void
      // for measurement only (p99 lateness over 2 ms, a CI host gave 2.4 ms three times running)
      // is kept if the emulator's log passes its own checks and its lateness stays under
      // FUNCTIONAL_P99_LATENESS_MS, far below a 2 s segment's time.
      const s = (await onFunctionalEmulator(
        `content ${layout}`,
        () => runPlay({ trace: TRACE, scheme: "nuwa", duration_s: PLAY_S, out_dir: out, content: dirs[layout], build_pages: false, ...(cmcd ? { page_params: { cmcd: "query" } } : {}) }),
        3,
      )) as Summary;
      expect(functionalEmulatorProblems(s.emulator), "emulator fit for functional claims").toEqual([]);
      expect(s.page_errors).toEqual([]);
      expect(s.player_errors).toEqual([]);
      expect(s.media_played_s).toBeGreaterThanOrEqual(PLAY_S - 1.5);
      expect(s.grant_check.frames).toBeGreaterThan(100);
      expect(s.grant_violations).toBe(0);
      const page = JSON.parse(readFileSync(`${out}/page.json`, "utf8")) as { abr_reasons: string[] };
      const from_index = page.abr_reasons.filter((r) => r.includes("rungs from the index"));
      // The MPC read real sizes (SegmentList ranges, the fetched sidx) for both rungs where the content has an index, never elsewhere.
      if (INDEXED.has(layout)) expect(from_index.some((r) => r.includes("real sizes of 2/2 rungs")), page.abr_reasons.slice(0, 5).join("\n")).toBe(true);
      else expect(from_index).toEqual([]);
      const requests = requestEvents(out);
      if (layout === "segmentbase" || layout === "segmentlist") expect(requests.some((r) => Array.isArray((r as { range?: unknown }).range))).toBe(true);
      if (cmcd) {
        const segs = requests.filter((r) => r.cmcd && /chunk-stream[01]-/.test(r.path)); // video segments (stream2 is audio)
        expect(segs.length, "video segment requests carrying CMCD").toBeGreaterThan(0);
        for (const key of ["bl", "br", "mtp"]) expect(segs.some((r) => typeof r.cmcd?.[key] === "number"), key).toBe(true);
      } else {
        expect(requests.filter((r) => r.cmcd)).toEqual([]); // off unless the site turns it on
      }
    },
    120_000,
  );

  it("content with DRM ends in the named error (no hang)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nuwa-drm-"));
    try {
      cpSync(dirs.number!, dir, { recursive: true });
      const mpd = readFileSync(`${dir}/manifest.mpd`, "utf8").replace(
        /(<AdaptationSet[^>]*contentType="video"[^>]*>)/,
        '$1<ContentProtection schemeIdUri="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" value="Widevine"/>',
      );
      writeFileSync(`${dir}/manifest.mpd`, mpd);
      const t0 = Date.now();
      await expect(runPlay({ trace: TRACE, scheme: "nuwa", duration_s: PLAY_S, out_dir: "out/e2e/content-drm", content: dir, build_pages: false })).rejects.toThrow(
        /NuwaContentError: unsupported content: DRM \(ContentProtection\).*urn:uuid:edef8ba9/,
      );
      expect(Date.now() - t0).toBeLessThan(30_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
