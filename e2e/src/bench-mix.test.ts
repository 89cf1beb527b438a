import { describe, expect, it } from "vitest";
import { mixArgs, parseMixPairs, planMix } from "./bench-mix.js";
import { batchPlan, type CellDone, E2E_CELL_CPUS, mixCell, mixRecordOf, simCell, submissionOrder } from "./cells.js";

const base = { queue_packets: 1000, duration_s: 60, start_gap_s: 5, delay_ms: 25, cc: { target_delay_ms: 30 } };

describe("mixed-flow runs in ./nuwa bench (issue 18 item 4)", () => {
  it("parses flow lists and refuses a lone flow or an unknown scheme", () => {
    expect(parseMixPairs("nuwa:cubic,nuwa:bbr:cubic")).toEqual([
      ["nuwa", "cubic"],
      ["nuwa", "bbr", "cubic"],
    ]);
    expect(() => parseMixPairs("nuwa")).toThrow(/one flow/);
    expect(() => parseMixPairs("nuwa:vegas")).toThrow(/unknown scheme 'vegas'/);
  });

  it("plans flows × links × switch policies with ids that name them", () => {
    const plan = planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["none", "rule"], links: [{ mbps: 10 }, { trace: "traces/4G/t.mahi", name: "t-lte" }] });
    expect(plan.map((s) => s.id)).toEqual(["mix-nuwa+cubic-10mbps-q1000-none", "mix-nuwa+cubic-10mbps-q1000-rule", "mix-nuwa+cubic-t-lte-q1000-none", "mix-nuwa+cubic-t-lte-q1000-rule"]);
    expect(planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["dqn"], links: [{ mbps: 10 }] }).map((s) => s.id)).toEqual(["mix-nuwa+cubic-10mbps-q1000-dqn"]);
    expect(() => planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["ppo"], links: [{ mbps: 10 }] })).toThrow(/unknown policy 'ppo'/);
    expect(() => planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["none"], links: [{ mbps: 0 }] })).toThrow(/> 0/);
  });

  it("runs ./nuwa mix's command with the run's settings, its files under <out>/mix/<id>", () => {
    const [constant, trace] = planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["rule"], links: [{ mbps: 10 }, { trace: "traces/4G/t.mahi", name: "t" }] });
    const a = mixArgs(constant!, "/o/mix/x");
    const opt = (k: string) => a[a.indexOf(k) + 1];
    expect(a.slice(0, 2)).toEqual(["-m", "nuwa_lab.mix"]);
    expect([opt("--flows"), opt("--switch"), opt("--link-mbps"), opt("--queue-packets"), opt("--duration"), opt("--start-gap-s"), opt("--json")]).toEqual(["nuwa,cubic", "rule", "10", "1000", "60", "5", "/o/mix/x/result.json"]);
    expect(JSON.parse(opt("--cc")!)).toEqual({ target_delay_ms: 30 });
    expect(a).not.toContain("--trace");
    const b = mixArgs(trace!, "/o/mix/y");
    expect(b[b.indexOf("--trace") + 1]).toBe("traces/4G/t.mahi");
    expect(b).not.toContain("--link-mbps");
  });

  it("a mixed run is an end-to-end cell: all of this machine's CPUs, never batched, handed to Ray with the runs", () => {
    const [spec] = planMix({ ...base, runs: [["nuwa", "cubic"]], switches: ["none"], links: [{ mbps: 10 }] });
    const m = mixCell(spec!, "/o");
    expect(m.num_cpus).toBe(E2E_CELL_CPUS);
    const small = [simCell("s1", [])];
    expect(batchPlan([small[0]!, m])).toEqual([[1], [0]]); // the mixed run alone, the small simulator cell in a batch of its own
    expect(submissionOrder([small[0]!, m]).map((c) => c.id)).toEqual([m.id, "s1"]);
    const failed: CellDone = { index: 0, id: m.id, ok: false, result: null, error: "boom", start_s: 0, end_s: 1, wall_s: 1, node: "n" };
    expect(mixRecordOf(m, failed)).toMatchObject({ error: "cell process failed: boom", plot: null, json: `mix/${m.id}/result.json` });
    expect(() => mixRecordOf(small[0]!, failed)).toThrow(/not a mixed-flow cell/);
  });
});
