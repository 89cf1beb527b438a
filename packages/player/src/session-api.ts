/**
 * The session's contract, apart from the transport: its options, the transport choice,
 * requests and responses, the typed request error and the telemetry events
 * (docs/PROTOCOL.md "Requests", "Responses"). `session.ts` implements it and re-exports it.
 */
import type { Decision, NuwaConfig } from "@nuwa/cc";
import type { GrantPolicyConfig } from "./grants.js";

/** How a session reaches the server: native WebTransport, or the WebSocket polyfill. */
export type TransportKind = "webtransport" | "websocket";

/**
 * The transport `pref` selects: `auto` takes WebTransport when `globalThis.WebTransport`
 * exists, else the WebSocket fallback.
 * @throws TypeError on a `pref` that is none of auto, webtransport, websocket
 */
export function chooseTransport(pref: "auto" | TransportKind = "auto", g: { WebTransport?: unknown } = globalThis as { WebTransport?: unknown }): TransportKind {
  if (pref === "webtransport" || pref === "websocket") return pref;
  if (pref !== "auto") throw new TypeError(`transport must be auto, webtransport or websocket, got ${JSON.stringify(pref)}`);
  return typeof g.WebTransport === "function" ? "webtransport" : "websocket";
}

/** `control`: the controller's window is granted; `observe`: it estimates only and sends no grants. */
export type SessionMode = "control" | "observe";

export interface SessionOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`. */
  url: string;
  /** SHA-256 of the server's certificate, hex (dev certificates only; production needs none). */
  serverCertificateHashHex?: string;
  /**
   * `auto` (default): WebTransport if the page has it, else the WebSocket fallback; with
   * `websocket_url` given, also the fallback when the WebTransport handshake fails. Or force one.
   */
  transport?: "auto" | TransportKind;
  /**
   * URL of the server's WebSocket endpoint for the fallback (`--ws-port`), e.g.
   * `wss://host:443/nuwa` or `http://127.0.0.1:8443/nuwa` (https→wss, http→ws).
   * Default: `url` (the polyfill rewrites `https:` to `wss:`, same host, port and path).
   */
  websocket_url?: string;
  /** Controller settings (merged over DEFAULT_CONFIG). */
  cc?: Partial<NuwaConfig>;
  mode?: SessionMode;
  /** Grant cadence. */
  grants?: Partial<GrantPolicyConfig>;
  /** Timer period for controller ticks and periodic grants, ms. */
  tick_interval_ms?: number;
  /** Receiver clock, µs (monotonic). Default performance.now() × 1000. */
  clock_us?: () => number;
  /** Telemetry sink. */
  onTelemetry?: (e: TelemetryEvent) => void;
  /**
   * Close the session when requests are open and nothing has arrived for this
   * long, ms (0: never). A server that died without closing (crash, restart,
   * route gone) is otherwise only noticed at QUIC's idle timeout (RFC 9000
   * §10.1, tens of seconds in Chromium). Default 4000 with `onStall`
   * (DEFAULT_STALL_TIMEOUT_MS), 20000 without (DEFAULT_CLOSE_ON_STALL_MS).
   */
  stall_timeout_ms?: number;
  /**
   * Called once per stall (see stall_timeout_ms) instead of closing the
   * session: the caller decides (reconnect.ts opens a second session and
   * closes this one only if the new one answers while this one stays silent,
   * so a link outage does not cost the session but a dead server does).
   * `stalled` turns false again when data arrives.
   */
  onStall?: (silent_ms: number, open_requests: number) => void;
}

/** Default `stall_timeout_ms` when an `onStall` handler decides what a stall means (reconnect.ts). */
export const DEFAULT_STALL_TIMEOUT_MS = 4000;
/**
 * Default `stall_timeout_ms` without an `onStall` handler, when a stall closes the
 * session: longer than the real outages in our traces (12 s on Lumos LTE), so a
 * dark downlink is ridden out (issue 7 item 4), and shorter than Chromium's QUIC
 * idle timeout (30 s), so a dead server is still noticed first here.
 */
export const DEFAULT_CLOSE_ON_STALL_MS = 20_000;

/** Typed telemetry events. */
export type TelemetryEvent =
  | { type: "frame"; t_us: number; seq: number; send_time_us: number; size_bytes: number; decision: Decision }
  | { type: "grant"; t_us: number; grant_seq: number; window_bytes: number; cum_received_bytes: number }
  | { type: "rtt"; t_us: number; rtt_us: number }
  | { type: "error"; t_us: number; message: string }
  | { type: "session_closed"; t_us: number; reason: string; failed_requests: number }
  | { type: "session_stalled"; t_us: number; silent_ms: number; open_requests: number }
  | { type: "session_open"; t_us: number; sessions: number }
  | { type: "reconnect"; t_us: number; attempt: number; delay_ms: number; reason: string };

/** A request (PROTOCOL.md "Requests"). */
/** A request (docs/PROTOCOL.md "Requests"); `cmcd`: the CMCD payload (CTA-5004) the player attached, which the server only logs. */
export type NuwaRequest = { op: "get"; path: string; range?: [number, number]; cmcd?: string } | { op: "bulk"; size_bytes: number };

/** The HEAD frame's content. */
export interface ResponseHead {
  status: number;
  total_bytes: number;
  content_type?: string;
  range?: [number, number];
}

export interface RequestOptions {
  /** Called for each DATA payload as it arrives; `loaded_bytes` counts payload bytes so far. */
  onData?: (payload: Uint8Array, loaded_bytes: number, head: ResponseHead) => void;
  /** Keep the body (default true); bulk downloads pass false. */
  keep_body?: boolean;
  signal?: AbortSignal;
}

export interface NuwaResponse {
  head: ResponseHead;
  body: Uint8Array | null;
  /** Request written → HEAD received, µs. */
  first_byte_us: number;
  /** Request written → END received, µs. */
  duration_us: number;
}

/**
 * What went wrong with a request:
 * - `http`: the server answered ERROR with `status` (400, 403, 404, 416, 500);
 *   the same request would get the same answer.
 * - `protocol`: the response broke the framing rules (PROTOCOL.md "Responses").
 * - `session`: the session closed (server shutdown, connection lost, stall)
 *   while the request was open; it may succeed on a new session.
 * - `stream`: the response stream was reset while the session stayed up.
 */
export type RequestErrorKind = "http" | "protocol" | "session" | "stream";

/** An error answer (ERROR frame), a broken response stream, or a session that went away. */
export class NuwaRequestError extends Error {
  /**
   * @param status HTTP-like status: the ERROR frame's status for `http`, 0 otherwise (as an XHR that failed on the network)
   */
  constructor(
    message: string,
    readonly status: number,
    readonly kind: RequestErrorKind = status > 0 ? "http" : "protocol",
  ) {
    super(message);
    this.name = "NuwaRequestError";
  }

  /** Whether a retry on the same or a new session can succeed (`session`, `stream`). */
  get retryable(): boolean {
    return this.kind === "session" || this.kind === "stream";
  }
}
