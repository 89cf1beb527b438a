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
 *
 * The types, options and errors of this API are in `session-api.ts` (re-exported here).
 */
import WebTransportWs from "@moq/web-transport-ws";
import { encodeGrant, type Frame, FrameParser, FrameType, NuwaController } from "@nuwa/cc";
import { DEFAULT_GRANT_POLICY, GrantPolicy } from "./grants.js";
import {
  chooseTransport,
  DEFAULT_CLOSE_ON_STALL_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  type NuwaRequest,
  NuwaRequestError,
  type NuwaResponse,
  type RequestOptions,
  type ResponseHead,
  type SessionMode,
  type SessionOptions,
  type TelemetryEvent,
  type TransportKind,
} from "./session-api.js";

// The session's contract (options, requests, responses, errors, telemetry) lives in
// session-api.ts; importers of session.ts get it from here as before.
export {
  chooseTransport,
  DEFAULT_CLOSE_ON_STALL_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  type NuwaRequest,
  NuwaRequestError,
  type NuwaResponse,
  type RequestErrorKind,
  type RequestOptions,
  type ResponseHead,
  type SessionMode,
  type SessionOptions,
  type TelemetryEvent,
  type TransportKind,
} from "./session-api.js";

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
  private grant_retry: ReturnType<typeof setTimeout> | null = null; // one pending re-check of a grant the least interval held back
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
    if (!this.policy.due(t_us, window_bytes, this.controller.minRttSampleUs)) return;
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

  /**
   * A grant held back only by the policy's least interval is re-checked when that interval ends, not at
   * the next tick (grants.ts `retryInUs`); again if a timer that fired early finds it still held back.
   */
  private scheduleGrantRetry(t_us: number): void {
    const retry_us = this.policy.retryInUs(t_us, this.controller.minRttSampleUs);
    if (!Number.isFinite(retry_us) || this.grant_retry !== null || this.close_reason !== null) return;
    this.grant_retry = setTimeout(() => {
      this.grant_retry = null;
      if (this.close_reason !== null) return;
      const t = this.clock_us();
      this.maybeGrant(t);
      this.scheduleGrantRetry(t);
    }, retry_us / 1000);
  }

  private onFrames(frames: Frame[], t_us: number): void {
    for (const f of frames) {
      const decision = this.controller.onFrame(f.header.send_time_us, t_us, f.size_bytes);
      this.last_send_time_us = f.header.send_time_us;
      this.last_recv_us = t_us;
      this.emit({ type: "frame", t_us, seq: f.header.seq, send_time_us: f.header.send_time_us, size_bytes: f.size_bytes, decision });
    }
    this.policy.onFrames(frames.length, frames.reduce((a, f) => a + f.size_bytes, 0));
    this.maybeGrant(t_us);
    this.scheduleGrantRetry(t_us);
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
    if (this.grant_retry !== null) clearTimeout(this.grant_retry);
    this.grant_retry = null;
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
