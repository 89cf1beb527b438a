import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../e2e/src/procs.js";
import { capacityBins, LogTail, meanRateBps, opportunitiesBetween, PACKET_SIZE_BYTES, parseTrace } from "./link-truth.js";
import { BinStore } from "./store.js";

describe("parseTrace", () => {
  it("reads a trace and its period", () => {
    const t = parseTrace("0\n0\n5\n\n10\n");
    expect(Array.from(t.opportunities_ms)).toEqual([0, 0, 5, 10]);
    expect(t.period_ms).toBe(10);
    expect(meanRateBps(t)).toBeCloseTo((4 * PACKET_SIZE_BYTES * 8 * 1000) / 10, 6);
  });
  it("refuses bad traces, naming the line", () => {
    expect(() => parseTrace("1\nx\n")).toThrow(/:2: malformed/);
    expect(() => parseTrace("5\n3\n")).toThrow(/:2: timestamp 3 is smaller/);
    expect(() => parseTrace("-1\n")).toThrow(/malformed/);
    expect(() => parseTrace("\n\n")).toThrow(/empty trace/);
    expect(() => parseTrace("0\n0\n")).toThrow(/loop period/);
  });
});

describe("capacity", () => {
  it("counts looped opportunities like mahimahi (the last timestamp and the next loop's 0 coincide)", () => {
    const t = parseTrace("0\n3\n10\n"); // loop k: 10k, 10k+3, 10k+10
    expect(opportunitiesBetween(t, 0, 10)).toBe(2); // 0, 3
    expect(opportunitiesBetween(t, 10, 11)).toBe(2); // 10 (end of loop 0) and 10 (start of loop 1)
    expect(opportunitiesBetween(t, 0, 30)).toBe(8); // 0, 3, 10, 10, 13, 20, 20, 23
    expect(opportunitiesBetween(t, 5, 5)).toBe(0);
    expect(capacityBins(t, 10, 10, 2)).toEqual([(3 * PACKET_SIZE_BYTES * 8 * 1000) / 10, (3 * PACKET_SIZE_BYTES * 8 * 1000) / 10]);
    expect(() => capacityBins(t, 0, 0, 1)).toThrow(RangeError);
    expect(() => capacityBins(t, -1, 10, 1)).toThrow(RangeError);
    expect(() => capacityBins(t, 0, 10, 1.5)).toThrow(RangeError);
  });

  it("matches the emulator's own schedule (nuwa_lab.emulator.trace) on a real trace, across the loop", () => {
    const path = `${REPO_ROOT}traces/4G/mahimahi-verizon-lte-short.mahi`;
    const t = parseTrace(readFileSync(path, "utf8"), path);
    const start_ms = t.period_ms - 1000; // spans the wrap-around
    const py = execFileSync(
      `${REPO_ROOT}.venv/bin/python`,
      ["-c", `import json,sys\nfrom nuwa_lab.emulator.trace import load_trace\nt=load_trace(sys.argv[1])\ns=${start_ms}\nprint(json.dumps([len(t.opportunities_between_ms(s+i*200,s+(i+1)*200)) for i in range(10)]))`, path],
      { cwd: REPO_ROOT, encoding: "utf8" },
    );
    const want = (JSON.parse(py) as number[]).map((n) => (n * PACKET_SIZE_BYTES * 8 * 1000) / 200);
    expect(capacityBins(t, start_ms, 200, 10)).toEqual(want);
    expect(want.some((x) => x > 0)).toBe(true);
  });
});

describe("LogTail", () => {
  const log = ["# base timestamp: 1234", "0 + 1200", "0 # 1504", "5 - 1200 5", "150 + 1000", "150 d 1000", "210 - 800 30", "220 - 1400 10", "401 # 1504", ""].join("\n");
  it("bins departures, delays and drops, whatever the chunking", () => {
    for (const cut of [1, 7, 50, log.length]) {
      const t = new LogTail(200);
      for (let i = 0; i < log.length; i += cut) t.feed(log.slice(i, i + cut));
      expect(t.base_timestamp_ms).toBe(1234);
      expect(t.bin(0)).toEqual({ delivered_bytes: 1200, departures: 1, qd_sum_ms: 5, qd_max_ms: 5, drops: 1 });
      expect(t.bin(1)).toEqual({ delivered_bytes: 2200, departures: 2, qd_sum_ms: 40, qd_max_ms: 30, drops: 0 });
      expect(t.completeBefore()).toBe(2); // an event at 401 ms closes bins 0 and 1
    }
  });
  it("keeps a partial line until it is complete", () => {
    const t = new LogTail(200);
    t.feed("10 - 1200 7");
    expect(t.bin(0).departures).toBe(0);
    expect(t.completeBefore()).toBe(0);
    t.feed("\n");
    expect(t.bin(0).qd_max_ms).toBe(7);
  });
  it("refuses a bad bin", () => {
    expect(() => new LogTail(0)).toThrow(RangeError);
  });
});

describe("BinStore", () => {
  it("aligns series on bins, averages per-frame Qd, and keeps the last bins", () => {
    const s = new BinStore(200, 3);
    expect(s.binOf(399.9)).toBe(1);
    s.set("nuwa_mbps", 5, 2);
    s.addQd(6, 10);
    s.addQd(6, 20);
    s.set("capacity_mbps", 7, Number.NaN);
    expect(s.x).toEqual([1, 1.2, 1.4]);
    expect(s.y.nuwa_mbps).toEqual([2, null, null]);
    expect(s.y.qd_page_ms).toEqual([null, 15, null]);
    expect(s.y.capacity_mbps).toEqual([null, null, null]);
    s.set("nuwa_mbps", 9, 3);
    expect(s.x).toEqual([1.4, 1.6, 1.8]);
    expect(s.y.nuwa_mbps).toEqual([null, null, 3]);
    s.set("nuwa_mbps", 2, 1); // dropped already
    expect(s.filled("nuwa_mbps")).toBe(1);
    expect(() => new BinStore(0)).toThrow(RangeError);
  });
});
