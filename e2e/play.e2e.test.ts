/**
 * Real DASH playback through Nuwa (issue 4, "End-to-end tests"): ffmpeg-made
 * content, the aioquic server, the trace-driven emulator (25 ms each way,
 * 1000-packet drop-tail) and headless Chromium playing with dash.js for 30 s,
 * under one 3G and one 4G trace from the repo. Capacity, queuing delay and
 * grant obedience come from the emulator's and the server's logs
 * (play_metrics.py), not from the page's own word. Nuwa's estimate error must be
 * below dash.js's own, both read at the same instants of the same run.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { describePlay, runPlay } from "./src/play.js";
import { REPO_ROOT } from "./src/procs.js";
import { functionalEmulatorProblems, onFunctionalEmulator } from "./src/valid-run.js";

// 30 s (60 s until the nineteenth session; NUWA_E2E_PLAY_S=60 for the longer form). The 3G
// recording is played from 20 s in (the recording itself, its first 20 s left out): its capacity,
// 3.4-4.3 Mbit/s before, falls to 1.7, 0.8 and 0.4 Mbit/s 15-30 s into the run, where the 60 s
// form met the same fall at 35-50 s. Verizon's moves 9.3 → 1.9 → 6.9 Mbit/s in its first 30 s.
const DURATION_S = Number(process.env.NUWA_E2E_PLAY_S ?? 30);
const TRACES = [
  { family: "3G", trace: "traces/3G/norway-hsdpa-bus-1.mahi", from_ms: 20_000, down_switch: true },
  { family: "4G", trace: "traces/4G/mahimahi-verizon-lte-short.mahi", from_ms: 0, down_switch: false },
];

/** The Mahimahi recording from `from_ms` on (opportunities after it, shifted to start at 1 ms). */
function traceFrom(trace: string, from_ms: number, dest: string): string {
  if (from_ms === 0) return trace;
  const t = readFileSync(`${REPO_ROOT}${trace}`, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map(Number)
    .filter((x) => x > from_ms)
    .map((x) => x - from_ms);
  mkdirSync(`${REPO_ROOT}out/e2e`, { recursive: true });
  writeFileSync(`${REPO_ROOT}${dest}`, `${t.join("\n")}\n`);
  return dest;
}

describe.each(TRACES)("playback under a real $family trace", ({ family, trace, from_ms, down_switch }) => {
  it(
    `plays ≥ ${(DURATION_S * 5) / 6} s of media in ${DURATION_S} s, switches with capacity, obeys grants`,
    async () => {
      const out = `out/e2e/play-${family}`;
      const played = traceFrom(trace, from_ms, `out/e2e/play-${family}-trace.mahi`);
      const s = (await onFunctionalEmulator(`play ${family}`, () => runPlay({ trace: played, scheme: "nuwa", duration_s: DURATION_S, out_dir: out }))) as Record<string, unknown> & {
        media_played_s: number;
        switches: number;
        grant_violations: number;
        grant_check: { frames: number };
        estimate_error: { nuwa: number | null; dashjs: number | null; bins: number };
        emulator: { valid: boolean; lateness_ms: unknown; invalid_reasons?: string[] };
        page_errors: string[];
        player_errors: string[];
        queuing_delay_ms: { p95: number };
      };
      console.log(describePlay(s, out));
      // Functional claims, and one comparison of two estimates read at the same instants of the
      // same run against the same log: a run void for measurement only (p99 lateness over 2 ms,
      // under the functional bound) is kept (valid-run.ts).
      expect(functionalEmulatorProblems(s.emulator), "emulator fit for functional claims").toEqual([]);
      expect(s.page_errors).toEqual([]);
      expect(s.player_errors).toEqual([]);
      expect(s.media_played_s).toBeGreaterThanOrEqual((DURATION_S * 5) / 6);
      // The trace's capacity moves by several times within the run; the ABR must follow it.
      expect(s.switches).toBeGreaterThanOrEqual(1);
      if (down_switch) {
        // Where the capacity falls to a tenth, the ABR steps down (the page's completed segments).
        const rungs = (JSON.parse(readFileSync(`${REPO_ROOT}${out}/page.json`, "utf8")) as { chunks: { bitrate_kbps: number }[] }).chunks.map((c) => c.bitrate_kbps);
        expect(rungs.some((r, i) => i > 0 && r < rungs[i - 1]!), `rungs of the completed segments: ${rungs.join(",")}`).toBe(true);
      }
      // Every init segment came with the MPD (the loader's init prefetch, on with the MPC): the server saw
      // none asked for later, though the ABR switched (dash.js alone asks for a rung's init at each switch).
      const reqs: { t_us: number; path: string }[] = [];
      for (const d of readdirSync(`${REPO_ROOT}${out}/server`)) {
        const f = `${REPO_ROOT}${out}/server/${d}/events.jsonl`;
        if (!existsSync(f)) continue;
        for (const line of readFileSync(f, "utf8").split("\n")) {
          const e = line.trim() ? (JSON.parse(line) as { event?: string; time_us?: number; path?: string }) : {};
          if (e.event === "request" && typeof e.path === "string" && typeof e.time_us === "number") reqs.push({ t_us: e.time_us, path: e.path });
        }
      }
      const first_media_us = Math.min(...reqs.filter((r) => /\/seg-/.test(r.path)).map((r) => r.t_us));
      const inits = reqs.filter((r) => /\/init-/.test(r.path));
      expect(new Set(inits.map((r) => r.path)).size, "init segments prefetched").toBeGreaterThan(2);
      expect(inits.filter((r) => r.t_us > first_media_us + 1e6).map((r) => r.path), "init requests after the first media request").toEqual([]);
      expect(s.grant_check.frames).toBeGreaterThan(1000);
      expect(s.grant_violations).toBe(0);
      // Both estimates are read at the same instants of this run and scored on the same bins
      // against the emulator's capacity (play_metrics.estimate_error): Nuwa's must be the closer.
      expect(s.estimate_error.bins).toBeGreaterThan(5);
      expect(Number.isFinite(s.estimate_error.nuwa)).toBe(true);
      expect(Number.isFinite(s.estimate_error.dashjs)).toBe(true);
      expect(s.estimate_error.nuwa!, `Nuwa ${s.estimate_error.nuwa} vs dash.js ${s.estimate_error.dashjs}`).toBeLessThan(s.estimate_error.dashjs!);
    },
    (DURATION_S + 240) * 1000,
  );
});
