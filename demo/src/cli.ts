/**
 * `./nuwa demo [--trace FILE] [--port N] [--delay-ms MS] [--queue-packets N]`: start the
 * demo (server, emulator, Vite) and print the URL to open; Ctrl-C stops everything.
 * Prints a JSON `{"event": "ready", "url": ...}` line too, for scripts and the e2e test.
 */
import { parseCli, usageError } from "../../e2e/src/cli-args.js";
import { startDemo } from "./server.js";

const USAGE = `./nuwa demo [--trace FILE] [--port N] [--delay-ms MS] [--queue-packets N] [--out DIR]
  live page: video through Nuwa + plots; prints the URL to open`;
const values = parseCli(USAGE, {
  trace: { type: "string" },
  port: { type: "string" },
  "delay-ms": { type: "string" },
  "queue-packets": { type: "string" },
  out: { type: "string" },
});
const num = (name: string, v: string | undefined, min: number): number | undefined => {
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!Number.isInteger(x) || x < min) {
    usageError(USAGE, `--${name} must be an integer >= ${min} (got ${v})`);
  }
  return x;
};
const port = num("port", values.port, 0);
const delay_ms = num("delay-ms", values["delay-ms"], 0);
const queue_packets = num("queue-packets", values["queue-packets"], 1);

try {
  const demo = await startDemo({ trace: values.trace, port, delay_ms, queue_packets, out_dir: values.out });
  console.log(`Nuwa demo: open ${demo.url} in Chromium (Ctrl-C stops server, emulator and page server)`);
  console.log(JSON.stringify({ event: "ready", url: demo.url, port: demo.port }));
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    demo.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
} catch (e) {
  console.error(`demo failed to start: ${(e as Error).message}`);
  process.exit(1);
}
