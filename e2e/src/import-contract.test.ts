/**
 * The TypeScript import contract of issue 16 item 1, enforced by biome's noRestrictedImports
 * (per-folder overrides in biome.json, run by `./nuwa test` as `biome check .`): `@nuwa/cc`
 * imports nothing else of ours, `@nuwa/player` only `@nuwa/cc`, nothing under packages/ imports
 * the harness (e2e/, demo/). This test plants violating and allowed imports in a copy of the
 * layout (a temp dir with the repo's biome.json) and checks that exactly the violations fail.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(__dirname, "../..");
const BIOME = join(ROOT, "node_modules/.bin/biome");

/** Lint `files` (path → source) laid out under a temp copy of biome.json; returns the flagged paths with their messages. */
function lint(files: Record<string, string>): Map<string, string[]> {
  const dir = mkdtempSync(join(tmpdir(), "nuwa-contract-"));
  try {
    copyFileSync(join(ROOT, "biome.json"), join(dir, "biome.json"));
    for (const [p, src] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), src);
    }
    const r = spawnSync(BIOME, ["lint", "--max-diagnostics=200", "."], { cwd: dir, encoding: "utf8" });
    const out = `${r.stdout}${r.stderr}`;
    const flagged = new Map<string, string[]>();
    // A diagnostic: "path:line:col lint/style/noRestrictedImports ━━━" then "× message".
    for (const m of out.matchAll(/^(\S+\.ts):\d+:\d+ lint\/style\/noRestrictedImports[^\n]*\n\s*\n?\s*× ([^\n]+)/gm)) {
      flagged.set(m[1]!, [...(flagged.get(m[1]!) ?? []), m[2]!]);
    }
    return flagged;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("TypeScript import contract (biome.json noRestrictedImports)", () => {
  it("fails each planted violation and passes the allowed imports", () => {
    const flagged = lint({
      // violations
      "packages/cc/src/a.ts": 'import { x } from "@nuwa/player";\nexport { x };\n',
      "packages/cc/src/sim/b.ts": 'import { x } from "../../../player/src/session.js";\nexport { x };\n',
      "packages/cc/src/sim/c.ts": 'export * from "../../../../e2e/src/bench.js";\n',
      "packages/cc/src/d.ts": 'const m = await import("../../../demo/src/main.js");\nexport { m };\n',
      "packages/player/src/dash/e.ts": 'import { x } from "../../../../e2e/src/procs.js";\nexport { x };\n',
      "packages/player/src/f.ts": 'import { x } from "../../cc/src/controller.js";\nexport { x };\n',
      "packages/player/src/g.ts": 'import { x } from "@nuwa/other";\nexport { x };\n',
      "packages/cc/src/a/b/c/deep.ts": 'import { x } from "@nuwa/player";\nexport { x };\n',
      // allowed
      "packages/cc/src/sim/ok.ts": 'import { x } from "../controller.js";\nimport { y } from "./link.js";\nimport { z } from "vitest";\nexport { x, y, z };\n',
      "packages/player/src/dash/ok.ts": 'import { x } from "@nuwa/cc";\nimport { s } from "@nuwa/cc/sim";\nimport { y } from "../session.js";\nimport d from "dashjs";\nexport { x, s, y, d };\n',
      "e2e/src/ok.ts": 'import { x } from "../../packages/cc/src/sim/bench-sim.js";\nimport { y } from "@nuwa/player";\nexport { x, y };\n',
    });
    expect([...flagged.keys()].sort()).toEqual([
      "packages/cc/src/a.ts",
      "packages/cc/src/a/b/c/deep.ts",
      "packages/cc/src/d.ts",
      "packages/cc/src/sim/b.ts",
      "packages/cc/src/sim/c.ts",
      "packages/player/src/dash/e.ts",
      "packages/player/src/f.ts",
      "packages/player/src/g.ts",
    ]);
    expect(flagged.get("packages/cc/src/a.ts")!.join(" ")).toMatch(/@nuwa\/cc imports nothing else of ours/);
    expect(flagged.get("packages/cc/src/sim/c.ts")!.join(" ")).toMatch(/imports the harness/);
    expect(flagged.get("packages/player/src/dash/e.ts")!.join(" ")).toMatch(/imports the harness/);
    expect(flagged.get("packages/player/src/f.ts")!.join(" ")).toMatch(/only inside packages\/player\/src/);
    expect(flagged.get("packages/player/src/g.ts")!.join(" ")).toMatch(/@nuwa\/player imports only @nuwa\/cc/);
  });
});
