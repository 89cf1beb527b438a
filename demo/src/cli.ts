/**
 * `./nuwa demo [--player P] [--content DIR] [--trace FILE] [--port N] [--delay-ms MS] [--queue-packets N]`:
 * start the demo (server, emulator, Vite) and print the URL to open; Ctrl-C stops everything.
 * Prints a JSON `{"event": "ready", "url": ...}` line too, for scripts and the e2e test.
 */
import { parseCli, usageError } from "../../e2e/src/cli-args.js";
import { checkDemoArgs, DEMO_OPTIONS, DEMO_USAGE, type DemoArgs } from "./args.js";
import { startDemo } from "./server.js";

let args: DemoArgs;
try {
  args = checkDemoArgs(parseCli(DEMO_USAGE, DEMO_OPTIONS));
} catch (e) {
  usageError(DEMO_USAGE, (e as Error).message);
}

try {
  const demo = await startDemo(args);
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
