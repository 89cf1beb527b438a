import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { TrainingPlayerBuffer } from "../pages/training-buffer.js";
import { REPO_ROOT } from "./procs.js";

it("the bulk page's TrainingPlayerBuffer gives the levels of models/nuwa_rl/agent.py's PlayerBuffer (shared vectors)", () => {
  const v = JSON.parse(readFileSync(`${REPO_ROOT}packages/player/src/testdata/player-buffer.json`, "utf8")) as {
    interval_s: number;
    received_bytes: number[];
    buffer_s: number[];
  };
  expect(v.received_bytes.length).toBeGreaterThan(100);
  const b = new TrainingPlayerBuffer();
  const levels = v.received_bytes.map((x) => b.step(x, v.interval_s));
  for (const [i, want] of v.buffer_s.entries()) expect(Math.abs(levels[i]! - want), `interval ${i}`).toBeLessThan(1e-9);
  // The sequence covers the regimes: empty, capped at 30 s, and in between.
  expect(v.buffer_s.filter((x) => x === 0).length).toBeGreaterThan(10);
  expect(v.buffer_s.filter((x) => x === 30).length).toBeGreaterThan(0);
});
