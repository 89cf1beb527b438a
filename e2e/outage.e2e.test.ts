/**
 * Link outage (issue 7, item 4): a bulk download in Chromium through the real
 * Verizon LTE driving trace with its 12.9 s outage (traces/4G/lumos-vzw-lte-
 * driving-50087.mahi, 11.1–24.0 s), scaled to a quarter of its capacity so
 * the 2-core host carries it (every 4th delivery opportunity kept; after the
 * outage the link returns at 7.5, then 17.8, 23.5 Mbit/s). The session must
 * survive (QUIC idle timeout: server 60 s, Chromium's default 30 s; the
 * page's stall watchdog raised above the outage, see docs/RELIABILITY.md),
 * and the controller must use ≥ 80 % of the link within 3 s of its return
 * without overflowing the queue. Every figure comes from the emulator's log
 * (lab/nuwa_lab/outage.py), 250 ms bins.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { type BulkResult, describeBulk, runBulk } from "./src/bulk.js";
import { describePlay, runPlay } from "./src/play.js";
import { PYTHON, REPO_ROOT } from "./src/procs.js";
import { onValidEmulator } from "./src/valid-run.js";

const execFileP = promisify(execFile);
const SOURCE = `${REPO_ROOT}traces/4G/lumos-vzw-lte-driving-50087.mahi`;
const OUT = `${REPO_ROOT}out/e2e/outage`;
const WINDOW_MS = 40_000;
const KEEP_EVERY = 4;
/** The video run, s: the outage (11.1-24.0 s) and 12 s after it (45 s until the nineteenth session). */
const PLAY_S = 36;

interface Recovery {
  outage_s: number;
  outage_end_ms: number;
  time_to_80pct_s: number | null;
  utilization_first_3s: number | null;
  drops_after: number;
  queuing_delay_max_ms_after: number | null;
  bins: { t_s: number; utilization: number | null }[];
}

/** The first 40 s of the trace, every 4th opportunity (a quarter of the capacity, same timing). */
function scaledTrace(path: string): string {
  const t = readFileSync(SOURCE, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map(Number)
    .filter((x) => x <= WINDOW_MS);
  const kept = t.filter((_, i) => i % KEEP_EVERY === KEEP_EVERY - 1);
  if (kept[kept.length - 1] !== WINDOW_MS) kept.push(WINDOW_MS);
  writeFileSync(path, `${kept.join("\n")}\n`);
  return path;
}

describe("12.9 s outage on a real LTE trace", () => {
  let bulk: BulkResult;
  let rec: Recovery;

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    const trace = scaledTrace(`${OUT}-trace.mahi`);
    bulk = await onValidEmulator("outage bulk", () => runBulk({ trace, scheme: "nuwa", duration_s: 30, out_dir: `${OUT}/run`, stall_timeout_ms: 20_000 }));
    console.log(describeBulk(bulk));
    const { stdout } = await execFileP(PYTHON, ["-m", "nuwa_lab.outage", "--log", `${OUT}/run/emulator.log`, "--after-s", "5"], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
    rec = JSON.parse(stdout) as Recovery;
    writeFileSync(`${OUT}/recovery.json`, JSON.stringify(rec, null, 1));
    console.log(
      `outage ${rec.outage_s} s; time to 80 % ${rec.time_to_80pct_s} s; first 3 s ${rec.utilization_first_3s?.toFixed(3)}; drops after ${rec.drops_after}; max Qd after ${rec.queuing_delay_max_ms_after} ms; bins ${rec.bins
        .slice(0, 16)
        .map((b) => b.utilization?.toFixed(2))
        .join(" ")}`,
    );
  });

  it("the session survives the outage (no page error, data before and after)", () => {
    expect(bulk.page.error).toBeNull();
    expect(rec.outage_s).toBeGreaterThanOrEqual(10);
    const after = rec.bins.filter((b) => b.t_s >= 3).map((b) => b.utilization ?? 0);
    expect(Math.max(...after)).toBeGreaterThan(0.5);
  });

  // Issue 7's target. The server's ceiling restarts slow start on each of the three ways aioquic
  // shows an outage (persistent congestion, losses found seconds after sending, Cubic's 2 s idle
  // reset; ceiling.py): 0.75–1.0 s in every run since (docs/RELIABILITY.md), 4.25 s before.
  it("after the link returns, ≥ 80 % utilization within 3 s (250 ms bins, emulator log)", () => {
    console.log(`time to 80 % utilization after the outage: ${rec.time_to_80pct_s} s (target ≤ 3 s)`);
    expect(rec.time_to_80pct_s).not.toBeNull();
    expect(rec.time_to_80pct_s!).toBeLessThanOrEqual(3);
  });

  it("no burst that overflows the queue when the link returns", () => {
    expect(rec.drops_after).toBe(0);
    expect(bulk.emulator.valid).toBe(true);
  });
});

describe("video through the 12.9 s outage (issue 7, item 4: the player rides on its buffer)", () => {
  it("keeps the session, plays from its buffer into the outage, and resumes when the link returns", async () => {
    mkdirSync(OUT, { recursive: true });
    const trace = scaledTrace(`${OUT}-play-trace.mahi`);
    const out = `${OUT}/play`;
    const s = (await runPlay({ trace, scheme: "nuwa", duration_s: PLAY_S, out_dir: out })) as Record<string, unknown> & {
      media_played_s: number;
      rebuffer_s: number;
      rebuffer_count: number;
      page_errors: string[];
      player_errors: string[];
      grant_violations: number;
    };
    console.log(describePlay(s, out));
    expect(s.page_errors).toEqual([]);
    expect(s.player_errors).toEqual([]);
    expect(s.grant_violations).toBe(0);
    // The link is dark from 11.1 s to 24.0 s. Without a buffer the player would stall for all of it;
    // riding on its buffer, it stalls for less (the buffer it had at 11 s plays first).
    expect(s.rebuffer_s).toBeLessThan(12.9);
    // It resumes after the link returns (12 s of link time are left after the outage).
    expect(s.media_played_s).toBeGreaterThan(PLAY_S - 12.9 - 6);
    // At most one rebuffer (the outage itself), and no segment lost: the completed video downloads
    // cover every position from the first on (the page's log, as faults.e2e's harness checks it).
    expect(s.rebuffer_count).toBeLessThanOrEqual(1);
    const page = JSON.parse(readFileSync(`${out}/page.json`, "utf8")) as { chunks: { index: number }[] };
    const got = new Set(page.chunks.map((c) => c.index));
    const missing = [...Array(Math.max(...got) + 1).keys()].filter((i) => !got.has(i));
    expect(got.size, "completed video segments").toBeGreaterThan(10);
    expect(missing, `video segments completed: ${[...got].sort((a, b) => a - b).join(",")}`).toEqual([]);
  });
});
