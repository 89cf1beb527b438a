import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TraceLink } from "./link.js";
import { constantRateTrace, MAHIMAHI_PACKET_BYTES, parseMahimahiTrace, traceMeanBps } from "./trace.js";

interface LinkVector {
  name: string;
  trace_ms: number[];
  queue_packets: number | null;
  queue_bytes: number | null;
  arrivals: [number, number, string][];
  until_ms: number;
  expected: { departures: [string, number][]; drops: string[]; opportunities: number };
}

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

  it("served bytes count a packet's part sent so far: a window's rise never exceeds its capacity", () => {
    const link = new TraceLink<number>(Uint32Array.from([1, 2, 3, 10]));
    link.enqueue(0, 2000, 1); // 1504 bytes of it leave at 1 ms, the rest at 2 ms
    link.service(1);
    expect([link.delivered_bytes, link.served_bytes, link.capacity_bytes]).toEqual([0, 1504, 1504]);
    const [cap0, del0, srv0] = [link.capacity_bytes, link.delivered_bytes, link.served_bytes];
    link.service(2); // the window from 1 ms: one opportunity, the packet's last 496 bytes
    expect(link.delivered_bytes - del0).toBe(2000); // the whole packet: more than the window carried
    expect(link.served_bytes - srv0).toBe(496);
    expect(link.served_bytes - srv0).toBeLessThanOrEqual(link.capacity_bytes - cap0);
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

// Shared with lab/tests/test_sendersim_link.py (the emulator's link, under the Python sender-side
// simulator): hand-worked Mahimahi cases, driven by the rule the file states.
const vectors = JSON.parse(readFileSync(new URL("../../../../spec/link_vectors.json", import.meta.url), "utf8")) as { cases: LinkVector[] };
describe("TraceLink against the shared link vectors (spec/link_vectors.json)", () => {
  for (const c of vectors.cases)
    it(c.name, () => {
      const link = new TraceLink<string>(Uint32Array.from(c.trace_ms), c.queue_packets ?? Number.POSITIVE_INFINITY, c.queue_bytes ?? Number.POSITIVE_INFINITY);
      const departures: [string, number][] = [];
      const drops: string[] = [];
      for (const [t_ms, size_bytes, name] of c.arrivals) {
        for (const d of link.service(t_ms)) departures.push([d.data, d.depart_ms]);
        if (!link.enqueue(t_ms, size_bytes, name)) drops.push(name);
      }
      for (const d of link.service(c.until_ms)) departures.push([d.data, d.depart_ms]);
      expect({ departures, drops, opportunities: link.capacity_bytes / MAHIMAHI_PACKET_BYTES }).toEqual(c.expected);
    });
});
