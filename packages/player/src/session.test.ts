/**
 * NuwaSession error paths without a browser: a WebTransport stand-in built on
 * Node's WHATWG streams plays the server, frame by frame (encoded with the
 * @nuwa/cc codec that the protocol vectors check).
 */
import { encodeFrame, FrameType } from "@nuwa/cc";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NuwaRequestError, NuwaSession } from "./session.js";

/** One request stream as the fake server sees it. */
class ServerStream {
  request = "";
  requestDone: Promise<void>;
  private ctrl!: ReadableStreamDefaultController<Uint8Array>;
  cancelled: unknown = null;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  constructor() {
    let done!: () => void;
    this.requestDone = new Promise((r) => {
      done = r;
    });
    this.readable = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.ctrl = c;
      },
      cancel: (reason) => {
        this.cancelled = reason ?? "cancelled";
      },
    });
    this.writable = new WritableStream<Uint8Array>({
      write: (chunk) => {
        this.request += new TextDecoder().decode(chunk);
      },
      close: () => done(),
    });
  }
  private seq = 0;
  send(type: number, payload: Uint8Array | object = new Uint8Array(0), send_time_us = 1_000_000): void {
    const body = payload instanceof Uint8Array ? payload : new TextEncoder().encode(JSON.stringify(payload));
    this.ctrl.enqueue(encodeFrame({ type: type as 1, seq: this.seq++, send_time_us }, body));
  }
  fin(): void {
    this.ctrl.close();
  }
  reset(): void {
    this.ctrl.error(new Error("stream reset by the peer"));
  }
}

class FakeWebTransport {
  static last: FakeWebTransport | null = null;
  readonly ready = Promise.resolve();
  readonly closed: Promise<{ closeCode: number; reason: string }>;
  readonly streams: ServerStream[] = [];
  readonly datagrams = { writable: new WritableStream<Uint8Array>({ write: () => {} }) };
  closeCalls = 0;
  private resolveClosed!: (i: { closeCode: number; reason: string }) => void;
  private rejectClosed!: (e: unknown) => void;
  private onStream: ((s: ServerStream) => void) | null = null;
  constructor(readonly url: string) {
    this.closed = new Promise((res, rej) => {
      this.resolveClosed = res;
      this.rejectClosed = rej;
    });
    FakeWebTransport.last = this;
  }
  async createBidirectionalStream(): Promise<ServerStream> {
    const s = new ServerStream();
    this.streams.push(s);
    this.onStream?.(s);
    return s;
  }
  nextStream(): Promise<ServerStream> {
    return new Promise((r) => {
      this.onStream = (s) => {
        this.onStream = null;
        r(s);
      };
    });
  }
  close(): void {
    this.closeCalls++;
    this.resolveClosed({ closeCode: 0, reason: "client" });
  }
  /** The server ends the session (CONNECT stream FIN). */
  serverClose(): void {
    this.resolveClosed({ closeCode: 0, reason: "server_shutdown" });
  }
  /** The connection is lost (e.g. idle timeout). */
  lose(): void {
    this.rejectClosed(new Error("connection lost"));
  }
}

async function open(opts: { stall_timeout_ms?: number; clock?: () => number } = {}): Promise<{ s: NuwaSession; wt: FakeWebTransport }> {
  (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
  const s = await NuwaSession.connect({ url: "https://127.0.0.1:1/nuwa", stall_timeout_ms: opts.stall_timeout_ms, clock_us: opts.clock, tick_interval_ms: 5 });
  return { s, wt: FakeWebTransport.last! };
}

const HEAD = FrameType.HEAD;
const DATA = FrameType.DATA;
const END = FrameType.END;
const ERROR = FrameType.ERROR;

afterEach(() => {
  vi.useRealTimers();
});

describe("NuwaSession request outcomes", () => {
  it("returns the body of HEAD, DATA…, END", async () => {
    const { s, wt } = await open();
    const next = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await next;
    await st.requestDone;
    expect(JSON.parse(st.request)).toEqual({ v: 1, id: 0, op: "get", path: "/a" });
    st.send(HEAD, { status: 200, total_bytes: 3, body_bytes: 3 });
    st.send(DATA, new Uint8Array([1, 2, 3]));
    st.send(END);
    st.fin();
    const r = await p;
    expect(r.head.status).toBe(200);
    expect([...r.body!]).toEqual([1, 2, 3]);
    expect(s.activeRequests).toBe(0);
    s.close();
  });

  it("maps an ERROR frame to an http error carrying its status (404)", async () => {
    const { s, wt } = await open();
    const next = wt.nextStream();
    const p = s.request({ op: "get", path: "/missing" });
    const st = await next;
    st.send(ERROR, { status: 404, error: "404 not_found" });
    st.fin();
    const e = (await p.catch((x: unknown) => x)) as NuwaRequestError;
    expect(e).toBeInstanceOf(NuwaRequestError);
    expect(e.status).toBe(404);
    expect(e.kind).toBe("http");
    expect(e.retryable).toBe(false);
    s.close();
  });

  it("a stream that ends before END is a protocol error (status 0), not a hang", async () => {
    const { s, wt } = await open();
    const next = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await next;
    st.send(HEAD, { status: 200, total_bytes: 10, body_bytes: 10 });
    st.send(DATA, new Uint8Array(4));
    st.fin();
    const e = (await p.catch((x: unknown) => x)) as NuwaRequestError;
    expect(e.kind).toBe("protocol");
    expect(e.status).toBe(0);
    s.close();
  });

  it("a malformed frame fails the request and cancels (STOP_SENDING) the stream", async () => {
    const { s, wt } = await open();
    const next = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await next;
    const bad = encodeFrame({ type: 1, seq: 0, send_time_us: 1 }, new Uint8Array(0));
    bad[0] = 9; // version 9
    (st as unknown as { ctrl: ReadableStreamDefaultController<Uint8Array> }).ctrl.enqueue(bad);
    const e = (await p.catch((x: unknown) => x)) as NuwaRequestError;
    expect(e.kind).toBe("protocol");
    expect(e.message).toMatch(/malformed/);
    await vi.waitFor(() => expect(st.cancelled).not.toBeNull(), { timeout: 10_000 });
    s.close();
  });

  it("a stream reset while the session is up is a retryable `stream` error", async () => {
    const { s, wt } = await open();
    const next = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await next;
    st.send(HEAD, { status: 200, total_bytes: 10, body_bytes: 10 });
    st.reset();
    const e = (await p.catch((x: unknown) => x)) as NuwaRequestError;
    expect(e.kind).toBe("stream");
    expect(e.retryable).toBe(true);
    s.close();
  });
});

describe("NuwaSession close and stall", () => {
  it("fails every open request at once when the server closes the session mid-response", async () => {
    const { s, wt } = await open();
    const n1 = wt.nextStream();
    const p1 = s.request({ op: "get", path: "/a" });
    const st1 = await n1;
    const n2 = wt.nextStream();
    const p2 = s.request({ op: "get", path: "/b" });
    await n2;
    st1.send(HEAD, { status: 200, total_bytes: 100000, body_bytes: 100000 });
    st1.send(DATA, new Uint8Array(1000));
    // Both requests are reading their streams when the session goes.
    await vi.waitFor(() => expect(s.controller.cumReceivedBytes).toBeGreaterThan(1000), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 10));
    wt.serverClose(); // streams stay open in this fake: the session must not wait for them
    // "At once": both settle before a 50 ms timer fires (timers fire in order of expiry, after the
    // microtasks), whatever the host's load, so a wait on the streams or on a timeout fails this.
    let settled = false;
    const both = Promise.all([p1.catch((x: unknown) => x), p2.catch((x: unknown) => x)]).then((r) => {
      settled = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(settled).toBe(true);
    const [e1, e2] = (await both) as NuwaRequestError[];
    for (const e of [e1, e2]) {
      expect(e).toBeInstanceOf(NuwaRequestError);
      expect(e!.kind).toBe("session");
      expect(e!.status).toBe(0);
      expect(e!.retryable).toBe(true);
    }
    expect(await s.closed).toMatch(/closed by the server/);
    expect(s.closeReason).toMatch(/server_shutdown/);
    // A request on a closed session fails at once too.
    await expect(s.request({ op: "get", path: "/c" })).rejects.toMatchObject({ kind: "session" });
  });

  it("a lost connection (closed rejects) fails open requests as `session` errors", async () => {
    const { s, wt } = await open();
    const n = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    await n;
    wt.lose();
    await expect(p).rejects.toMatchObject({ kind: "session" });
    expect(await s.closed).toMatch(/connection lost/);
  });

  it("closes a session that stays silent past stall_timeout_ms with a request open, and only then", async () => {
    let now_us = 0;
    const { s, wt } = await open({ stall_timeout_ms: 300, clock: () => now_us });
    const n = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await n;
    const failed = vi.fn();
    p.catch(failed);
    // Data keeps arriving every 200 ms: no stall.
    for (let i = 0; i < 5; i++) {
      now_us += 200_000;
      st.send(i === 0 ? HEAD : DATA, i === 0 ? { status: 200, total_bytes: 100, body_bytes: 100 } : new Uint8Array(10));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(failed).not.toHaveBeenCalled();
    expect(s.closeReason).toBeNull();
    // Silence: 350 ms on the session clock.
    now_us += 350_000;
    await new Promise((r) => setTimeout(r, 30));
    await expect(p).rejects.toMatchObject({ kind: "session" });
    expect(s.closeReason).toMatch(/stalled: nothing received for 350 ms with 1 request/);
    expect(wt.closeCalls).toBe(1);
  });

  it("without onStall or an explicit timeout, rides out a 12 s dark downlink and closes only after 20 s", async () => {
    let now_us = 0;
    const { s, wt } = await open({ clock: () => now_us });
    const n = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await n;
    p.catch(() => {});
    st.send(HEAD, { status: 200, total_bytes: 100, body_bytes: 100 });
    await new Promise((r) => setTimeout(r, 20));
    now_us += 12_000_000; // Lumos LTE's outage
    await new Promise((r) => setTimeout(r, 30));
    expect(s.closeReason).toBeNull();
    now_us += 8_500_000;
    await new Promise((r) => setTimeout(r, 30));
    expect(s.closeReason).toMatch(/stalled: nothing received for 20500 ms/);
  });

  it("with onStall: reports the stall once instead of closing; `stalled` clears when data arrives", async () => {
    let now_us = 0;
    const stalls: number[] = [];
    (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
    const s = await NuwaSession.connect({ url: "https://127.0.0.1:1/nuwa", stall_timeout_ms: 300, clock_us: () => now_us, tick_interval_ms: 5, onStall: (ms) => stalls.push(ms) });
    const wt = FakeWebTransport.last!;
    const n = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await n;
    now_us += 400_000;
    await new Promise((r) => setTimeout(r, 30));
    expect(stalls).toEqual([400]);
    expect(s.stalled).toBe(true);
    expect(s.closeReason).toBeNull(); // the caller decides
    now_us += 400_000;
    await new Promise((r) => setTimeout(r, 30));
    expect(stalls).toHaveLength(1); // once per stall
    st.send(HEAD, { status: 200, total_bytes: 1, body_bytes: 1 });
    st.send(DATA, new Uint8Array(1));
    st.send(END);
    st.fin();
    await p;
    expect(s.stalled).toBe(false);
    s.close();
  });

  it("an idle session (no request open) is not closed by the stall watchdog", async () => {
    let now_us = 0;
    const { s } = await open({ stall_timeout_ms: 100, clock: () => now_us });
    now_us += 10_000_000;
    await new Promise((r) => setTimeout(r, 30));
    expect(s.closeReason).toBeNull();
    s.close();
  });

  it("rejects a bad stall_timeout_ms", async () => {
    (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
    await expect(NuwaSession.connect({ url: "https://127.0.0.1:1/nuwa", stall_timeout_ms: -1 })).rejects.toThrow(RangeError);
  });
});

describe("NuwaSession abort", () => {
  it("rejects at once with AbortError, keeps reading the stream to its end and counts every frame", async () => {
    const { s, wt } = await open();
    const ac = new AbortController();
    const n = wt.nextStream();
    const onData = vi.fn();
    const p = s.request({ op: "get", path: "/a" }, { signal: ac.signal, onData });
    const st = await n;
    st.send(HEAD, { status: 200, total_bytes: 3000, body_bytes: 3000 });
    st.send(DATA, new Uint8Array(1000));
    await new Promise((r) => setTimeout(r, 10));
    const before = s.controller.cumReceivedBytes;
    ac.abort();
    await expect(p).rejects.toMatchObject({ name: "AbortError" });
    // A cancel naming the request's id goes out on its own stream (PROTOCOL.md "Cancelling a request").
    await vi.waitFor(() => expect(wt.streams).toHaveLength(2), { timeout: 10_000 });
    const cancel = wt.streams[1]!;
    await cancel.requestDone;
    expect(JSON.parse(cancel.request)).toEqual({ v: 1, op: "cancel", id: 0 });
    cancel.send(HEAD, { status: 200, total_bytes: 0, body_bytes: 0 });
    cancel.send(END);
    cancel.fin();
    // Frames already in flight still arrive: counted (the grant reports them), payload dropped.
    st.send(DATA, new Uint8Array(1000));
    st.send(DATA, new Uint8Array(1000));
    st.send(ERROR, { status: 499, error: "cancelled by the client" });
    st.fin();
    await vi.waitFor(() => expect(s.activeRequests).toBe(0), { timeout: 10_000 });
    // 2 DATA + the 499 on the cancelled stream (its JSON payload), HEAD + END on the cancel stream.
    const err499 = new TextEncoder().encode(JSON.stringify({ status: 499, error: "cancelled by the client" })).length;
    const head0 = new TextEncoder().encode(JSON.stringify({ status: 200, total_bytes: 0, body_bytes: 0 })).length;
    await vi.waitFor(() => expect(s.controller.cumReceivedBytes - before).toBe(2 * (20 + 1000) + 20 + err499 + 20 + head0 + 20), { timeout: 10_000 });
    expect(onData).toHaveBeenCalledTimes(1); // only the DATA before the abort reached the caller
    expect(st.cancelled).toBeNull();
    s.close();
  });

  it("an already aborted signal sends nothing", async () => {
    const { s, wt } = await open();
    const ac = new AbortController();
    ac.abort();
    await expect(s.request({ op: "get", path: "/a" }, { signal: ac.signal })).rejects.toMatchObject({ name: "AbortError" });
    expect(wt.streams).toHaveLength(0);
    s.close();
  });
});

describe("NuwaSession grants", () => {
  it("a grant the policy's least interval held back goes when the interval ends, not at the next tick (grants.ts retryInUs)", async () => {
    let now_us = 0;
    const grants_us: number[] = [];
    (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWebTransport;
    // a tick every 10 s: only the re-check can send the second grant within the test
    const s = await NuwaSession.connect({
      url: "https://127.0.0.1:1/nuwa",
      clock_us: () => now_us,
      tick_interval_ms: 10_000,
      onTelemetry: (e) => {
        if (e.type === "grant") grants_us.push(e.t_us);
      },
    });
    const wt = FakeWebTransport.last!;
    const n = wt.nextStream();
    const p = s.request({ op: "get", path: "/a" });
    const st = await n;
    now_us = 300; // the first byte 0.3 ms after the request: a 0.3 ms path (the re-check is for paths under 10 ms)
    st.send(HEAD, { status: 200, total_bytes: 8, body_bytes: 8 });
    await new Promise((r) => setTimeout(r, 20));
    expect(grants_us).toEqual([300]); // the first frame's grant
    now_us = 800; // 8 frames 0.5 ms later: news, inside the 1 ms least interval
    for (let i = 0; i < 8; i++) st.send(DATA, new Uint8Array(1));
    await new Promise((r) => setTimeout(r, 20));
    now_us = 1_400;
    await new Promise((r) => setTimeout(r, 20));
    expect(grants_us).toEqual([300, 1_400]);
    st.send(END);
    st.fin();
    await p;
    s.close();
  });
});
