import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { simulateBulk } from "./bulk.js";
import { QuicRepair } from "./repair.js";
import { BulkStepper } from "./stepper.js";
import { parseMahimahiTrace } from "./trace.js";

describe("QuicRepair (QUIC loss repair in the simulators)", () => {
  it("retransmits a dropped frame 9/8 RTT after its send and holds the frames behind it", () => {
    const r = new QuicRepair<{ seq: number }>(25);
    r.onDrop(30, 0, { seq: 1 }); // sent at 0, dropped at the bottleneck at 30 ms
    expect(r.due(80)).toEqual([]);
    expect(r.due(82)).toEqual([{ seq: 1 }]); // 0 + ceil(9/8 × 50) = 57 at the sender, + 25 ms of propagation
    const a = r.read([{ depart_ms: 40, enqueue_ms: 30, data: { seq: 0 } }, { depart_ms: 41, enqueue_ms: 31, data: { seq: 2 } }]);
    expect(a.map((d) => d.data.seq)).toEqual([0]); // 2 waits behind the lost 1
    const b = r.read([{ depart_ms: 90, enqueue_ms: 82, data: { seq: 1 } }]);
    expect(b.map((d) => [d.data.seq, d.read_ms, d.depart_ms])).toEqual([
      [1, 90, 90],
      [2, 90, 41], // read late behind the repair; its bottleneck departure is unchanged
    ]);
  });

  it("keeps the controller alive on a shallow queue: lost bytes arrive, the grant moves on", () => {
    const trace = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/4G/mahimahi-tmobile-lte-short.mahi"), "utf8"));
    const r = simulateBulk({ trace, duration_s: 30, queue_packets: 50 });
    expect(r.loss_rate).toBeGreaterThan(0); // the shallow queue does drop
    expect(r.utilization).toBeGreaterThan(0.3); // without the repair the cumulative field stalls and this is ~0
  });

  it("is applied identically by BulkStepper and simulateBulk", () => {
    const trace = parseMahimahiTrace(readFileSync(resolve(__dirname, "../../../../traces/4G/mahimahi-verizon-lte-short.mahi"), "utf8"));
    const config = { step: "additive" as const, aggressiveness_mss: 4 };
    const ref = simulateBulk({ trace, duration_s: 10, warmup_s: 0, queue_packets: 30, config });
    const s = new BulkStepper({ trace, queue_packets: 30, config });
    let delivered = 0;
    let dropped = 0;
    for (let i = 0; i < 50; i++) {
      const st = s.advance(200);
      delivered += st.delivered_bytes;
      dropped += st.dropped_packets;
    }
    expect(dropped).toBeGreaterThan(0);
    expect(delivered).toBe(ref.delivered_bytes);
  });
});
