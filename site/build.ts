/**
 * Bundle the reference player page: `tsx site/build.ts [--out DIR]` writes DIR/index.html
 * and DIR/dist/main.js (default DIR: site/out). `./nuwa serve` runs it into .cache/site.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf("--out");
const out = resolve(i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : join(here, "out"));
mkdirSync(join(out, "dist"), { recursive: true });
await build({
  entryPoints: [join(here, "src/main.ts")],
  outfile: join(out, "dist/main.js"),
  bundle: true,
  format: "esm",
  target: "chrome120",
  sourcemap: true,
  logLevel: "warning",
  alias: { "@nuwa/cc": join(here, "../packages/cc/src/index.ts"), "@nuwa/player": join(here, "../packages/player/src/index.ts") },
});
copyFileSync(join(here, "index.html"), join(out, "index.html"));
console.log(out);
