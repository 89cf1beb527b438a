/**
 * A video next to a download (issue 18: "a Nuwa video against a Cubic bulk download plays without
 * rebuffering"): `./nuwa play --competitor cubic` puts a second server behind the same emulated
 * bottleneck and a bulk receiver on it (`python -m nuwa_lab.mix --worker`, the mix's own
 * receivers), and the emulator logs every departure per flow (`--flow-log`). This reads that log:
 * each flow's share of what the link delivered while both ran, and the video flow's queuing delay.
 */
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { jainIndex } from "../../packages/cc/src/sim/shared.js";
import { percentile } from "../../packages/cc/src/sim/stats.js";
import { PYTHON, REPO_ROOT } from "./procs.js";

/** The emulator's per-flow departures (`--flow-log`; lab/nuwa_lab/emulator/relay.py write_flow_log). */
export interface FlowLog {
  flows: { route: number; depart_ms: number[]; size_bytes: number[]; queue_delay_ms: number[] }[];
}

export interface CompetitorFigures {
  /** Start and end of the span both flows ran, ms on the emulator log's clock. */
  from_ms: number;
  to_ms: number;
  /** Goodput over that span, bit/s: route 0 (the video) and route 1 (the competitor). */
  video_bps: number;
  competitor_bps: number;
  /** The video's share of the two (Jain's fairness of two flows follows from it). */
  video_share: number;
  /** Jain's index of the two goodputs (Jain, Chiu, Hawe 1984, Eq. 1). */
  jain_index: number;
  /** Queuing delay of the video's packets over the span, ms (the simulators' percentile). */
  video_queuing_delay_ms: { p50: number; p95: number };
}

/**
 * Both flows' figures while both ran: from the first departure of the competitor (route 1) to the
 * earlier of the two flows' last departures (a playback that stalls outlasts the download; a
 * download outlasts a playback that ends), or to `to_ms` when given.
 * @throws Error when the log lacks route 0 or route 1, or the competitor sent nothing
 */
export function competitorFigures(log: FlowLog, to_ms?: number): CompetitorFigures {
  const video = log.flows.find((f) => f.route === 0);
  const other = log.flows.find((f) => f.route === 1);
  if (!video || !other) throw new Error("competitorFigures: the flow log has no route 0 (video) or no route 1 (competitor)");
  if (other.depart_ms.length === 0) throw new Error("competitorFigures: the competitor's flow delivered nothing");
  const from_ms = other.depart_ms[0]!;
  const end_ms = to_ms ?? Math.min(other.depart_ms.at(-1)!, video.depart_ms.at(-1) ?? from_ms);
  const span_s = Math.max(1e-3, (end_ms - from_ms) / 1000);
  const sum = (f: FlowLog["flows"][number]) => f.depart_ms.reduce((a, d, i) => (d >= from_ms && d <= end_ms ? a + f.size_bytes[i]! : a), 0);
  const video_bps = (sum(video) * 8) / span_s;
  const competitor_bps = (sum(other) * 8) / span_s;
  const total = video_bps + competitor_bps;
  const qd = video.depart_ms.flatMap((d, i) => (d >= from_ms && d <= end_ms ? [video.queue_delay_ms[i]!] : []));
  return {
    from_ms,
    to_ms: end_ms,
    video_bps,
    competitor_bps,
    video_share: total > 0 ? video_bps / total : Number.NaN,
    jain_index: total > 0 ? jainIndex([video_bps, competitor_bps]) : Number.NaN,
    video_queuing_delay_ms: { p50: percentile(qd, 50), p95: percentile(qd, 95) },
  };
}

/**
 * Start a bulk receiver of `scheme` on the emulator's competitor port, starting `start_s` from now and
 * running `duration_s` (`python -m nuwa_lab.mix --worker`: the mix's receivers; it writes `json_path`
 * when done). Both clocks are CLOCK_MONOTONIC (Node's hrtime, Python's time.monotonic).
 * @returns the worker's process (stderr to `stderr_path`)
 */
export function startCompetitor(scheme: string, port: number, start_s: number, duration_s: number, json_path: string, stderr_path: string) {
  const start_at = Number(process.hrtime.bigint()) / 1e9 + start_s;
  const args = ["-m", "nuwa_lab.mix", "--worker", "--start-at", String(start_at), "--duration", String(duration_s), "--cc", "{}", "--flows", scheme, "--flow-schemes", scheme, "--flow-ports", String(port), "--flow-starts", "0", "--flow-stops", "0", "--json", json_path];
  return spawn(PYTHON, args, { cwd: REPO_ROOT, stdio: ["ignore", "ignore", openSync(stderr_path, "w")] });
}
