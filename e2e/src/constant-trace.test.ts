import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { constantTrace, resolveTraceSpec } from "./constant-trace.js";

describe("constantTrace (./nuwa bulk --trace constant:MBPS)", () => {
  const lines = (p: string) => readFileSync(p, "utf8").trim().split("\n").map(Number);

  it("writes 1500-byte opportunities at the rate, evenly spread over a 3 s loop", () => {
    const dir = mkdtempSync(`${tmpdir()}/const-`);
    const out = constantTrace(10, dir);
    expect(out).toBe(`${dir}/constant-10mbit.mahi`);
    const t = lines(out);
    expect(t.length).toBe(2500); // 10 Mbit/s × 3 s / (1500 × 8 bit)
    expect(t.at(-1)).toBe(3000);
    expect((t.length * 1500 * 8) / 3000).toBeCloseTo(10e6 / 1000, 6); // bits per ms
    const gaps = t.slice(1).map((x, i) => x - t[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(2); // 1.2 ms apart on average, no bursts
    expect(t.filter((x) => x <= 1500).length).toBe(1250); // the first half holds half the packets
  });

  it("resolves constant:MBPS and leaves file paths alone; refuses absurd rates", () => {
    expect(resolveTraceSpec("traces/3G/norway-hsdpa-bus-1.mahi")).toBe("traces/3G/norway-hsdpa-bus-1.mahi");
    expect(resolveTraceSpec("constant:2")).toMatch(/constant-2mbit\.mahi$/);
    expect(() => constantTrace(0)).toThrow(/0\.1\.\.1000/);
  });
});
