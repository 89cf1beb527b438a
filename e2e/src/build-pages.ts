/** Bundle the test pages (TypeScript → one ESM file each) with esbuild. */
import { build } from "esbuild";
import { REPO_ROOT } from "./procs.js";

export async function buildPages(): Promise<void> {
  await build({
    entryPoints: [`${REPO_ROOT}e2e/pages/bulk.ts`, `${REPO_ROOT}e2e/pages/play.ts`, `${REPO_ROOT}e2e/pages/play-hls.ts`, `${REPO_ROOT}e2e/pages/faults.ts`],
    outdir: `${REPO_ROOT}e2e/pages/dist`,
    bundle: true,
    format: "esm",
    target: "chrome120",
    sourcemap: true,
    logLevel: "warning",
    alias: { "@nuwa/cc": `${REPO_ROOT}packages/cc/src/index.ts`, "@nuwa/player/hls": `${REPO_ROOT}packages/player/src/hls/index.ts`, "@nuwa/player": `${REPO_ROOT}packages/player/src/index.ts` },
  });
}
