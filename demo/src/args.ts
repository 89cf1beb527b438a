/**
 * `./nuwa demo` arguments (demo/src/cli.ts), checked before anything starts so a bad value is
 * a one-line error naming the option (exit 2), never a half-started demo.
 */
import type { CliValues } from "../../e2e/src/cli-args.js";
import { DEMO_PLAYERS, type DemoPlayerKind, isDemoPlayer } from "./choice.js";
import { demoContents } from "./content.js";

export const DEMO_USAGE = `./nuwa demo [--player dashjs|hlsjs|shaka] [--content DIR] [--trace FILE] [--port N] [--delay-ms MS] [--queue-packets N] [--out DIR]
  live page: video through Nuwa + plots; prints the URL to open. The page lets you pick the
  player (dash.js, hls.js, shaka-player) and the content (the generated ladder, or DIR: any
  packager's DASH VOD, its MPD as ./nuwa play --content finds it); --player is the page's default`;

/** The options table for parseCli. */
export const DEMO_OPTIONS = {
  trace: { type: "string" },
  port: { type: "string" },
  "delay-ms": { type: "string" },
  "queue-packets": { type: "string" },
  out: { type: "string" },
  content: { type: "string" },
  player: { type: "string" },
} as const;

/** Parsed `./nuwa demo` options (DemoOptions' CLI part). */
export interface DemoArgs {
  trace?: string;
  port?: number;
  delay_ms?: number;
  queue_packets?: number;
  out_dir?: string;
  /** `--content DIR`: a DASH VOD the page can pick (and starts with). */
  content?: string;
  /** The page's default player. */
  player: DemoPlayerKind;
}

/**
 * Check the parsed values.
 * @throws Error whose message names the option (`--port must be …`, `--content DIR: no .mpd …`, `--player …`)
 */
export function checkDemoArgs(values: CliValues<typeof DEMO_OPTIONS>): DemoArgs {
  const num = (name: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined) return undefined;
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new Error(`--${name} must be an integer >= ${min} (got ${v})`);
    return x;
  };
  const player = values.player ?? "dashjs";
  if (!isDemoPlayer(player)) throw new Error(`--player must be one of ${DEMO_PLAYERS.join(", ")} (got ${player})`);
  if (values.content !== undefined) {
    const own = demoContents(".", values.content).find((c) => c.id === "own"); // throws when DIR has no MPD
    if (player === "hlsjs" && own?.hls === null) throw new Error(`--player hlsjs: --content ${values.content} has no HLS playlist (master.m3u8); hls.js plays HLS (pick dashjs or shaka)`);
  }
  return {
    trace: values.trace,
    port: num("port", values.port, 0),
    delay_ms: num("delay-ms", values["delay-ms"], 0),
    queue_packets: num("queue-packets", values["queue-packets"], 1),
    out_dir: values.out,
    content: values.content,
    player,
  };
}
