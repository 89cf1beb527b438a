/**
 * Real DASH playback through Nuwa (issue 4, "End-to-end tests"): ffmpeg-made
 * content, the aioquic server, the trace-driven emulator (25 ms each way,
 * 1000-packet drop-tail) and headless Chromium playing with dash.js for 60 s,
 * under one 3G and one 4G trace from the repo. Capacity, queuing delay and
 * grant obedience come from the emulator's and the server's logs
 * (play_metrics.py), not from the page's own word. Nuwa's estimate error must be
 * below dash.js's own, both read at the same instants of the same run.
 */
import { describe, expect, it } from "vitest";
import { describePlay, runPlay } from "./src/play.js";
import { onValidEmulator } from "./src/valid-run.js";

const DURATION_S = Number(process.env.NUWA_E2E_PLAY_S ?? 60);
const TRACES = [
  { family: "3G", trace: "traces/3G/norway-hsdpa-bus-1.mahi" },
  { family: "4G", trace: "traces/4G/mahimahi-verizon-lte-short.mahi" },
];

describe.each(TRACES)("playback under a real $family trace", ({ family, trace }) => {
  it(
    `plays ≥ ${(DURATION_S * 5) / 6} s of media in ${DURATION_S} s, switches with capacity, obeys grants`,
    async () => {
      const out = `out/e2e/play-${family}`;
      const s = (await onValidEmulator(`play ${family}`, () => runPlay({ trace, scheme: "nuwa", duration_s: DURATION_S, out_dir: out }))) as Record<string, unknown> & {
        media_played_s: number;
        switches: number;
        grant_violations: number;
        grant_check: { frames: number };
        estimate_error: { nuwa: number | null; dashjs: number | null; bins: number };
        emulator: { valid: boolean; lateness_ms: unknown };
        page_errors: string[];
        player_errors: string[];
        queuing_delay_ms: { p95: number };
      };
      console.log(describePlay(s, out));
      expect(s.emulator.valid, `emulator lateness ${JSON.stringify(s.emulator.lateness_ms)}`).toBe(true);
      expect(s.page_errors).toEqual([]);
      expect(s.player_errors).toEqual([]);
      expect(s.media_played_s).toBeGreaterThanOrEqual((DURATION_S * 5) / 6);
      // The trace's capacity moves by several times within a minute; the ABR must follow it.
      expect(s.switches).toBeGreaterThanOrEqual(1);
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
