/**
 * Child processes of an end-to-end run (server, emulator): started with a JSON
 * "ready" line on stdout, stopped by their own PID (SIGTERM, then SIGKILL).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const PYTHON = `${REPO_ROOT}.venv/bin/python`;

export interface Started {
  proc: ChildProcess;
  ready: Record<string, unknown>;
  stop: () => Promise<number | null>;
}

/**
 * Start `cmd args`, wait for a JSON line with `"event": "ready"` on stdout.
 * @throws Error with the process's stderr tail if it exits or times out first
 */
export function startWithReady(cmd: string, args: string[], stderr_path: string, timeout_ms = 30_000): Promise<Started> {
  const proc = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const errlog = createWriteStream(stderr_path);
  let tail = "";
  proc.stderr!.on("data", (d: Buffer) => {
    errlog.write(d);
    tail = (tail + d.toString()).slice(-2000);
  });
  const stop = (): Promise<number | null> =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      const kill = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      proc.once("exit", (code) => {
        clearTimeout(kill);
        errlog.end();
        resolve(code);
      });
      proc.kill("SIGTERM");
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${cmd} ${args.join(" ")}: no ready line within ${timeout_ms} ms\n${tail}`));
    }, timeout_ms);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.slice(0, 3).join(" ")} exited with ${code} before ready:\n${tail}`));
    });
    const rl = createInterface({ input: proc.stdout! });
    rl.on("line", (line) => {
      try {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg.event === "ready") {
          clearTimeout(timer);
          proc.removeAllListeners("exit");
          resolve({ proc, ready: msg, stop });
        }
      } catch {
        /* not JSON: ignore */
      }
    });
  });
}

export interface LinkSetup {
  /** Server congestion control mode (`oracle`: window from the emulator's capacity reports, issue 5). */
  cc: "nuwa" | "cubic" | "reno" | "bbr" | "pbq" | "oracle";
  /** cc nuwa: the loss-based controller under the grants (server `--ceiling`; default cubic). */
  ceiling?: "cubic" | "bbr";
  content_root: string;
  /** Absolute trace path. */
  trace: string;
  delay_ms: number;
  queue_packets: number;
  /** Run directory: server logs go to `out/server`, the emulator log to `out/emulator.log`. */
  out: string;
  /** cc oracle: the emulator's measurement window, ms (default: the base RTT, 2 × delay_ms). */
  oracle_window_ms?: number;
  /** cc oracle: the standing queue the server's window keeps, ms (default: the server's, 20). */
  oracle_headroom_ms?: number;
  /** The server's controller switching (`--switch`; issue 18), default none. */
  switch?: "none" | "rule";
  /** The switch rule's thresholds changed from their defaults (the server's `--switch-rule`, a JSON object). */
  switch_rule?: string;
  /**
   * A second server with this controller behind the same bottleneck (the emulator's `--route`, its
   * second listen port), for a competing download; the emulator then writes every departure per
   * flow to `out/flows.json` (`--flow-log`). Logs in `out/server-competitor`.
   */
  competitor_cc?: "cubic" | "reno" | "bbr";
}

export interface Link {
  server: Started;
  emulator: Started;
  /** The competitor's server (LinkSetup.competitor_cc); its clients use the emulator's `listen_ports[1]`. */
  competitor: Started | null;
  /** Stop the emulator, then the server (idempotent). */
  stop: () => Promise<void>;
}

/** Start the aioquic server and the trace-driven emulator in front of it. */
export async function startLink(l: LinkSetup): Promise<Link> {
  const server = await startWithReady(
    PYTHON,
    ["-m", "nuwa_server.server", "--host", "::", "--port", "0", "--cc", l.cc, "--content-root", l.content_root, "--state-dir", `${REPO_ROOT}.cache/dev-cert`, "--log-dir", `${l.out}/server`, ...(l.ceiling ? ["--ceiling", l.ceiling] : []), ...(l.oracle_headroom_ms === undefined ? [] : ["--oracle-headroom-ms", String(l.oracle_headroom_ms)]), ...(l.switch && l.switch !== "none" ? ["--switch", l.switch] : []), ...(l.switch_rule ? ["--switch-rule", l.switch_rule] : [])],
    `${l.out}/server.stderr`,
  );
  let competitor: Started | null = null;
  if (l.competitor_cc) {
    try {
      competitor = await startWithReady(
        PYTHON,
        ["-m", "nuwa_server.server", "--host", "::", "--port", "0", "--cc", l.competitor_cc, "--content-root", l.content_root, "--state-dir", `${REPO_ROOT}.cache/dev-cert`, "--log-dir", `${l.out}/server-competitor`],
        `${l.out}/server-competitor.stderr`,
      );
    } catch (e) {
      await server.stop();
      throw e;
    }
  }
  const route = competitor ? ["--route", `127.0.0.1:0=127.0.0.1:${competitor.ready.port}`, "--flow-log", `${l.out}/flows.json`] : [];
  let emulator: Started;
  const oracle = server.ready.oracle_port ? ["--oracle-to", `127.0.0.1:${server.ready.oracle_port}`, ...(l.oracle_window_ms ? ["--oracle-window-ms", String(l.oracle_window_ms)] : [])] : [];
  try {
    emulator = await startWithReady(
      PYTHON,
      ["-m", "nuwa_lab.emulator", "--listen", "127.0.0.1:0", "--server", `127.0.0.1:${server.ready.port}`, "--trace", l.trace, "--delay-ms", String(l.delay_ms), "--uplink-delay-ms", String(l.delay_ms), "--queue-packets", String(l.queue_packets), "--log", `${l.out}/emulator.log`, "--summary-json", `${l.out}/emulator-summary.json`, ...oracle, ...route],
      `${l.out}/emulator.stderr`,
    );
  } catch (e) {
    await competitor?.stop();
    await server.stop();
    throw e;
  }
  const stop = async () => {
    await emulator.stop();
    await competitor?.stop();
    await server.stop();
  };
  return { server, emulator, competitor, stop };
}
