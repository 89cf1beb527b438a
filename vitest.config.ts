import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  // Workspace packages resolve to their sources, so unit tests need no prior build (a fresh clone has no dist/).
  resolve: {
    alias: [
      { find: /^@nuwa\/cc$/, replacement: src("./packages/cc/src/index.ts") },
      { find: /^@nuwa\/cc\/sim$/, replacement: src("./packages/cc/src/sim/index.ts") },
      { find: /^@nuwa\/player$/, replacement: src("./packages/player/src/index.ts") },
      { find: /^@nuwa\/player\/shaka$/, replacement: src("./packages/player/src/shaka/index.ts") },
      { find: /^@nuwa\/player\/hls$/, replacement: src("./packages/player/src/hls/index.ts") },
    ],
  },
  test: {
    include: ["packages/*/src/**/*.test.ts", "demo/src/**/*.test.ts", "e2e/src/**/*.test.ts"],
    testTimeout: 30_000,
    // Vitest's default (CPUs - 1) is one worker on this 2-core host: 95 s. Two workers: 60 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
