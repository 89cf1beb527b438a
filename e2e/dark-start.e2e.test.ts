/**
 * Runs that do not fall over (issue 13 item 5): a bulk download on a trace
 * that starts dark and goes dark again for 10 s must end with a result, not
 * with "session closed during the request" (Chromium's blackhole detection,
 * or the page's stall watchdog, ending the session during the dark stretch).
 * The page reconnects as the player does (SessionManager) and resumes the
 * download; the bulk JSON reports `reconnects` and `disconnected_s`.
 *
 * The trace is made here from traces/3G/norway-hsdpa-bus-1.mahi (Mahimahi
 * format: one delivery opportunity per line, ms): every opportunity shifted
 * 1.5 s later (no capacity in the first 1.5 s), those falling in
 * [6.5 s, 16.5 s) removed (a 10 s dark stretch), cut at 40 s (the period).
 * The page's stall watchdog is set to the player's 4 s (DEFAULT_STALL_TIMEOUT_MS):
 * a page that cannot reconnect loses its session there.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type BulkResult, describeBulk, runBulk } from "./src/bulk.js";
import { REPO_ROOT } from "./src/procs.js";

const SOURCE = `${REPO_ROOT}traces/3G/norway-hsdpa-bus-1.mahi`;
const OUT = `${REPO_ROOT}out/e2e/dark-start`;
const DARK_START_MS = 1500;
const DARK_FROM_MS = 6500;
const DARK_TO_MS = 16_500;
const PERIOD_MS = 40_000;

/** The dark-start variant of SOURCE (see the file comment); returns its path. */
function darkTrace(path: string): string {
  const t = readFileSync(SOURCE, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => Number(l) + DARK_START_MS)
    .filter((x) => x <= PERIOD_MS && (x < DARK_FROM_MS || x >= DARK_TO_MS));
  if (t[t.length - 1] !== PERIOD_MS) t.push(PERIOD_MS);
  writeFileSync(path, `${t.join("\n")}\n`);
  return path;
}

describe("bulk download on a trace that starts dark and goes dark for 10 s", () => {
  let r: BulkResult;
  let page: { send_us: number[]; disconnections: unknown[] };
  let t0_ms: number;

  beforeAll(async () => {
    mkdirSync(`${REPO_ROOT}out/e2e`, { recursive: true });
    const trace = darkTrace(`${OUT}-trace.mahi`);
    r = await runBulk({ trace, scheme: "nuwa", duration_s: 25, out_dir: `${OUT}/run`, stall_timeout_ms: 4000 });
    console.log(describeBulk(r));
    page = JSON.parse(readFileSync(`${OUT}/run/page.json`, "utf8"));
    t0_ms = JSON.parse(readFileSync(`${OUT}/run/emulator.log.meta.json`, "utf8")).base_timestamp_ms;
  });

  it("finishes with a result and resumes after the dark stretch", () => {
    expect(r.page.error).toBeNull();
    expect(r.utilization).toBeGreaterThan(0);
    // frames sent after the link came back reached the page (server stamps, emulator time base)
    const after = page.send_us.filter((s) => s / 1000 + 25 - t0_ms > DARK_TO_MS).length;
    expect(after).toBeGreaterThan(100);
  });

  it("reports the gaps: reconnects and disconnected_s, consistent with the page's log", () => {
    expect(r.sessions).toBeGreaterThanOrEqual(1);
    expect(r.reconnects).toBeLessThanOrEqual(page.disconnections.length);
    expect(r.sessions).toBeGreaterThanOrEqual(1 + r.reconnects);
    if (r.reconnects > 0) {
      expect(r.disconnected_s).toBeGreaterThan(0);
      expect(r.disconnected_s).toBeLessThan(25);
    } else expect(r.disconnected_s).toBe(0);
  });
});
