import { describe, expect, it } from "vitest";
import { onValidEmulator } from "./valid-run.js";

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
