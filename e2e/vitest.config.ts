import { defineConfig } from "vitest/config";

/** End-to-end tests: real server, emulator and Chromium; one at a time (2 cores). */
export default defineConfig({
  test: {
    include: ["e2e/**/*.e2e.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    sequence: { concurrent: false },
  },
});
