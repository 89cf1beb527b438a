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
}

export interface Link {
  server: Started;
  emulator: Started;
  /** Stop the emulator, then the server (idempotent). */
  stop: () => Promise<void>;
}

/** Start the aioquic server and the trace-driven emulator in front of it. */
export async function startLink(l: LinkSetup): Promise<Link> {
  const server = await startWithReady(
    PYTHON,
    ["-m", "nuwa_server.server", "--host", "::", "--port", "0", "--cc", l.cc, "--content-root", l.content_root, "--state-dir", `${REPO_ROOT}.cache/dev-cert`, "--log-dir", `${l.out}/server`, ...(l.ceiling ? ["--ceiling", l.ceiling] : []), ...(l.oracle_headroom_ms === undefined ? [] : ["--oracle-headroom-ms", String(l.oracle_headroom_ms)])],
    `${l.out}/server.stderr`,
  );
  let emulator: Started;
  const oracle = server.ready.oracle_port ? ["--oracle-to", `127.0.0.1:${server.ready.oracle_port}`, ...(l.oracle_window_ms ? ["--oracle-window-ms", String(l.oracle_window_ms)] : [])] : [];
  try {
    emulator = await startWithReady(
      PYTHON,
      ["-m", "nuwa_lab.emulator", "--listen", "127.0.0.1:0", "--server", `127.0.0.1:${server.ready.port}`, "--trace", l.trace, "--delay-ms", String(l.delay_ms), "--uplink-delay-ms", String(l.delay_ms), "--queue-packets", String(l.queue_packets), "--log", `${l.out}/emulator.log`, "--summary-json", `${l.out}/emulator-summary.json`, ...oracle],
      `${l.out}/emulator.stderr`,
    );
  } catch (e) {
    await server.stop();
    throw e;
  }
  const stop = async () => {
    await emulator.stop();
    await server.stop();
  };
  return { server, emulator, stop };
}
