import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { include: ["packages/*/src/**/*.test.ts", "demo/src/**/*.test.ts"], testTimeout: 30_000 },
});
