/**
 * A Nuwa session over WebTransport (the adapter around the pure controller):
 * one bidirectional stream per request, response frames fed to the
 * NuwaController with the receive time, grants sent as datagrams
 * (docs/PROTOCOL.md). This file owns the clock, the timers and the sockets;
 * the controller owns none.
 */
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

/** `control`: the controller's window is granted; `observe`: it estimates only and sends no grants. */
export type SessionMode = "control" | "observe";

export interface SessionOptions {
  /** Session URL, e.g. `https://127.0.0.1:4433/nuwa`. */
  url: string;
  /** SHA-256 of the server's certificate, hex (dev certificates only; production needs none). */
  serverCertificateHashHex?: string;
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
}

/** Typed telemetry events. */
export type TelemetryEvent =
  | { type: "frame"; t_us: number; seq: number; send_time_us: number; size_bytes: number; decision: Decision }
  | { type: "grant"; t_us: number; grant_seq: number; window_bytes: number; cum_received_bytes: number }
  | { type: "rtt"; t_us: number; rtt_us: number }
  | { type: "error"; t_us: number; message: string };

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

/** An error answer (ERROR frame) or a broken response stream. */
export class NuwaRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "NuwaRequestError";
  }
}

function hexToBytes(hex: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError("serverCertificateHashHex must be 64 hex digits (SHA-256)");
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export class NuwaSession {
  readonly controller: NuwaController;
  readonly mode: SessionMode;
  private readonly policy: GrantPolicy;
  private readonly clock_us: () => number;
  private readonly datagram_writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly timer: ReturnType<typeof setInterval>;
  private grant_seq = 0;
  private last_send_time_us = 0;
  private last_recv_us = 0;
  private active_requests = 0;
  private closed = false;

  private constructor(
    private readonly wt: WebTransport,
    private readonly opts: SessionOptions,
  ) {
    this.controller = new NuwaController(opts.cc ?? {});
    this.mode = opts.mode ?? "control";
    this.policy = new GrantPolicy({ ...DEFAULT_GRANT_POLICY, ...opts.grants });
    this.clock_us = opts.clock_us ?? (() => performance.now() * 1000);
    this.datagram_writer = wt.datagrams.writable.getWriter();
    this.timer = setInterval(() => this.onTimer(), opts.tick_interval_ms ?? 5);
    wt.closed.then(
      () => this.shutdown(),
      () => this.shutdown(),
    );
  }

  /**
   * Open a session.
   * @throws TypeError on a malformed certificate hash; WebTransportError if the handshake fails
   */
  static async connect(opts: SessionOptions): Promise<NuwaSession> {
    const init: WebTransportOptions = {};
    if (opts.serverCertificateHashHex) init.serverCertificateHashes = [{ algorithm: "sha-256", value: hexToBytes(opts.serverCertificateHashHex) as BufferSource }];
    const wt = new WebTransport(opts.url, init);
    await wt.ready;
    return new NuwaSession(wt, opts);
  }

  private emit(e: TelemetryEvent): void {
    this.opts.onTelemetry?.(e);
  }

  private onTimer(): void {
    if (this.closed) return;
    const t = this.clock_us();
    this.controller.tick(t, this.active_requests > 0);
    this.maybeGrant(t);
  }

  private maybeGrant(t_us: number): void {
    if (this.mode !== "control" || this.closed) return;
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
    this.datagram_writer.write(grant).catch((err: unknown) => this.emit({ type: "error", t_us, message: `grant datagram: ${String(err)}` }));
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
   * @throws NuwaRequestError on an ERROR frame, a malformed frame, or a stream that ends early
   * @throws DOMException("AbortError") if `signal` aborts
   */
  async request(req: NuwaRequest, o: RequestOptions = {}): Promise<NuwaResponse> {
    if (this.closed) throw new NuwaRequestError("session is closed", 0);
    const stream = await this.wt.createBidirectionalStream();
    const writer = stream.writable.getWriter();
    const t_req = this.clock_us();
    await writer.write(new TextEncoder().encode(JSON.stringify({ v: 1, ...req })));
    await writer.close();
    const reader = stream.readable.getReader();
    const onAbort = () => {
      reader.cancel("aborted").catch(() => {});
    };
    o.signal?.addEventListener("abort", onAbort, { once: true });
    const parser = new FrameParser();
    const keep = o.keep_body ?? true;
    const parts: Uint8Array[] = [];
    let head: ResponseHead | null = null;
    let first_byte_us = Number.NaN;
    let loaded = 0;
    let ended = false;
    this.active_requests++;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (o.signal?.aborted) throw new DOMException("request aborted", "AbortError");
        if (done) break;
        const t = this.clock_us();
        let frames: Frame[];
        try {
          frames = parser.push(value);
        } catch (e) {
          throw new NuwaRequestError(`malformed response frame: ${(e as Error).message}`, 0);
        }
        this.onFrames(frames, t);
        for (const f of frames) {
          if (f.header.type === FrameType.HEAD) {
            head = JSON.parse(new TextDecoder().decode(f.payload)) as ResponseHead;
            first_byte_us = t - t_req;
            this.controller.onRttSample(first_byte_us);
            this.emit({ type: "rtt", t_us: t, rtt_us: first_byte_us });
          } else if (f.header.type === FrameType.DATA) {
            if (!head) throw new NuwaRequestError("DATA before HEAD", 0);
            loaded += f.payload.length;
            if (keep) parts.push(f.payload.slice());
            o.onData?.(f.payload, loaded, head);
          } else if (f.header.type === FrameType.ERROR) {
            const err = JSON.parse(new TextDecoder().decode(f.payload)) as { status: number; error: string };
            throw new NuwaRequestError(err.error, err.status);
          } else if (f.header.type === FrameType.END) {
            ended = true;
          }
        }
      }
      try {
        parser.finish();
      } catch (e) {
        throw new NuwaRequestError((e as Error).message, 0);
      }
      if (!head || !ended) throw new NuwaRequestError("response stream ended before END", 0);
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
    } finally {
      this.active_requests--;
      o.signal?.removeEventListener("abort", onAbort);
    }
  }

  private shutdown(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  /** Close the session and stop the timers. */
  close(): void {
    this.shutdown();
    try {
      this.wt.close();
    } catch {
      /* already closed */
    }
  }

  /** Number of requests in progress. */
  get activeRequests(): number {
    return this.active_requests;
  }
}


