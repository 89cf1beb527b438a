/**
 * A Nuwa session over WebTransport (the adapter around the pure controller):
 * one bidirectional stream per request, response frames fed to the
 * NuwaController with the receive time, grants sent as datagrams
 * (docs/PROTOCOL.md). This file owns the clock, the timers and the sockets;
 * the controller owns none.
 *
 * Browsers without WebTransport (or `transport: "websocket"`) get the
 * `@moq/web-transport-ws` polyfill (WebTransport streams over one WebSocket,
 * PROTOCOL.md "WebSocket fallback"): it has no datagrams, so grants go as
 * 44-byte records on the first client unidirectional stream. Requests and
 * frames are unchanged; the controller sees frames exactly as before.
 */
import WebTransportWs from "@moq/web-transport-ws";
import {
  type Decision,

  encodeGrant,
  type Frame,
  FrameParser,
  FrameType,
  type NuwaConfig,
  NuwaController,
} from "@nuwa/cc";
import { DEFAULT_GRANT_POLICY, GrantPolicy, type GrantPolicyConfig } from "./grants.js";

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
export type NuwaRequest = { op: "get"; path: string; range?: [number, number] } | { op: "bulk"; size_bytes: number };

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

function hexToBytes(hex: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError("serverCertificateHashHex must be 64 hex digits (SHA-256)");
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** One open request: how to fail it now, and how many frame bytes it has counted. */
interface OpenRequest {
  fail: (err: NuwaRequestError) => void;
}

export class NuwaSession {
  readonly controller: NuwaController;
  readonly mode: SessionMode;
  /** Resolves with the reason once the session is over (closed by either side, lost, or stalled). */
  readonly closed: Promise<string>;
  private readonly policy: GrantPolicy;
  private readonly clock_us: () => number;
  /** Where grants go: the datagram writer (WebTransport) or the grant stream's writer (WebSocket fallback). */
  private readonly grant_writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly stall_timeout_us: number;
  private readonly open_requests = new Set<OpenRequest>();
  private resolve_closed!: (reason: string) => void;
  private grant_seq = 0;
  private next_request_id = 0;
  private last_send_time_us = 0;
  private last_recv_us = 0;
  private last_activity_us: number;
  private active_requests = 0;
  private close_reason: string | null = null;
  private stall_reported = false;

  private constructor(
    private readonly wt: WebTransport,
    private readonly opts: SessionOptions,
    /** The transport this session runs on. */
    readonly transport: TransportKind,
    grant_stream: WritableStream<Uint8Array> | null,
  ) {
    this.controller = new NuwaController(opts.cc ?? {});
    this.mode = opts.mode ?? "control";
    this.policy = new GrantPolicy({ ...DEFAULT_GRANT_POLICY, ...opts.grants });
    this.clock_us = opts.clock_us ?? (() => performance.now() * 1000);
    const stall_ms = opts.stall_timeout_ms ?? (opts.onStall ? DEFAULT_STALL_TIMEOUT_MS : DEFAULT_CLOSE_ON_STALL_MS);
    if (!(stall_ms >= 0) || !Number.isFinite(stall_ms)) throw new RangeError(`stall_timeout_ms must be a finite number ≥ 0, got ${stall_ms}`);
    this.stall_timeout_us = stall_ms * 1000;
    this.last_activity_us = this.clock_us();
    this.closed = new Promise((r) => {
      this.resolve_closed = r;
    });
    this.grant_writer = (grant_stream ?? wt.datagrams.writable).getWriter();
    this.timer = setInterval(() => this.onTimer(), opts.tick_interval_ms ?? 5);
    wt.closed.then(
      (info) => this.shutdown(`closed by the server (code ${info?.closeCode ?? 0}${info?.reason ? `: ${info.reason}` : ""})`),
      (err: unknown) => this.shutdown(`connection lost (${String(err)})`),
    );
  }

  /**
   * Open a session.
   * @throws TypeError on a malformed certificate hash or transport; RangeError on a bad stall_timeout_ms; WebTransportError if the handshake fails; Error if the WebSocket fallback closes before it opens
   */
  static async connect(opts: SessionOptions): Promise<NuwaSession> {
    const pref = opts.transport ?? "auto";
    const kind = chooseTransport(pref);
    try {
      return await NuwaSession.open(opts, kind);
    } catch (e) {
      // `auto` with a WebSocket endpoint named: a WebTransport handshake that fails (UDP blocked
      // on the path; or a certificate Chromium's QUIC refuses, e.g. one chaining to a locally
      // installed root, which it accepts only for TCP TLS: docs/DEPLOY.md) falls back to it.
      if (pref === "auto" && kind === "webtransport" && opts.websocket_url) return await NuwaSession.open(opts, "websocket");
      throw e;
    }
  }

  private static async open(opts: SessionOptions, kind: TransportKind): Promise<NuwaSession> {
    let wt: WebTransport;
    if (kind === "websocket") {
      // The polyfill ignores certificate hashes (a browser checks a wss: certificate itself).
      wt = new WebTransportWs(opts.websocket_url ?? opts.url);
    } else {
      const init: WebTransportOptions = {};
      if (opts.serverCertificateHashHex) init.serverCertificateHashes = [{ algorithm: "sha-256", value: hexToBytes(opts.serverCertificateHashHex) as BufferSource }];
      wt = new WebTransport(opts.url, init);
    }
    try {
      if (kind === "websocket") {
        // The polyfill's `ready` never rejects: a WebSocket that fails resolves `closed` instead.
        await Promise.race([
          wt.ready,
          wt.closed.then((info) => {
            throw new Error(`WebSocket session closed before it opened (code ${info?.closeCode ?? 0}${info?.reason ? `: ${info.reason}` : ""})`);
          }),
        ]);
        // Grants: the first client unidirectional stream (id 2), 44-byte records back to back (PROTOCOL.md).
        return new NuwaSession(wt, opts, kind, await wt.createUnidirectionalStream());
      }
      await wt.ready;
      return new NuwaSession(wt, opts, kind, null);
    } catch (e) {
      try {
        wt.close();
      } catch {
        /* never opened */
      }
      throw e;
    }
  }

  private emit(e: TelemetryEvent): void {
    this.opts.onTelemetry?.(e);
  }

  private onTimer(): void {
    if (this.close_reason !== null) return;
    const t = this.clock_us();
    this.controller.tick(t, this.active_requests > 0);
    // Stall watchdog: requests open and nothing received for stall_timeout (a dead server sends no CONNECTION_CLOSE).
    if (this.stall_timeout_us > 0 && !this.stall_reported && this.active_requests > 0 && t - this.last_activity_us > this.stall_timeout_us) {
      const silent_ms = (t - this.last_activity_us) / 1000;
      if (!this.opts.onStall) {
        this.close(`stalled: nothing received for ${silent_ms.toFixed(0)} ms with ${this.active_requests} request(s) open`);
        return;
      }
      this.stall_reported = true;
      this.emit({ type: "session_stalled", t_us: t, silent_ms, open_requests: this.active_requests });
      this.opts.onStall(silent_ms, this.active_requests);
    }
    this.maybeGrant(t);
  }

  private maybeGrant(t_us: number): void {
    if (this.mode !== "control" || this.close_reason !== null) return;
    const window_bytes = Math.round(this.controller.windowBytes);
    if (!this.policy.due(t_us, window_bytes)) return;
    this.grant_seq = (this.grant_seq + 1) >>> 0;
    const cum = this.controller.cumReceivedBytes;
    const grant = encodeGrant({
      grant_seq: this.grant_seq,
      receiver_time_us: Math.max(0, Math.round(t_us)),
      cum_received_bytes: cum,
      window_bytes,
      echo_send_time_us: this.last_send_time_us,
      echo_hold_us: Math.min(2 ** 32 - 1, Math.max(0, Math.round(t_us - this.last_recv_us))),
    });
    this.policy.sent(t_us, window_bytes);
    this.grant_writer.write(grant).catch((err: unknown) => {
      if (this.close_reason === null) this.emit({ type: "error", t_us, message: `grant ${this.transport === "websocket" ? "stream" : "datagram"}: ${String(err)}` }); // after close: expected, not news
    });
    this.emit({ type: "grant", t_us, grant_seq: this.grant_seq, window_bytes, cum_received_bytes: cum });
  }

  private onFrames(frames: Frame[], t_us: number): void {
    for (const f of frames) {
      const decision = this.controller.onFrame(f.header.send_time_us, t_us, f.size_bytes);
      this.last_send_time_us = f.header.send_time_us;
      this.last_recv_us = t_us;
      this.emit({ type: "frame", t_us, seq: f.header.seq, send_time_us: f.header.send_time_us, size_bytes: f.size_bytes, decision });
    }
    this.policy.onFrames(frames.length);
    this.maybeGrant(t_us);
  }

  /**
   * Send one request on its own bidirectional stream and read the framed answer.
   *
   * Abort: the promise rejects at once with an AbortError; a `cancel`
   * request naming this request's `id` tells the server to end the response
   * (ERROR 499 at its next frame, then FIN), and the stream is still read to
   * that end in the background, its frames counted and their payloads
   * dropped (PROTOCOL.md "Cancelling a request"). Cancelling the stream
   * itself (STOP_SENDING) instead would strand the frames already in flight:
   * the server counts them as outstanding until a grant reports them
   * received (PROTOCOL.md "Grants"), and a grant can only report what the
   * page read, so every cancelled stream would shrink the server's usable
   * window for the rest of the session, by up to a whole window (then nothing
   * is ever sent again: the liveness rule needs zero outstanding).
   *
   * @throws NuwaRequestError: `http` on an ERROR frame (its status), `protocol` on a malformed frame or a stream that ends early, `session` if the session closes (or is closed) before the answer is complete, `stream` if the stream is reset
   * @throws DOMException("AbortError") if `signal` aborts
   */
  async request(req: NuwaRequest, o: RequestOptions = {}): Promise<NuwaResponse> {
    if (o.signal?.aborted) throw new DOMException("request aborted", "AbortError");
    if (this.close_reason !== null) throw new NuwaRequestError(`session is closed: ${this.close_reason}`, 0, "session");
    this.active_requests++;
    this.last_activity_us = Math.max(this.last_activity_us, this.clock_us());
    let settled = false;
    let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
    let reject_now!: (e: unknown) => void;
    const failed = new Promise<never>((_, rej) => {
      reject_now = rej;
    });
    failed.catch(() => {});
    const entry: OpenRequest = {
      fail: (err) => {
        reject_now(err);
        reader?.cancel(err.message).catch(() => {});
      },
    };
    this.open_requests.add(entry);
    const id = this.next_request_id;
    this.next_request_id = (this.next_request_id + 1) >>> 0;
    const onAbort = () => {
      reject_now(new DOMException("request aborted", "AbortError"));
      if (!settled && this.close_reason === null) {
        // Ask the server to stop; its answer and the cancelled stream's end are read and counted.
        this.run({ v: 1, op: "cancel", id }, { keep_body: false }).catch((e: unknown) => {
          if (this.close_reason === null) this.emit({ type: "error", t_us: this.clock_us(), message: `cancel ${id}: ${String(e)}` });
        });
      }
    };
    o.signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => {
      if (settled) return;
      settled = true;
      this.active_requests--;
      this.open_requests.delete(entry);
      o.signal?.removeEventListener("abort", onAbort);
    };
    const work = this.run({ v: 1, id, ...req }, o, (r) => {
      reader = r;
    }).finally(done);
    try {
      return await Promise.race([work, failed]);
    } catch (e) {
      // Failed early (abort): the stream is still read to its end by `work`, which keeps the count.
      work.catch(() => {});
      throw e;
    }
  }

  /** The stream work of one request (`wire_request`: the request object as sent): write it, read every frame to FIN, count them all. */
  private async run(wire_request: object, o: RequestOptions, setReader?: (r: ReadableStreamDefaultReader<Uint8Array>) => void): Promise<NuwaResponse> {
    const sessionError = (e?: unknown) =>
      this.close_reason !== null ? new NuwaRequestError(`session closed during the request: ${this.close_reason}`, 0, "session") : new NuwaRequestError(`response stream failed: ${String(e)}`, 0, "stream");
    let stream: WebTransportBidirectionalStream;
    const t_req = this.clock_us();
    try {
      stream = await this.wt.createBidirectionalStream();
      const writer = stream.writable.getWriter();
      await writer.write(new TextEncoder().encode(JSON.stringify(wire_request)));
      await writer.close();
    } catch (e) {
      throw sessionError(e);
    }
    const reader = stream.readable.getReader();
    setReader?.(reader);
    if (this.close_reason !== null) {
      reader.cancel("session closed").catch(() => {});
      throw sessionError();
    }
    const parser = new FrameParser();
    const keep = o.keep_body ?? true;
    const parts: Uint8Array[] = [];
    let head: ResponseHead | null = null;
    let first_byte_us = Number.NaN;
    let loaded = 0;
    let ended = false;
    let error: NuwaRequestError | null = null;
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw sessionError(e);
      }
      if (chunk.done) break;
      const t = this.clock_us();
      this.last_activity_us = t;
      this.stall_reported = false;
      let frames: Frame[];
      try {
        frames = parser.push(chunk.value);
      } catch (e) {
        reader.cancel("malformed frame").catch(() => {});
        throw new NuwaRequestError(`malformed response frame: ${(e as Error).message}`, 0, "protocol");
      }
      this.onFrames(frames, t);
      if (o.signal?.aborted || error) continue; // aborted or failed: keep counting, drop the payloads
      for (const f of frames) {
        if (f.header.type === FrameType.HEAD) {
          head = JSON.parse(new TextDecoder().decode(f.payload)) as ResponseHead;
          first_byte_us = t - t_req;
          this.controller.onRttSample(first_byte_us);
          this.emit({ type: "rtt", t_us: t, rtt_us: first_byte_us });
        } else if (f.header.type === FrameType.DATA) {
          if (!head) {
            error = new NuwaRequestError("DATA before HEAD", 0, "protocol");
            break;
          }
          loaded += f.payload.length;
          if (keep) parts.push(f.payload.slice());
          o.onData?.(f.payload, loaded, head);
        } else if (f.header.type === FrameType.ERROR) {
          const err = JSON.parse(new TextDecoder().decode(f.payload)) as { status: number; error: string };
          const status = Number.isInteger(err.status) && err.status >= 400 && err.status <= 599 ? err.status : 500;
          error = new NuwaRequestError(err.error, status, "http");
        } else if (f.header.type === FrameType.END) {
          ended = true;
        }
      }
    }
    if (this.close_reason !== null && !ended && !error) throw sessionError();
    if (o.signal?.aborted) throw new DOMException("request aborted", "AbortError");
    if (error) throw error;
    try {
      parser.finish();
    } catch (e) {
      throw new NuwaRequestError((e as Error).message, 0, "protocol");
    }
    if (!head || !ended) throw new NuwaRequestError("response stream ended before END", 0, "protocol");
    let body: Uint8Array | null = null;
    if (keep) {
      body = new Uint8Array(loaded);
      let off = 0;
      for (const p of parts) {
        body.set(p, off);
        off += p.length;
      }
    }
    return { head, body, first_byte_us, duration_us: this.clock_us() - t_req };
  }

  /** End the session's own work and fail every open request (idempotent). */
  private shutdown(reason: string): void {
    if (this.close_reason !== null) return;
    this.close_reason = reason;
    clearInterval(this.timer);
    const failed_requests = this.open_requests.size;
    const err = new NuwaRequestError(`session closed during the request: ${reason}`, 0, "session");
    for (const r of this.open_requests) r.fail(err);
    this.open_requests.clear();
    this.emit({ type: "session_closed", t_us: this.clock_us(), reason, failed_requests });
    this.resolve_closed(reason);
  }

  /** Close the session and stop the timers; open requests fail with a `session` error. */
  close(reason = "closed by the player"): void {
    this.shutdown(reason);
    try {
      this.wt.close({ closeCode: 0, reason: reason.slice(0, 1000) });
    } catch {
      /* already closed */
    }
  }

  /** Whether a stall was reported (onStall) and nothing has arrived since. */
  get stalled(): boolean {
    return this.stall_reported;
  }

  /** Receiver time of the last bytes received (or of the last request start), µs. */
  get lastActivityUs(): number {
    return this.last_activity_us;
  }

  /** Why the session ended, or null while it is open. */
  get closeReason(): string | null {
    return this.close_reason;
  }

  /** Number of requests in progress (aborted ones count until their stream ends). */
  get activeRequests(): number {
    return this.active_requests;
  }
}
