/**
 * Command-line parsing shared by the `./nuwa` subcommands written in TypeScript: node:util's
 * parseArgs plus `--help` (usage on stdout, exit 0) and a clear one-line error with the usage on
 * stderr (exit 2) for an unknown option, a missing value or a malformed `--cc` JSON object, in
 * place of a stack trace.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;
/** The parsed option values for an options table `O` (as node:util's parseArgs types them). */
export type CliValues<O extends Options> = ReturnType<typeof parseArgs<{ options: O }>>["values"];

/** Print `message` and the usage on stderr and exit 2 (the CLIs' "bad arguments" status). */
export function usageError(usage: string, message: string): never {
  console.error(`error: ${message}\n\nusage: ${usage.trim()}`);
  process.exit(2);
}

/**
 * Parse `argv` (default process.argv after the script) against `options`.
 * @param usage the usage text printed by --help and after an error
 * @returns parseArgs' `values`; never returns on --help or an error
 */
export function parseCli<const O extends Options>(usage: string, options: O, argv: string[] = process.argv.slice(2)): CliValues<O> {
  let values: Record<string, unknown> = {};
  try {
    values = parseArgs({ args: argv, options: { ...options, help: { type: "boolean", short: "h" } } }).values;
  } catch (e) {
    usageError(usage, (e as Error).message);
  }
  if (values.help === true) {
    console.log(`usage: ${usage.trim()}`);
    process.exit(0);
  }
  return values as CliValues<O>;
}

/** Parse a `--cc` value (or another JSON-object flag, named by `flag`): a JSON object of settings (controller settings are checked again by resolveConfig). */
export function parseCcJson(usage: string, text: string | undefined, flag = "--cc"): Record<string, unknown> {
  if (text === undefined || text === "") return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    usageError(usage, `${flag} must be a JSON object (${(e as Error).message})`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) usageError(usage, `${flag} must be a JSON object (got ${text})`);
  return v as Record<string, unknown>;
}
