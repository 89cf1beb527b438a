import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { burstVariant } from "./burst.js";
import { REPO_ROOT } from "./procs.js";

describe("burstVariant (./nuwa bulk --burst)", () => {
  const src = `${REPO_ROOT}traces/3G/nyc2018-unknownop-3g-subway-cross.mahi`;
  const lines = (p: string) => readFileSync(p, "utf8").trim().split("\n").map(Number);

  it("writes the seeded variant: same opportunities and period, distinct timestamps 20-100 ms apart while the link delivers", () => {
    const dir = mkdtempSync(`${tmpdir()}/burst-`);
    const out = burstVariant(src, "20..100:3", dir);
    expect(out).toBe(`${dir}/nyc2018-unknownop-3g-subway-cross-burst20..100-s3.mahi`);
    const a = lines(src);
    const b = lines(out);
    expect(b.length).toBe(a.length);
    expect(b.at(-1)).toBe(a.at(-1));
    const first10s = [...new Set(b.filter((t) => t <= 10_000))];
    const gaps = first10s.slice(1).map((t, i) => t - first10s[i]!);
    expect(gaps.filter((g) => g >= 20 && g <= 100).length / gaps.length).toBeGreaterThan(0.9);
    expect(readFileSync(burstVariant(src, "20..100:3", dir), "utf8")).toBe(readFileSync(out, "utf8"));
  });

  it("refuses a malformed spec or a failing burstify", () => {
    expect(() => burstVariant(src, "20-100")).toThrow(/MIN\.\.MAX/);
    expect(() => burstVariant(src, "60..100", mkdtempSync(`${tmpdir()}/burst-`))).toThrow(/max >= 2 x min/);
  });
});
