/** Debian's Chromium driven by playwright-core, with the flags docs/DESIGN.md §8 says this machine needs. */
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";

export const CHROMIUM = process.env.NUWA_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Launch a headless persistent context with a fresh profile, removed when the context closes. `env` replaces the browser's
 * environment (e.g. a HOME whose NSS database trusts a test CA: serve.e2e.test.ts).
 */
export async function launchChromium(env?: Record<string, string>): Promise<BrowserContext> {
  // loaded here, not at the top: a process that imports the harness only to simulate (a simulator
  // cell of cells.ts) starts without playwright-core's second of module loading
  const { chromium } = await import("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "nuwa-chromium-"));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...(env ? { env } : {}),
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-background-timer-throttling", "--disable-renderer-backgrounding"],
  });
  // The profile (10–20 MB a run) goes with the browser: runs left hundreds of them in /tmp. Chromium
  // may still be writing its cache when "close" fires (a synchronous rm failed with ENOTEMPTY as an
  // unhandled error in CI), so the removal retries and a leftover is never an error.
  ctx.on("close", () => {
    rm(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }).catch(() => {});
  });
  return ctx;
}
