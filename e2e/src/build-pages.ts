/**
 * Bundle the test pages (TypeScript → one ESM file each) with esbuild into `e2e/pages/dist`.
 * Each output file is written to a temporary name and renamed into place (rename(2) is atomic on
 * one file system), so runs that build at the same time (cells spread over a bigger machine,
 * cells.ts) never serve a half-written bundle to a page.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { REPO_ROOT } from "./procs.js";

export async function buildPages(): Promise<void> {
  const { build } = await import("esbuild"); // loaded on use, as browser.ts's playwright-core
  const r = await build({
    entryPoints: [`${REPO_ROOT}e2e/pages/bulk.ts`, `${REPO_ROOT}e2e/pages/play.ts`, `${REPO_ROOT}e2e/pages/play-shaka.ts`, `${REPO_ROOT}e2e/pages/play-hls.ts`, `${REPO_ROOT}e2e/pages/faults.ts`],
    outdir: `${REPO_ROOT}e2e/pages/dist`,
    bundle: true,
    format: "esm",
    target: "chrome120",
    sourcemap: true,
    logLevel: "warning",
    write: false,
    alias: { "@nuwa/cc": `${REPO_ROOT}packages/cc/src/index.ts`, "@nuwa/player/hls": `${REPO_ROOT}packages/player/src/hls/index.ts`, "@nuwa/player": `${REPO_ROOT}packages/player/src/index.ts`, "@nuwa/player/shaka": `${REPO_ROOT}packages/player/src/shaka/index.ts` },
  });
  for (const f of r.outputFiles) {
    mkdirSync(dirname(f.path), { recursive: true });
    const tmp = `${f.path}.tmp-${process.pid}`;
    writeFileSync(tmp, f.contents);
    renameSync(tmp, f.path);
  }
}
