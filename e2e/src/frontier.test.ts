import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { computeFrontiers, traceName } from "./frontier.js";

describe("frontier JSON (./nuwa frontier, bench's frontier.json)", () => {
  it("writes points, envelope and the p95 at 0.90 / 0.95 per trace; null where not reached", () => {
    const dir = mkdtempSync(join(tmpdir(), "frontier-"));
    // 10 opportunities at one instant every 200 ms: every packet waits 50 + h ms (sim/frontier.test.ts)
    const bursts = join(dir, "bursts.mahi");
    writeFileSync(bursts, "200\n".repeat(10));
    const out = computeFrontiers([{ name: traceName(bursts), path: bursts }], { duration_s: 6, headrooms_ms: [0, 20], families: ["window"] });
    const t = out.traces.bursts!;
    expect(t.points.map((p) => [p.headroom_ms, p.p95_ms])).toEqual([
      [0, 50],
      [20, 70],
    ]);
    expect(t.envelope.map((p) => p.headroom_ms)).toEqual([0]); // h = 20: same utilization, more delay
    expect(t.p95_at_utilization_ms).toEqual({ "0.9": 50, "0.95": 50 });
    expect(t.p95_at_utilization_ms_by_family).toEqual({ window: { "0.9": 50, "0.95": 50 } });
    expect(out.queue_packets).toBe(1000);
    // both families by default, each point labelled
    const both = computeFrontiers([{ name: "b", path: bursts }], { duration_s: 6, headrooms_ms: [10] });
    expect(both.traces.b!.points.map((p) => p.family)).toEqual(["window", "paced"]);
    expect(Object.keys(both.traces.b!.p95_at_utilization_ms_by_family)).toEqual(["window", "paced"]);
    // a trace that never gets to 0.9: 200 ms on / 100 ms off, h ≤ 20 (utilization 0.75)
    const onoff = join(dir, "onoff.mahi");
    writeFileSync(onoff, `${Array.from({ length: 200 }, (_, i) => i + 1).join("\n")}\n300\n`);
    const o2 = computeFrontiers([{ name: "onoff", path: onoff }], { duration_s: 8, headrooms_ms: [0, 20], families: ["window"] });
    expect(o2.traces.onoff!.p95_at_utilization_ms["0.9"]).toBeNull();
    expect(() =>
      computeFrontiers(
        [
          { name: "x", path: bursts },
          { name: "x", path: bursts },
        ],
        { duration_s: 5, headrooms_ms: [0] },
      ),
    ).toThrow(/two traces named x/);
    expect(() => computeFrontiers([{ name: "y", path: join(dir, "missing.mahi") }])).toThrow(/missing\.mahi/);
  });

  it("with causal: each trace's causal grid and envelope, kept out of the frontier's envelope", () => {
    const dir = mkdtempSync(join(tmpdir(), "frontier-"));
    const bursts = join(dir, "bursts.mahi");
    writeFileSync(bursts, "200\n".repeat(10));
    const plain = computeFrontiers([{ name: "b", path: bursts }], { duration_s: 6, headrooms_ms: [0], families: ["window"] });
    expect(plain.causal).toBeUndefined();
    expect(plain.traces.b!.causal).toBeUndefined();
    const out = computeFrontiers([{ name: "b", path: bursts }], { duration_s: 6, headrooms_ms: [0], families: ["window"], causal: true });
    const c = out.traces.b!.causal!;
    expect(out.causal!.lookbacks_ms.length * out.causal!.quantiles.length * out.causal!.headrooms_ms.length).toBe(c.points.length);
    expect(c.points.every((p) => p.family === "causal" && p.lookback_ms !== undefined && p.quantile !== undefined)).toBe(true);
    expect(c.envelope.length).toBeGreaterThan(0);
    expect(Object.keys(c.p95_at_utilization_ms)).toEqual(["0.9", "0.95"]);
    // the frontier itself is unchanged by the causal grid
    expect(out.traces.b!.envelope).toEqual(plain.traces.b!.envelope);
    expect(out.traces.b!.points.every((p) => p.family === "window")).toBe(true);
  });
});
