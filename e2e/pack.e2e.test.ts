/**
 * The packages as a user installs them (issue 4): build both, `pnpm pack`
 * them, install the tarballs (+ dash.js) into an empty project in the OS temp
 * directory, then use them there with plain Node and type-check a TypeScript
 * consumer against the published declarations. No browser, no network beyond
 * the package registry (normally served by the local pnpm store).
 *
 * @nuwa/player is imported in plain Node with no DOM shim: it never imports
 * dash.js (createNuwaPlayer and attachNuwa take the module as an argument), so
 * only playback needs a browser (e2e play test).
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as srcCc from "../packages/cc/src/index.js";
import * as srcSim from "../packages/cc/src/sim/index.js";
import * as srcHls from "../packages/player/src/hls/index.js";
import * as srcPlayer from "../packages/player/src/index.js";
import * as srcShaka from "../packages/player/src/shaka/index.js";
import { runScenario, type ScenarioResult } from "./pack-consumer/scenario.mjs";
import { buildPackages, installedDashjsVersion, makeConsumer, type PackageKey, packPackages, readPackageJson, run, runNodeJson, tarballFiles, tarballPackageJson } from "./src/pack.js";
import { REPO_ROOT } from "./src/procs.js";

const tmp = mkdtempSync(join(tmpdir(), "nuwa-pack-"));
const consumer = join(tmp, "consumer");
let tarballs: Record<PackageKey, string>;
const timings_s: Record<string, number> = {};

function timed<T>(label: string, f: () => T): T {
  const t0 = performance.now();
  const out = f();
  timings_s[label] = Math.round(performance.now() - t0) / 1000;
  return out;
}

beforeAll(() => {
  timed("build", buildPackages);
  tarballs = timed("pack", () => packPackages(join(tmp, "tarballs")));
  timed("install", () => makeConsumer(consumer, tarballs, installedDashjsVersion()));
});

afterAll(() => {
  console.log(`pack test timings (s): ${JSON.stringify(timings_s)}; temp dir ${process.env.NUWA_KEEP_PACK === "1" ? `kept: ${tmp}` : "removed"}`);
  if (process.env.NUWA_KEEP_PACK !== "1") rmSync(tmp, { recursive: true, force: true });
});

/** JSON round trip: what a consumer's stdout can carry (NaN → null). */
const viaJson = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

describe("published tarballs", () => {
  it.each(["cc", "player"] as const)("%s ships package.json, dist and src only: no tests, no stale or missing builds", (key) => {
    const files = tarballFiles(tarballs[key]);
    const pkg_dir = join(REPO_ROOT, key === "cc" ? "packages/cc" : "packages/player");
    const stray = files.filter((f) => !(f === "package.json" || f.startsWith("dist/") || f.startsWith("src/") || /^(README|LICENSE)/i.test(f)));
    expect(stray).toEqual([]);
    expect(files).toContain("README.md");
    expect(files.filter((f) => /\.test\.|\.spec\.|__tests__|fixtures/.test(f))).toEqual([]);
    // dist mirrors src exactly: every source module has its .js and .d.ts, and nothing else is built.
    const src_modules = files.filter((f) => f.startsWith("src/") && f.endsWith(".ts")).map((f) => f.slice(4, -3));
    const js_modules = files.filter((f) => f.startsWith("dist/") && f.endsWith(".js")).map((f) => f.slice(5, -3));
    const dts_modules = files.filter((f) => f.startsWith("dist/") && f.endsWith(".d.ts")).map((f) => f.slice(5, -5));
    expect(src_modules.length).toBeGreaterThan(3);
    expect(js_modules).toEqual(src_modules);
    expect(dts_modules).toEqual(src_modules);
    // Every `exports` target is in the tarball.
    const pkg = tarballPackageJson(tarballs[key]);
    const targets = Object.values(pkg.exports ?? {}).flatMap((v) => (typeof v === "string" ? [v] : Object.values(v as Record<string, string>)));
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) expect(files, `exports target ${t}`).toContain(t.replace(/^\.\//, ""));
    expect(pkg.version).toBe(readPackageJson(pkg_dir).version);
  });

  it("pins @nuwa/player's @nuwa/cc dependency to the packed version and leaves dash.js to the site (optional peer)", () => {
    const pkg = tarballPackageJson(tarballs.player);
    expect(pkg.dependencies?.["@nuwa/cc"]).toBe(readPackageJson(join(REPO_ROOT, "packages/cc")).version);
    expect(pkg.dependencies?.dashjs).toBeUndefined();
    expect(JSON.stringify(pkg)).not.toContain("workspace:");
    expect(pkg.peerDependencies?.dashjs).toBeDefined();
    // shaka-player likewise: an optional peer of the `./shaka` entry only, never installed for dash.js sites.
    expect(pkg.dependencies?.["shaka-player"]).toBeUndefined();
    expect(pkg.peerDependencies?.["shaka-player"]).toBeDefined();
    expect((pkg as { peerDependenciesMeta?: Record<string, { optional?: boolean }> }).peerDependenciesMeta?.["shaka-player"]?.optional).toBe(true);
    expect(Object.keys(pkg.exports ?? {})).toContain("./shaka");
    // hls.js likewise: an optional peer of the `./hls` subpath, never a dependency.
    expect(pkg.dependencies?.["hls.js"]).toBeUndefined();
    expect(pkg.peerDependencies?.["hls.js"]).toBeDefined();
    expect((pkg as { peerDependenciesMeta?: Record<string, { optional?: boolean }> }).peerDependenciesMeta?.["hls.js"]?.optional).toBe(true);
    expect(Object.keys(pkg.exports ?? {})).toContain("./hls");
  });

  it("installs as one copy of @nuwa/cc, taken from the local tarball", () => {
    const top = realpathSync(join(consumer, "node_modules/@nuwa/cc"));
    const player_dir = realpathSync(join(consumer, "node_modules/@nuwa/player"));
    const via_player = realpathSync(dirname(createRequire(join(player_dir, "package.json")).resolve("@nuwa/cc/package.json")));
    expect(via_player).toBe(top);
    expect(top).toMatch(/@nuwa\+cc@file\+/); // pnpm's directory name for a file: tarball
  });
});

describe("@nuwa/cc from the tarball, plain Node", () => {
  let out: {
    exports: string[];
    sim_exports: string[];
    scenario: ScenarioResult;
    bad_config_error: string | null;
    bad_frame_error: string | null;
    grant_roundtrip: unknown;
    grant_bytes: number;
    deep_import_error: string | null;
  };
  beforeAll(() => {
    out = timed("node cc", () => runNodeJson(consumer, "cc.mjs"));
  });

  it("exports what the sources export, from both entry points", () => {
    expect(out.exports).toEqual(Object.keys(srcCc).sort());
    expect(out.sim_exports).toEqual(Object.keys(srcSim).sort());
  });

  it("computes exactly what the sources compute: controller decisions, estimate, trace simulation", () => {
    expect(out.scenario).toEqual(viaJson(runScenario(srcCc, srcSim)));
  });

  it("measures the imposed queuing delay exactly across a −5 s clock offset (nuwa-icpads Eq. 1), window within bounds", () => {
    const s = out.scenario;
    expect(s.eq1_max_abs_error_ms).toBeLessThan(1e-9);
    expect(s.decisions.find((d) => d.i === 300)?.raw_queuing_delay_ms).toBe(40);
    expect(s.window_bytes).toBeGreaterThanOrEqual(s.min_window_bytes);
    expect(s.window_bytes).toBeLessThanOrEqual(s.max_window_bytes);
    expect(s.bulk.delivered_bytes).toBeGreaterThan(0);
    expect(s.bulk.delivered_bytes).toBeLessThanOrEqual(s.bulk.capacity_bytes);
  });

  it("rejects bad input with clear RangeErrors; grants round-trip; dist internals are not importable", () => {
    expect(out.bad_config_error).toMatch(/^RangeError: NuwaConfig.target_delay_ms must be in \[0, 10000\] ms/);
    expect(out.bad_frame_error).toMatch(/^RangeError: .*non-finite/);
    expect(out.grant_roundtrip).toEqual({ grant_seq: 7, receiver_time_us: 123_456, cum_received_bytes: 2 ** 40, window_bytes: 65_536, echo_send_time_us: 99, echo_hold_us: 5 });
    expect(out.grant_bytes).toBe(srcCc.GRANT_BYTES);
    expect(out.deep_import_error).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });
});

describe("@nuwa/player from the tarball, plain Node without a DOM", () => {
  let out: {
    exports: string[];
    has_navigator: boolean;
    has_webtransport: boolean;
    range: [number, number];
    grant_due_at_start: boolean;
    td_presets_ms: unknown;
    option_errors: [string, string | null][];
    session_rejected: boolean;
    events: unknown[][];
    calls: unknown[][];
    listeners_after_destroy: number;
  };
  beforeAll(() => {
    out = timed("node player", () => runNodeJson(consumer, "player.mjs"));
  });

  it("imports in Node with no browser globals and exports what the sources export", () => {
    expect(out.has_webtransport).toBe(false);
    expect(out.exports).toEqual(Object.keys(srcPlayer).sort());
    expect(out.exports).toContain("createNuwaPlayer");
    expect(out.range).toEqual([100, 199]);
    expect(out.grant_due_at_start).toBe(true);
    expect(out.td_presets_ms).toEqual(srcPlayer.TD_PRESETS_MS);
  });

  it("createNuwaPlayer: option errors are TypeErrors; dash.js events and the failed session come out as typed events", () => {
    expect(out.option_errors).toEqual([
      ["no dashjs", "TypeError: createNuwaPlayer: options.dashjs has no MediaPlayer(); pass the dashjs module"],
      ["http url", "TypeError: createNuwaPlayer: options.url must be https: (WebTransport), got http:"],
      ["no video", "TypeError: createNuwaPlayer: video must be an HTMLMediaElement"],
    ]);
    expect(out.calls.filter((c) => c[0] === "extend").map((c) => c[1])).toEqual(["XHRLoader", "ThroughputController"]);
    expect(out.calls).toContainEqual(["addABRCustomRule", "qualitySwitchRules", "NuwaAbrRule"]);
    expect(out.calls).toContainEqual(["initialize", "https://127.0.0.1:4433/manifest.mpd", true]);
    expect(out.calls.at(-1)).toEqual(["reset"]);
    expect(out.session_rejected).toBe(true);
    expect(out.events.slice(0, 2)).toEqual([
      ["startup", true],
      ["buffer", "video", 4.5],
    ]);
    expect(out.events.slice(2)).toEqual([["error", "session", expect.stringMatching(/ReferenceError: (WebTransport|WebSocket) is not defined/)]]);
    expect(out.listeners_after_destroy).toBe(0);
  });
});

describe("@nuwa/player/shaka from the tarball, plain Node", () => {
  it("imports without shaka-player or a DOM, exports what the sources export, and is not in the main entry", () => {
    const out = timed("node shaka", () => runNodeJson<{ exports: string[]; main_has_shaka: boolean; session_path: string; http_url_error: string | null }>(consumer, "shaka.mjs"));
    expect(out.exports).toEqual(Object.keys(srcShaka).sort());
    expect(out.exports).toContain("attachNuwaShaka");
    expect(out.main_has_shaka).toBe(false);
    expect(out.session_path).toBe("/v/seg-1.m4s");
    expect(out.http_url_error).toBe("TypeError: attachNuwaShaka: options.url must be https: (WebTransport), got http:");
  });
});

describe("@nuwa/player/hls from the tarball, plain Node without a DOM or hls.js loaded", () => {
  let out: { exports: string[]; baseline_config: string[]; nuwa_config: string[]; created_config: string[]; abr_extends_default: boolean; session_rejected: boolean; bad_abr: string | null };
  beforeAll(() => {
    out = timed("node player/hls", () => runNodeJson(consumer, "player-hls.mjs"));
  });

  it("exports what the sources export; the baseline replaces only the loader; Nuwa's config extends the site's AbrController", () => {
    expect(out.exports).toEqual(Object.keys(srcHls).sort());
    expect(out.baseline_config).toEqual(["loader"]);
    expect(out.nuwa_config).toEqual(["abrController", "loader"]);
    expect(out.created_config).toEqual(["abrController", "loader", "maxBufferLength"]);
    expect(out.abr_extends_default).toBe(true);
    expect(out.session_rejected).toBe(true);
    expect(out.bad_abr).toMatch(/^TypeError: attachNuwaToHls: abr must be/);
  });
});

describe("TypeScript consumer against the published declarations", () => {
  it("type-checks (strict, exactOptionalPropertyTypes, skipLibCheck off) with the real dash.js typings", () => {
    const stdout = timed("tsc consumer", () => run(join(REPO_ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.json", "--listFilesOnly"], consumer));
    // The declarations checked are the installed ones, not the repository's sources.
    const listed = stdout.split("\n").map((l) => l.trim());
    expect(listed.some((f) => f.includes("/node_modules/") && f.endsWith("@nuwa/player/dist/index.d.ts"))).toBe(true);
    expect(listed.some((f) => f.includes("/node_modules/") && f.endsWith("@nuwa/cc/dist/sim/index.d.ts"))).toBe(true);
    expect(listed.some((f) => f.includes("/node_modules/") && f.endsWith("@nuwa/player/dist/hls/index.d.ts"))).toBe(true);
    expect(listed.filter((f) => f.startsWith(REPO_ROOT) && !f.includes("/node_modules/typescript/lib/"))).toEqual([]);
    run(join(REPO_ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], consumer);
  });

  it("type-checks a shaka-player app (bundler resolution, strict) passing the real shaka namespace and Player to attachNuwaShaka", () => {
    const stdout = timed("tsc shaka consumer", () => run(join(REPO_ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.shaka.json", "--listFilesOnly"], consumer));
    const listed = stdout.split("\n").map((l) => l.trim());
    expect(listed.some((f) => f.includes("/node_modules/") && f.endsWith("@nuwa/player/dist/shaka/index.d.ts"))).toBe(true);
    expect(listed.some((f) => f.includes("/node_modules/") && f.endsWith("shaka-player/dist/shaka-player.compiled.d.ts"))).toBe(true);
    run(join(REPO_ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.shaka.json"], consumer);
  });
});
