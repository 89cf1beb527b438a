/**
 * Load, CI version (issue 7, item 7; issue 13 item 4): one aioquic server
 * process, 10 Nuwa receivers (the Python load client, decisions by the real
 * @nuwa/cc controller over JSON lines) sharing one emulated 12 Mbit/s
 * bottleneck for 30 s (1.2 Mbit/s a session, as in the 20-session long run),
 * Jain's index over 10–30 s. Issue 7 puts the 20-session run behind a flag and
 * the fast form in CI; CI had 20 sessions on 24 Mbit/s until that shape stopped
 * fitting the 2-core host: server, load client, emulator and Node bridge need
 * about 1.9 cores there, so when the host gives less the clients' frames reach
 * their controllers late, the controllers read that lag as queuing delay, and
 * the run measures the CPU (a CI run: 0.36 of the link, bridge lag p50 12.8 ms,
 * three measurements all void). Measured here in one sitting (2026-11-26,
 * `python -m nuwa_lab.load --sessions N --duration 30 --fair-from-s 10
 * --link-mbps R`): 20 on 24: Jain 0.976, 0.34 of the link, lag p50 16.6 ms
 * (void); 10 on 12, twice: Jain 0.987 / 0.963, 0.96 / 0.89 of the link, lag
 * 2.8 / 4.5 ms. The load tool reports a lagging client as `instrument.valid`
 * false (lab/nuwa_lab/load/common.py); such a run is void and measured again,
 * up to twice, like an emulator that could not keep time. The long run (20
 * sessions, 60 s) is behind NUWA_LONG. Figures come from the workers' receive
 * counts, the server's /proc entries and its session summaries, and the emulator.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { PYTHON, REPO_ROOT } from "./src/procs.js";

const execFileP = promisify(execFile);
const OUT = `${REPO_ROOT}out/e2e/load`;

interface LoadResult {
  ok: boolean;
  sessions: number;
  errors: string[];
  jain_index: number;
  goodput_bps: { total: number; min: number; per_session: number[] };
  link_bps: number;
  server: { peak_rss_kb: number; rss_kb_samples: [number, number][] };
  server_sessions: { sessions: number; grant_violations: number; grants_accepted: number };
  emulator: { valid: boolean };
  bridge_lag_us: { p50: number; p99: number }[];
  instrument: { valid: boolean; invalid_reasons: string[] };
  host: { loadavg: number[] };
}

const SESSIONS = 10;
const LINK_MBPS = 12;

describe(`load: ${SESSIONS} Nuwa sessions, one server, one bottleneck`, () => {
  let r: LoadResult;
  let exit_code = 0;

  const measure = async (): Promise<void> => {
    exit_code = 0;
    try {
      await execFileP(PYTHON, ["-m", "nuwa_lab.load", "--sessions", String(SESSIONS), "--duration", "30", "--fair-from-s", "10", "--link-mbps", String(LINK_MBPS), "--out", OUT, "--json", `${OUT}/result.json`], {
        cwd: REPO_ROOT,
        maxBuffer: 16 << 20,
      });
    } catch (e) {
      exit_code = (e as { code?: number }).code ?? -1; // 1: a check failed; the assertions below say which
      if (exit_code !== 1) throw e;
    }
    r = JSON.parse(readFileSync(`${OUT}/result.json`, "utf8")) as LoadResult;
  };

  beforeAll(async () => {
    await measure();
    // Up to two more measurements while the run is void (≈ 40 s each, only when it happens).
    for (let i = 2; i <= 3 && (!r.instrument.valid || !r.emulator.valid); i++) {
      console.log(`load: this measurement is void (${[...r.instrument.invalid_reasons, ...(r.emulator.valid ? [] : ["the emulator could not keep time"])].join("; ")}); measuring again (${i} of 3)`);
      await measure();
    }
    const lag = r.bridge_lag_us.map((b) => `${(b.p50 / 1000).toFixed(1)}/${(b.p99 / 1000).toFixed(1)}`).join(", ");
    console.log(
      `load: Jain ${r.jain_index.toFixed(3)}, goodput ${(r.goodput_bps.total / 1e6).toFixed(2)} Mbit/s (${(r.goodput_bps.total / r.link_bps).toFixed(2)} of the link), peak RSS ${(r.server.peak_rss_kb / 1024).toFixed(1)} MiB, errors ${r.errors.length}, bridge lag p50/p99 ${lag} ms, load ${(r.host.loadavg[0] ?? Number.NaN).toFixed(2)}`,
    );
  });

  it("every session served, no errors, grants obeyed", () => {
    expect(r.sessions).toBe(SESSIONS);
    expect(r.errors).toEqual([]);
    expect(r.server_sessions.sessions).toBe(SESSIONS);
    expect(r.server_sessions.grants_accepted).toBeGreaterThan(SESSIONS * 100);
    expect(r.server_sessions.grant_violations).toBe(0);
    for (const g of r.goodput_bps.per_session) expect(g).toBeGreaterThan(0);
  });

  it("the bottleneck is used (≥ 75 % of the link in frame bytes after 10 s)", (ctx) => {
    // Judged on a run whose load clients kept up. When all three measurements were void by the
    // instrument (a clean-clone CI host: bridge lag p50 10 ms, 0.67 of the link; here the same
    // run reads 2.3 ms and 0.95), the clients' late receive stamps are queuing delay to their
    // controllers, so the figure measures the host: it is printed and the claim not judged.
    // (Lowering the load instead does not work: 10 sessions on 6 Mbit/s gave Jain 0.874 here.)
    const share = r.goodput_bps.total / r.link_bps;
    if (!r.instrument.valid) {
      console.log(`load: utilization NOT JUDGED on this host: ${share.toFixed(3)} of the link with the load clients starved (${r.instrument.invalid_reasons.join("; ")}) in 3 measurements`);
      ctx.skip();
    }
    expect(share, "share of the link").toBeGreaterThan(0.75);
  });

  it("server memory is bounded (peak RSS < 200 MiB, no growth in the second half)", () => {
    expect(r.server.peak_rss_kb).toBeLessThan(200 * 1024);
    const s = r.server.rss_kb_samples;
    const mid = s[Math.floor(s.length / 2)]![1];
    expect(s[s.length - 1]![1]).toBeLessThan(mid * 1.25);
  });

  it("equal-demand sessions share fairly (Jain's index ≥ 0.9 over 10–30 s)", () => {
    console.log(`Jain's fairness index over 10–30 s: ${r.jain_index.toFixed(3)} (target ≥ 0.9)`);
    expect(r.jain_index).toBeGreaterThanOrEqual(0.9);
    expect(exit_code).toBe(0);
  });
});

// The long run of issue 7, item 7, behind a flag (about 70 s; last result in docs/RELIABILITY.md):
// NUWA_LONG=1 node_modules/.bin/vitest run -c e2e/vitest.config.ts e2e/load.e2e.test.ts
describe.runIf(process.env.NUWA_LONG === "1")("load, long: 20 Nuwa sessions for 60 s, one server, one 24 Mbit/s bottleneck", () => {
  it("no errors, grants obeyed, memory bounded, Jain's index ≥ 0.9 after 10 s", async () => {
    const out = `${OUT}-long`;
    let code = 0;
    try {
      await execFileP(PYTHON, ["-m", "nuwa_lab.load", "--sessions", "20", "--duration", "60", "--fair-from-s", "10", "--out", out, "--json", `${out}/result.json`], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
    } catch (e) {
      code = (e as { code?: number }).code ?? -1;
      if (code !== 1) throw e;
    }
    const l = JSON.parse(readFileSync(`${out}/result.json`, "utf8")) as LoadResult;
    console.log(`load long: Jain ${l.jain_index.toFixed(3)}, goodput ${(l.goodput_bps.total / 1e6).toFixed(2)} Mbit/s, peak RSS ${(l.server.peak_rss_kb / 1024).toFixed(1)} MiB, errors ${l.errors.length}`);
    expect(l.sessions).toBe(20);
    expect(l.errors).toEqual([]);
    expect(l.server_sessions.grant_violations).toBe(0);
    expect(l.server.peak_rss_kb).toBeLessThan(200 * 1024);
    expect(l.jain_index).toBeGreaterThanOrEqual(0.9);
    expect(code).toBe(0);
  }, 180_000);
});
