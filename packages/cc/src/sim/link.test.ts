import { describe, expect, it } from "vitest";
import { TraceLink } from "./link.js";
import { constantRateTrace, parseMahimahiTrace, traceMeanBps } from "./trace.js";

describe("TraceLink (Mahimahi link_queue.cc semantics)", () => {
  it("serves 1504 bytes per opportunity, carrying big packets and passing surplus on", () => {
    const link = new TraceLink<number>(Uint32Array.from([1, 2, 3, 10]));
    link.enqueue(0, 2000, 1); // needs two opportunities
    link.enqueue(0, 500, 2);
    link.enqueue(0, 1000, 3);
    const d = link.service(3);
    expect(d.map((x) => [x.data, x.depart_ms])).toEqual([
      [1, 2],
      [2, 2],
      [3, 3],
    ]);
  });

  it("wastes opportunities on an empty queue and loops the schedule", () => {
    const link = new TraceLink<number>(Uint32Array.from([5, 10]));
    expect(link.service(10)).toHaveLength(0);
    expect(link.capacity_bytes).toBe(2 * 1504);
    link.enqueue(11, 1500, 1);
    expect(link.service(14)).toHaveLength(0);
    expect(link.service(15)[0]!.depart_ms).toBe(15); // 10 + 5: the next loop
  });

  it("drops at the tail when full", () => {
    const link = new TraceLink<number>(Uint32Array.from([1000]), 2);
    expect([link.enqueue(0, 100, 1), link.enqueue(0, 100, 2), link.enqueue(0, 100, 3)]).toEqual([true, true, false]);
    expect(link.dropped_packets).toBe(1);
  });

  it("parses traces and reports bad lines", () => {
    expect(Array.from(parseMahimahiTrace("1\n1\n5\n"))).toEqual([1, 1, 5]);
    expect(() => parseMahimahiTrace("")).toThrow(/empty/);
    expect(() => parseMahimahiTrace("1\nx\n")).toThrow(/line 2/);
    expect(() => parseMahimahiTrace("5\n3\n")).toThrow(/line 2/);
    expect(traceMeanBps(constantRateTrace(12e6))).toBeCloseTo(12e6, -5);
  });
});
