/**
 * Thirtieth session: what the MPC's switches are, SIMULATED (the video simulator of `./nuwa video-sim`,
 * 18 traces × starts 0/20/40 s, 62 s each). Per run: up-switches, down-switches, and reversals (a
 * switch whose previous switch, at most 3 segments earlier, went the other way).
 *   node_modules/.bin/tsx docs/bench/s30/switches.ts '{"shipped":{},"hyst":{"down_switch_margin":1,"up_hold_segments":2}}'
 * SHOW=<trace substring> also prints each run's rung sequence (rung index per segment).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseMahimahiTrace, rotateTrace } from "@nuwa/cc/sim";
import { mpcAbr, simulateVideo, type VideoLadder } from "../../../packages/player/src/sim/video.js";
import { listTraces } from "../../../e2e/src/bench.js";
import { ensureContent } from "../../../e2e/src/play.js";
import { PYTHON, REPO_ROOT } from "../../../e2e/src/procs.js";
const variants = JSON.parse(process.argv[2] ?? '{"shipped":{}}');
const content_dir = await ensureContent(120);
const ladder = JSON.parse(execFileSync(PYTHON, ["-m", "nuwa_lab.video_sim_optimum", "--ladder", content_dir], { cwd: `${REPO_ROOT}lab`, encoding: "utf8" })) as VideoLadder;
const all = listTraces().e2e.filter((t) => ["3G", "LTE-Saturator", "LTE-Lumos", "5G-lowband"].includes(t.family));
for (const [v, o] of Object.entries(variants)) {
  let up = 0, down = 0, rev = 0, n = 0;
  for (const t of all) {
    const base = parseMahimahiTrace(readFileSync(`${REPO_ROOT}${t.path}`, "utf8"));
    for (const s of [0, 20000, 40000]) {
      const r = simulateVideo({ trace: rotateTrace(base, s % base[base.length - 1]!), ladder, duration_s: 62, abr: mpcAbr(o as object) });
      const rungs = r.chunks.map((c) => c.rung);
      n++;
      for (let i = 1; i < rungs.length; i++) {
        if (rungs[i]! > rungs[i - 1]!) up++;
        else if (rungs[i]! < rungs[i - 1]!) down++;
        else continue;
        // reversal: the previous change within 3 segments went the other way
        for (let j = i - 1; j >= Math.max(1, i - 3); j--) {
          if (rungs[j] !== rungs[j - 1]) { if (Math.sign(rungs[j]! - rungs[j - 1]!) !== Math.sign(rungs[i]! - rungs[i - 1]!)) rev++; break; }
        }
      }
      if (process.env.SHOW && t.name.includes(process.env.SHOW)) console.log(t.name, s, rungs.join(""));
    }
  }
  console.log(v, "per run: up", (up / n).toFixed(2), "down", (down / n).toFixed(2), "reversals≤3", (rev / n).toFixed(2));
}
