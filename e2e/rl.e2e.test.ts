/**
 * Nuwa-RL in real Chromium (issue 6): onnxruntime-web's wasm entry gives the
 * shipped model's export-time fixture actions, the tuner runs, and its
 * inference time per decision on the main thread is measured (target < 1 ms).
 * Writes out/e2e/rl-inference.json.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./src/browser.js";
import { REPO_ROOT } from "./src/procs.js";

const ORT_DIST = `${REPO_ROOT}packages/player/node_modules/onnxruntime-web/dist/`;
const fixtures = JSON.parse(readFileSync(`${REPO_ROOT}models/nuwa-rl.fixtures.json`, "utf8")) as { actions: number[]; tolerance_logits: number };

describe("Nuwa-RL in Chromium (onnxruntime-web, wasm entry)", () => {
  let result: Record<string, unknown> & { actions: number[]; worst_logit_diff: number; inference_ms: { p50: number; p95: number } };
  const closers: (() => unknown)[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "nuwa-rl-page-"));
    await build({
      entryPoints: [`${REPO_ROOT}e2e/pages/rl.ts`],
      outfile: join(dir, "rl.js"),
      bundle: true,
      format: "esm",
      target: "chrome120",
      logLevel: "warning",
      alias: { "@nuwa/cc": `${REPO_ROOT}packages/cc/src/index.ts`, "@nuwa/player": `${REPO_ROOT}packages/player/src/index.ts` },
      nodePaths: [`${REPO_ROOT}packages/player/node_modules`], // onnxruntime-web is @nuwa/player's dependency
    });
    const files: Record<string, [string, string]> = {
      "/rl.html": [`${REPO_ROOT}e2e/pages/rl.html`, "text/html"],
      "/rl.js": [join(dir, "rl.js"), "text/javascript"],
    };
    for (const f of ["nuwa-rl.onnx", "nuwa-rl.json", "nuwa-rl.fixtures.json"]) files[`/models/${f}`] = [`${REPO_ROOT}models/${f}`, "application/octet-stream"];
    for (const f of ["ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs"]) files[`/ort/${basename(f)}`] = [ORT_DIST + f, f.endsWith(".wasm") ? "application/wasm" : "text/javascript"];
    const server = createServer(async (req, res) => {
      const hit = files[new URL(req.url ?? "/", "http://x").pathname];
      if (!hit) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": hit[1] }).end(await readFile(hit[0]));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    closers.push(() => server.close());
    const ctx = await launchChromium();
    closers.push(() => ctx.close());
    const page = await ctx.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/rl.html`);
    await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, null, { timeout: 60_000 });
    result = (await page.evaluate(() => (window as unknown as { __result: unknown }).__result)) as typeof result;
    mkdirSync(`${REPO_ROOT}out/e2e`, { recursive: true });
    writeFileSync(`${REPO_ROOT}out/e2e/rl-inference.json`, JSON.stringify(result, null, 1));
    console.log(JSON.stringify(result));
  });

  afterAll(async () => {
    for (const c of closers.reverse()) await c();
  });

  it("gives the fixture actions and logits", () => {
    expect(result.error).toBeUndefined();
    expect(result.actions).toEqual(fixtures.actions);
    expect(result.worst_logit_diff).toBeLessThanOrEqual(fixtures.tolerance_logits);
  });

  it("runs the tuner: every decision made, none fell back", () => {
    expect(result.tuner_state).toBe("running");
    expect(result.decisions).toBe(300);
  });

  it("infers in under 1 ms per decision on the main thread (median)", () => {
    expect(result.inference_ms.p50).toBeLessThan(1);
  });
});
