/**
 * The WebSocket fallback of NuwaSession (the real @moq/web-transport-ws polyfill
 * over a WebSocket stand-in that plays the server): with no `WebTransport` on
 * the page, requests go on client bidi streams (0, 4, …), grants as 44-byte
 * records on client uni stream 2, and the controller sees the same frames.
 * The Python server's side of this framing is tested in server/tests/test_websocket.py;
 * the real browser path in e2e/websocket.e2e.test.ts.
 */
import { decodeGrant, encodeFrame, FrameType } from "@nuwa/cc";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chooseTransport, NuwaSession } from "./session.js";

/** QUIC varint (RFC 9000 §16), written independently of the polyfill. */
function varint(v: number): number[] {
  if (v < 64) return [v];
  if (v < 16384) return [0x40 | (v >> 8), v & 0xff];
  return [0x80 | (v >>> 24), (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
}
function readVarint(b: Uint8Array, off: number): [number, number] {
  const first = b[off]!;
  const len = 1 << (first >> 6);
  let v = first & 0x3f;
  for (let i = 1; i < len; i++) v = v * 256 + b[off + i]!;
  return [v, off + len];
}

interface Frame {
  type: number;
  id: number;
  data: Uint8Array;
}

/** A WebSocket stand-in playing a Nuwa server that speaks the polyfill's framing. */
class FakeWebSocket {
  static last: FakeWebSocket | null = null;
  static refuse = false;
  binaryType = "blob";
  bufferedAmount = 0;
  protocol = "";
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: ArrayBuffer }) => void) | null = null;
  onerror: ((e: { type: string }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  readonly received: Frame[] = [];
  readonly requests = new Map<number, Uint8Array[]>();
  private seq = 0;
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {
    FakeWebSocket.last = this;
    setTimeout(() => {
      if (FakeWebSocket.refuse) {
        this.onerror?.({ type: "error" });
        this.onclose?.({ code: 1006, reason: "" });
        return;
      }
      this.protocol = "webtransport";
      this.onopen?.();
    }, 1);
  }
  send(chunk: Uint8Array): void {
    const b = new Uint8Array(chunk);
    const [id, off] = readVarint(b, 1);
    const f = { type: b[0]!, id, data: b.slice(off) };
    this.received.push(f);
    if ((f.type === 0x08 || f.type === 0x09) && id % 4 === 0) {
      const parts = this.requests.get(id) ?? [];
      parts.push(f.data);
      this.requests.set(id, parts);
      if (f.type === 0x09) this.answer(id, JSON.parse(new TextDecoder().decode(Buffer.concat(parts))) as { path: string });
    }
  }
  close(): void {
    this.onclose?.({ code: 1000, reason: "" });
  }
  /** The server's STREAM frame to the client. */
  push(id: number, data: Uint8Array, fin: boolean): void {
    const msg = new Uint8Array([fin ? 0x09 : 0x08, ...varint(id), ...data]);
    this.onmessage?.({ data: msg.buffer });
  }
  private answer(id: number, req: { path: string }): void {
    const body = new TextEncoder().encode(`body of ${req.path}`);
    const t = Date.now() * 1000;
    const head = new TextEncoder().encode(JSON.stringify({ status: 200, total_bytes: body.length, body_bytes: body.length }));
    setTimeout(() => {
      this.push(id, encodeFrame({ type: FrameType.HEAD, seq: this.seq++, send_time_us: t }, head), false);
      this.push(id, encodeFrame({ type: FrameType.DATA, seq: this.seq++, send_time_us: t + 100 }, body), false);
      this.push(id, encodeFrame({ type: FrameType.END, seq: this.seq++, send_time_us: t + 200 }), true);
    }, 2);
  }
}

const g = globalThis as unknown as { WebTransport?: unknown; WebSocket?: unknown };
let savedWs: unknown;
beforeEach(() => {
  savedWs = g.WebSocket;
  g.WebSocket = FakeWebSocket;
  delete g.WebTransport;
  FakeWebSocket.refuse = false;
});
afterEach(() => {
  g.WebSocket = savedWs;
});

describe("chooseTransport", () => {
  it("picks WebTransport when the page has it, else the WebSocket fallback; forced choices win", () => {
    expect(chooseTransport("auto", { WebTransport: class {} })).toBe("webtransport");
    expect(chooseTransport("auto", {})).toBe("websocket");
    expect(chooseTransport("websocket", { WebTransport: class {} })).toBe("websocket");
    expect(chooseTransport("webtransport", {})).toBe("webtransport");
    expect(() => chooseTransport("udp" as never, {})).toThrow(/auto, webtransport or websocket/);
  });
});

describe("auto: a failed WebTransport handshake falls back to the WebSocket endpoint the site named", () => {
  class RefusedWebTransport {
    static made = 0;
    readonly ready: Promise<void>;
    readonly closed: Promise<never>;
    constructor() {
      RefusedWebTransport.made++;
      const err = new Error("Opening handshake failed.");
      this.ready = Promise.reject(err);
      this.closed = Promise.reject(err);
      this.ready.catch(() => {});
      this.closed.catch(() => {});
    }
    close(): void {}
  }
  it("uses the WebSocket when websocket_url is given, and only then; a forced transport never falls back", async () => {
    g.WebTransport = RefusedWebTransport;
    try {
      const s = await NuwaSession.connect({ url: "https://localhost:4433/nuwa", websocket_url: "wss://localhost:4433/nuwa", tick_interval_ms: 2 });
      expect(RefusedWebTransport.made).toBe(1);
      expect(s.transport).toBe("websocket");
      expect(FakeWebSocket.last!.url).toBe("wss://localhost:4433/nuwa");
      const r = await s.request({ op: "get", path: "/a.m4s" });
      expect(new TextDecoder().decode(r.body!)).toBe("body of /a.m4s");
      s.close();
      await expect(NuwaSession.connect({ url: "https://localhost:4433/nuwa" })).rejects.toThrow(/handshake failed/);
      await expect(NuwaSession.connect({ url: "https://localhost:4433/nuwa", websocket_url: "wss://localhost:4433/nuwa", transport: "webtransport" })).rejects.toThrow(/handshake failed/);
    } finally {
      delete g.WebTransport;
    }
  });
});

describe("NuwaSession over the WebSocket polyfill", () => {
  it("sends requests on bidi streams and grants as 44-byte records on uni stream 2", async () => {
    const s = await NuwaSession.connect({ url: "https://127.0.0.1:4433/nuwa", websocket_url: "http://127.0.0.1:8443/nuwa?x=1", tick_interval_ms: 2 });
    const ws = FakeWebSocket.last!;
    expect(s.transport).toBe("websocket");
    expect(ws.url).toBe("ws://127.0.0.1:8443/nuwa?x=1");
    expect(ws.protocols).toContain("webtransport");
    const a = await s.request({ op: "get", path: "/a.m4s" });
    const b = await s.request({ op: "get", path: "/b.m4s" });
    expect(new TextDecoder().decode(a.body!)).toBe("body of /a.m4s");
    expect(new TextDecoder().decode(b.body!)).toBe("body of /b.m4s");
    expect([...ws.requests.keys()]).toEqual([0, 4]);
    // the controller counted every frame byte (HEAD + DATA + END of both)
    expect(s.controller.cumReceivedBytes).toBeGreaterThan(2 * 3 * 20);
    await new Promise((r) => setTimeout(r, 30));
    const grantBytes = Buffer.concat(ws.received.filter((f) => f.id === 2).map((f) => f.data));
    expect(grantBytes.length).toBeGreaterThan(0);
    expect(grantBytes.length % 44).toBe(0);
    const grants = [];
    for (let o = 0; o < grantBytes.length; o += 44) grants.push(decodeGrant(new Uint8Array(grantBytes.subarray(o, o + 44))));
    expect(grants.map((x) => x.grant_seq)).toEqual(grants.map((_, i) => i + 1));
    expect(grants.at(-1)!.cum_received_bytes).toBe(s.controller.cumReceivedBytes);
    expect(ws.received.every((f) => f.id % 4 === 0 || f.id === 2)).toBe(true);
    s.close();
  });

  it("defaults the WebSocket URL to the session URL (https→wss) and forced transport works with WebTransport present", async () => {
    g.WebTransport = class {
      constructor() {
        throw new Error("must not be used");
      }
    };
    const s = await NuwaSession.connect({ url: "https://example.test:4433/nuwa", transport: "websocket" });
    expect(FakeWebSocket.last!.url).toBe("wss://example.test:4433/nuwa");
    s.close();
  });

  it("fails connect with a clear error when the WebSocket does not open", async () => {
    FakeWebSocket.refuse = true;
    await expect(NuwaSession.connect({ url: "https://127.0.0.1:1/nuwa" })).rejects.toThrow(/closed before it opened/);
  });
});
