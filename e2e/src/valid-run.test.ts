import { describe, expect, it } from "vitest";
import { COMPARISON_LATENESS_SHARE, comparisonEmulatorProblems, FUNCTIONAL_P99_LATENESS_MS, functionalEmulatorProblems, onFunctionalEmulator, onValidEmulator } from "./valid-run.js";

const run = (valids: boolean[]) => {
  let calls = 0;
  return {
    fn: async () => ({ emulator: { valid: valids[calls++] ?? false, invalid_reasons: ["p99 lateness 2.21 ms > 2.0 ms"] }, n: calls }),
    calls: () => calls,
  };
};

describe("onValidEmulator: an invalid emulator run is measured again, once", () => {
  it("a valid first run is kept, with no second measurement", async () => {
    const r = run([true]);
    const lines: string[] = [];
    const out = await onValidEmulator("x", r.fn, 2, (l) => lines.push(l));
    expect(out.n).toBe(1);
    expect(r.calls()).toBe(1);
    expect(lines).toEqual([]);
  });

  it("an invalid first run is replaced by the second, and the retry is printed with its reason", async () => {
    const r = run([false, true]);
    const lines: string[] = [];
    const out = await onValidEmulator("play 3G", r.fn, 2, (l) => lines.push(l));
    expect(out.n).toBe(2);
    expect(out.emulator.valid).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("play 3G");
    expect(lines[0]).toContain("p99 lateness 2.21 ms");
  });

  it("two invalid runs: the last is returned invalid, so the caller's assertion fails", async () => {
    const r = run([false, false, true]);
    const out = await onValidEmulator("x", r.fn, 2, () => {});
    expect(r.calls()).toBe(2);
    expect(out.emulator.valid).toBe(false);
  });

  it("refuses a number of tries below one", async () => {
    await expect(onValidEmulator("x", run([true]).fn, 0)).rejects.toThrow(RangeError);
  });
});

describe("functionalEmulatorProblems: what voids a run even for functional claims", () => {
  it("a valid run, or one void only for a lateness under the functional bound, has none", () => {
    expect(functionalEmulatorProblems({ valid: true, lateness_ms: { p99: 0.4 }, invalid_reasons: [] })).toEqual([]);
    expect(functionalEmulatorProblems({ valid: false, lateness_ms: { p99: 7.79 }, invalid_reasons: ["p99 lateness 7.79 ms > 2.0 ms"] })).toEqual([]);
  });

  it("a lateness over the functional bound, a failed log check or no summary are listed", () => {
    const late = FUNCTIONAL_P99_LATENESS_MS + 0.5;
    expect(functionalEmulatorProblems({ valid: false, lateness_ms: { p99: late }, invalid_reasons: [`p99 lateness ${late} ms > 2.0 ms`] })).toEqual([`p99 lateness ${late} ms > ${FUNCTIONAL_P99_LATENESS_MS} ms (functional bound)`]);
    expect(functionalEmulatorProblems({ valid: false, lateness_ms: { p99: 0.3 }, invalid_reasons: ["log check replay_mismatches = 2"] })).toEqual(["log check replay_mismatches = 2"]);
    expect(functionalEmulatorProblems(null)).toEqual(["no emulator summary"]);
    // an invalid summary that does not say why cannot be told from one whose log failed its checks
    expect(functionalEmulatorProblems({ valid: false, lateness_ms: { p99: 3 } })).toEqual(["the emulator summary is invalid and gives no reasons"]);
    expect(functionalEmulatorProblems({ valid: false, lateness_ms: { p99: null }, invalid_reasons: [] })).toHaveLength(1);
  });
});

describe("onFunctionalEmulator: a run is measured again only when unfit for functional claims", () => {
  const runs = (emulators: object[]) => {
    let calls = 0;
    return { fn: async () => ({ emulator: emulators[calls++] as { valid: boolean }, n: calls }), calls: () => calls };
  };
  const slow = { valid: false, lateness_ms: { p99: 4.03 }, invalid_reasons: ["p99 lateness 4.03 ms > 2.0 ms"] };
  const broken = { valid: false, lateness_ms: { p99: 0.2 }, invalid_reasons: ["log check delay_mismatches = 1"] };

  it("keeps a run void for measurement only, says so, and does not measure again", async () => {
    const r = runs([slow, { valid: true, lateness_ms: { p99: 0.2 }, invalid_reasons: [] }]);
    const lines: string[] = [];
    const out = await onFunctionalEmulator("play hls.js", r.fn, 3, (l) => lines.push(l));
    expect(r.calls()).toBe(1);
    expect(out.n).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("void for measurement only");
    expect(lines[0]).toContain("4.03");
  });

  it("measures again after a failed log check, up to `tries`, and returns the last", async () => {
    const r = runs([broken, broken, broken]);
    const lines: string[] = [];
    const out = await onFunctionalEmulator("x", r.fn, 2, (l) => lines.push(l));
    expect(r.calls()).toBe(2);
    expect(out.n).toBe(2);
    expect(lines[0]).toContain("delay_mismatches");
    expect(functionalEmulatorProblems(out.emulator)).not.toEqual([]);
  });

  it("refuses a number of tries below one", async () => {
    await expect(onFunctionalEmulator("x", runs([slow]).fn, 0)).rejects.toThrow(RangeError);
  });
});

describe("comparisonEmulatorProblems: a void run that still decides a wide comparison", () => {
  const late = (p99: number, max: number) => ({ valid: false, lateness_ms: { p99, max }, invalid_reasons: [`p99 lateness ${p99} ms > 2.0 ms`] });

  it("the CI's quick runs (Nuwa p99 2.24 ms at p95 102 ms; Cubic 7.72 ms at p95 1168 ms; gaps of 1000 ms) and valid runs have none", () => {
    expect(comparisonEmulatorProblems(late(2.24, 7.541), 102, 1021)).toEqual([]);
    expect(comparisonEmulatorProblems(late(7.72, 21.2), 1168, 1071)).toEqual([]);
    expect(comparisonEmulatorProblems({ valid: true, lateness_ms: { p99: 9, max: 50 }, invalid_reasons: [] }, 10, -5)).toEqual([]);
  });

  it("a lateness over the run's share, over the functional cap, a gap the lateness could close, or a failed log check are listed", () => {
    expect(COMPARISON_LATENESS_SHARE).toBe(0.05);
    expect(comparisonEmulatorProblems(late(12.44, 30), 100, 1000)).toEqual(["p99 lateness 12.44 ms > 5 ms (comparison bound: 0.05 × the run's p95 100 ms)"]);
    expect(comparisonEmulatorProblems(late(20.5, 40), 2000, 1000)).toEqual([`p99 lateness 20.5 ms > ${FUNCTIONAL_P99_LATENESS_MS} ms (functional bound)`]);
    expect(comparisonEmulatorProblems(late(19.9, 40), 2000, 1000)).toEqual([]); // 0.05 × 2000 = 100, capped at the functional 20
    expect(comparisonEmulatorProblems(late(2.5, 30), 100, 30)).toEqual(["largest lateness 30 ms not below the comparison's gap 30 ms"]);
    expect(comparisonEmulatorProblems(late(2.5, 3), 100, -100)).toHaveLength(1); // Nuwa above Cubic: nothing to rescue
    expect(comparisonEmulatorProblems(late(2.5, 3), 100, Number.NaN)).toHaveLength(1);
    expect(comparisonEmulatorProblems(late(2.5, 3), Number.NaN, 1000)).toHaveLength(1);
    expect(comparisonEmulatorProblems({ valid: false, lateness_ms: { p99: 2.5 }, invalid_reasons: ["p99 lateness 2.5 ms > 2.0 ms"] }, 100, 1000)).toEqual(["largest lateness Infinity ms not below the comparison's gap 1000 ms"]);
    expect(comparisonEmulatorProblems({ valid: false, lateness_ms: { p99: 0.3, max: 1 }, invalid_reasons: ["log check replay_mismatches = 2"] }, 100, 1000)).toEqual(["log check replay_mismatches = 2"]);
    expect(comparisonEmulatorProblems(null, 100, 1000)).toEqual(["no emulator summary"]);
  });
});
