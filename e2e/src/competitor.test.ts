import { describe, expect, it } from "vitest";
import { competitorFigures, type FlowLog } from "./competitor.js";

/** Route 0 (video) sends 1000 B every 10 ms over 0–10 s; route 1 (download) 1000 B every 2 ms from 4 s. */
function log(): FlowLog {
  const video = { route: 0, depart_ms: [] as number[], size_bytes: [] as number[], queue_delay_ms: [] as number[] };
  const other = { route: 1, depart_ms: [] as number[], size_bytes: [] as number[], queue_delay_ms: [] as number[] };
  for (let t = 0; t <= 10_000; t += 10) {
    video.depart_ms.push(t);
    video.size_bytes.push(1000);
    video.queue_delay_ms.push(t < 4000 ? 5 : 100 + (t % 100)); // the download's queue from 4 s
  }
  for (let t = 4000; t <= 10_000; t += 2) {
    other.depart_ms.push(t);
    other.size_bytes.push(1000);
    other.queue_delay_ms.push(100);
  }
  return { flows: [video, other] };
}

describe("a video next to a download (issue 18)", () => {
  it("shares and the video's queue over the span both flows ran", () => {
    const f = competitorFigures(log());
    expect([f.from_ms, f.to_ms]).toEqual([4000, 10_000]);
    expect(f.video_bps).toBeCloseTo((601 * 8000) / 6, -2); // 601 video packets in [4, 10] s
    expect(f.competitor_bps).toBeCloseTo((3001 * 8000) / 6, -2);
    expect(f.video_share).toBeCloseTo(601 / 3602, 3);
    expect(f.jain_index).toBeCloseTo(3602 ** 2 / (2 * (601 ** 2 + 3001 ** 2)), 3);
    expect(f.video_queuing_delay_ms.p95).toBeGreaterThanOrEqual(190); // the 5 ms before 4 s not counted
    expect(f.video_queuing_delay_ms.p50).toBeGreaterThanOrEqual(140);
  });

  it("ends with the flow that ended first (a stalled playback outlasts the download)", () => {
    const l = log();
    const other = l.flows[1]!;
    const keep = other.depart_ms.filter((d) => d <= 8000).length;
    l.flows[1] = { route: 1, depart_ms: other.depart_ms.slice(0, keep), size_bytes: other.size_bytes.slice(0, keep), queue_delay_ms: other.queue_delay_ms.slice(0, keep) };
    const f = competitorFigures(l);
    expect(f.to_ms).toBe(8000);
    expect(f.video_bps).toBeCloseTo((401 * 8000) / 4, -2);
    expect(competitorFigures(l, 6000).to_ms).toBe(6000);
  });

  it("refuses a log without the competitor or with nothing from it", () => {
    const l = log();
    expect(() => competitorFigures({ flows: [l.flows[0]!] })).toThrow(/no route 0 \(video\) or no route 1/);
    expect(() => competitorFigures({ flows: [l.flows[0]!, { route: 1, depart_ms: [], size_bytes: [], queue_delay_ms: [] }] })).toThrow(/delivered nothing/);
  });
});
