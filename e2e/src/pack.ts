/**
 * Build, pack and install @nuwa/cc and @nuwa/player the way a user gets them:
 * `pnpm pack` tarballs installed into an empty project outside the repository
 * (no workspace links, no tsconfig paths). Used by e2e/pack.e2e.test.ts and
 * `./nuwa pack`.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./procs.js";

export const PACKAGES = { cc: "packages/cc", player: "packages/player" } as const;
export type PackageKey = keyof typeof PACKAGES;

/** Files copied into the consumer project from e2e/pack-consumer/. */
export const CONSUMER_FILES = ["scenario.mjs", "cc.mjs", "player.mjs", "player-hls.mjs", "consumer.ts", "tsconfig.json", "shaka.mjs", "shaka-consumer.ts", "tsconfig.shaka.json"] as const;

interface PackageJson {
  name: string;
  version: string;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export function readPackageJson(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
}

/** Run a command, return stdout; on failure throw with the command's stderr and stdout tails. */
export function run(cmd: string, args: string[], cwd: string, timeout_ms = 120_000): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", timeout: timeout_ms, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed (exit ${err.status ?? "?"}): ${err.message}\n--- stderr ---\n${(err.stderr ?? "").slice(-3000)}\n--- stdout ---\n${(err.stdout ?? "").slice(-3000)}`);
  }
}

/** Build both packages (dist/ emptied first; @nuwa/cc before @nuwa/player, which type-checks against cc's dist). */
export function buildPackages(): void {
  run("pnpm", ["-r", "--filter", "./packages/**", "run", "build"], REPO_ROOT, 180_000);
}

/**
 * `pnpm pack` each package into `dest_dir` (`workspace:*` becomes the version).
 * @returns absolute tarball paths
 * @throws Error if a tarball is missing after packing
 */
export function packPackages(dest_dir: string): Record<PackageKey, string> {
  mkdirSync(dest_dir, { recursive: true });
  const out = {} as Record<PackageKey, string>;
  for (const [key, rel] of Object.entries(PACKAGES) as [PackageKey, string][]) {
    const dir = join(REPO_ROOT, rel);
    const pkg = readPackageJson(dir);
    run("pnpm", ["pack", "--pack-destination", dest_dir], dir);
    const tgz = join(dest_dir, `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`);
    if (!existsSync(tgz)) throw new Error(`pnpm pack in ${rel} did not produce ${tgz}`);
    out[key] = tgz;
  }
  return out;
}

/** Paths inside a tarball, without the leading `package/`. */
export function tarballFiles(tgz: string): string[] {
  return run("tar", ["tzf", tgz], REPO_ROOT)
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.replace(/^package\//, ""))
    .sort();
}

/** The package.json inside a tarball. */
export function tarballPackageJson(tgz: string): PackageJson {
  return JSON.parse(run("tar", ["xzOf", tgz, "package/package.json"], REPO_ROOT)) as PackageJson;
}

/** dash.js version the repository installed (so the consumer's install is served by the local pnpm store). */
export function installedDashjsVersion(): string {
  return readPackageJson(join(REPO_ROOT, PACKAGES.player, "node_modules/dashjs")).version;
}

/** hls.js version the repository installed (the consumer installs the same, from the local store). */
export function installedHlsVersion(): string {
  return readPackageJson(join(REPO_ROOT, PACKAGES.player, "node_modules/hls.js")).version;
}

/** shaka-player version the repository installed (the optional peer of `@nuwa/player/shaka`). */
export function installedShakaVersion(): string {
  return readPackageJson(join(REPO_ROOT, PACKAGES.player, "node_modules/shaka-player")).version;
}

/**
 * Create an empty project in `dir`, copy the consumer fixtures, and install the
 * tarballs plus dash.js, hls.js and shaka-player (the sites' players, optional peers; the repository's versions) with pnpm (--prefer-offline: the store and metadata
 * cache that `./nuwa setup` filled serve it; the registry only when they lack it).
 * `pnpm.overrides` points @nuwa/player's dependency on @nuwa/cc at the local
 * tarball, so nothing named @nuwa/* is ever looked up in a registry.
 */
export function makeConsumer(dir: string, tarballs: Record<PackageKey, string>, dashjs_version: string, hls_version = installedHlsVersion()): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "nuwa-pack-consumer", private: true, type: "module", pnpm: { overrides: { "@nuwa/cc": `file:${tarballs.cc}` } } }, null, 2)}\n`);
  for (const f of CONSUMER_FILES) copyFileSync(join(REPO_ROOT, "e2e/pack-consumer", f), join(dir, f));
  run("pnpm", ["add", "--prefer-offline", "--ignore-scripts", "--reporter=append-only", tarballs.cc, tarballs.player, `dashjs@${dashjs_version}`, `hls.js@${hls_version}`, `shaka-player@${installedShakaVersion()}`], dir, 240_000);
}

/** Run `node script` in `dir`; parse the last stdout line as JSON. */
export function runNodeJson<T = Record<string, unknown>>(dir: string, script: string): T {
  const stdout = run(process.execPath, [script], dir);
  const last = stdout.trim().split("\n").at(-1) ?? "";
  return JSON.parse(last) as T;
}
