import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** End-to-end tests: real server, emulator and Chromium; one at a time (2 cores). */
export default defineConfig({
  // Workspace packages resolve to their sources, as in the unit config: a fresh clone has no dist/.
  resolve: {
    alias: [
      { find: /^@nuwa\/cc$/, replacement: src("../packages/cc/src/index.ts") },
      { find: /^@nuwa\/cc\/sim$/, replacement: src("../packages/cc/src/sim/index.ts") },
      { find: /^@nuwa\/player$/, replacement: src("../packages/player/src/index.ts") },
      { find: /^@nuwa\/player\/hls$/, replacement: src("../packages/player/src/hls/index.ts") },
      { find: /^@nuwa\/player\/shaka$/, replacement: src("../packages/player/src/shaka/index.ts") },
    ],
  },
  test: {
    include: ["e2e/**/*.e2e.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    sequence: { concurrent: false },
  },
});
