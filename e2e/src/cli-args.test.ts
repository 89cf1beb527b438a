import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./procs.js";

const TSX = `${REPO_ROOT}node_modules/.bin/tsx`;
const run = (script: string, args: string[]) => spawnSync(TSX, [`${REPO_ROOT}${script}`, ...args], { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });

// Every CLI parses its arguments before it starts a server, a browser or a build, so these run no I/O.
describe("./nuwa subcommands: --help and bad arguments", () => {
  for (const script of ["e2e/src/cli-bulk.ts", "e2e/src/cli-play.ts", "e2e/src/cli-bench.ts", "e2e/src/cli-pack.ts", "e2e/src/cli-video-sim.ts", "demo/src/cli.ts"]) {
    it(`${script}: --help prints the usage and exits 0`, () => {
      const r = run(script, ["--help"]);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^usage: \.\/nuwa \w+/);
    });
    it(`${script}: an unknown option is a one-line error with the usage, exit 2, no stack trace`, () => {
      const r = run(script, ["--no-such-option"]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^error: .*--no-such-option/);
      expect(r.stderr).toContain("usage: ./nuwa");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });
  }
  it("a malformed --cc is refused before anything starts", () => {
    for (const [script, cc] of [
      ["e2e/src/cli-bulk.ts", "{not json"],
      ["e2e/src/cli-play.ts", "[1, 2]"],
    ] as const) {
      const r = run(script, ["--cc", cc]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^error: --cc must be a JSON object/);
    }
  });
  it("./nuwa bulk --grants: not a JSON object, an unknown field or a cadence GrantPolicy refuses is refused before anything starts", () => {
    for (const [g, msg] of [
      ["[1]", /^error: --grants must be a JSON object/],
      ['{"every_frame": 4}', /^error: --grants: unknown field every_frame/],
      ['{"max_interval_us": 500}', /^error: --grants: GrantPolicy: need 0 < min_interval_us ≤ max_interval_us/],
    ] as const) {
      const r = run("e2e/src/cli-bulk.ts", ["--grants", g]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
  it("a value out of range names the option", () => {
    const r = run("e2e/src/cli-bulk.ts", ["--duration", "2"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error: --duration must be 5\.\.3600 s/);
  });
  it("./nuwa video-sim: bad start offsets, variants that are not JSON and an unknown trace are refused before anything runs", () => {
    for (const [args, msg] of [
      [["--starts", "0,-5"], /^error: --starts must be non-negative integers/],
      [["--variants", "{nope"], /^error: --variants is not JSON/],
      [["--traces", "no-such-trace"], /^error: no trace matches no-such-trace/],
    ] as const) {
      const r = run("e2e/src/cli-video-sim.ts", [...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
  it("./nuwa play --player: an unknown player, or a scheme of another player, is refused before anything starts", () => {
    const bad = run("e2e/src/cli-play.ts", ["--player", "vlc"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^error: --player must be one of dashjs, hlsjs, shaka \(got vlc\)/);
    const mixed = run("e2e/src/cli-play.ts", ["--player", "shaka", "--scheme", "nuwa"]);
    expect(mixed.status).toBe(2);
    expect(mixed.stderr).toMatch(/^error: --scheme must be one of shaka, shaka_grants, shaka_nuwa, shaka_nuwa_prefetch for --player shaka \(got nuwa\)/);
    expect(run("e2e/src/cli-play.ts", ["--help"]).stdout).toContain("--player shaka");
  });

  it("./nuwa play --switch-rule: without --switch rule, or not a JSON object, is refused before anything starts", () => {
    for (const [args, msg] of [
      [["--switch-rule", "{}"], /^error: --switch-rule needs --switch rule/],
      [["--switch", "rule", "--switch-rule", "{"], /^error: --switch-rule is not JSON/],
      [["--switch", "rule", "--switch-rule", "[1]"], /^error: --switch-rule must be a JSON object/],
    ] as const) {
      const r = run("e2e/src/cli-play.ts", [...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
  it("./nuwa demo --player/--content: an unknown player or a directory without an MPD is refused before anything starts", () => {
    const bad = run("demo/src/cli.ts", ["--player", "vlc"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^error: --player must be one of dashjs, hlsjs, shaka \(got vlc\)/);
    const nodir = run("demo/src/cli.ts", ["--content", `${REPO_ROOT}no-such-dir`]);
    expect(nodir.status).toBe(2);
    expect(nodir.stderr).toMatch(/^error: --content .*no-such-dir: not a directory/);
    const help = run("demo/src/cli.ts", ["--help"]).stdout;
    expect(help).toContain("--player dashjs|hlsjs|shaka");
    expect(help).toContain("--content DIR");
  });
  it("a malformed --burst is refused before the bulk run starts", () => {
    const r = run("e2e/src/cli-bulk.ts", ["--burst", "20-100"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error: --burst: expected MIN\.\.MAX\[:SEED\]/);
  });
});
