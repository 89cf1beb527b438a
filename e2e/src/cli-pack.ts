/**
 * `./nuwa pack [--out DIR]`: build @nuwa/cc and @nuwa/player and write their
 * npm tarballs to DIR (default out/packages). Install them elsewhere with
 * `npm install DIR/nuwa-cc-*.tgz DIR/nuwa-player-*.tgz` (plus `dashjs` for the
 * dash.js integration). e2e/pack.e2e.test.ts checks that this works.
 */
import { resolve } from "node:path";
import { parseCli } from "./cli-args.js";
import { buildPackages, packPackages, tarballFiles } from "./pack.js";
import { REPO_ROOT } from "./procs.js";

const values = parseCli("./nuwa pack [--out DIR]   build @nuwa/cc and @nuwa/player, write npm tarballs to DIR (default out/packages)", {
  out: { type: "string", default: "out/packages" },
});
const out_dir = resolve(REPO_ROOT, values.out!);
buildPackages();
const tarballs = packPackages(out_dir);
for (const tgz of Object.values(tarballs)) console.log(`${tgz} (${tarballFiles(tgz).length} files)`);
