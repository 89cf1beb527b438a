/**
 * Issue 7 item 2, player side: a malformed response stream fails only its own request.
 * fast-check draws the damage (bytes after a valid HEAD, a corrupted header field, a
 * truncated frame); a second request on the same session is answered normally
 * meanwhile, and the session stays open. WebTransport stand-in on WHATWG streams, as in
 * session.test.ts (the frame codec itself is fuzzed in packages/cc/src/protocol.test.ts).
 */
import { encodeFrame, FrameType } from "@nuwa/cc";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type NuwaRequestError, NuwaSession } from "./session.js";

const RUNS = 1000;

class Stream {
  ctrl!: ReadableStreamDefaultController<Uint8Array>;
  cancelled = false;
  readonly readable = new ReadableStream<Uint8Array>({
    start: (c) => {
      this.ctrl = c;
    },
    cancel: () => {
      this.cancelled = true;
    },
  });
  readonly writable = new WritableStream<Uint8Array>({ write: () => {} });
}

class FakeWt {
  static last: FakeWt | null = null;
  readonly ready = Promise.resolve();
  readonly closed = new Promise<{ closeCode: number; reason: string }>(() => {});
  readonly streams: Stream[] = [];
  readonly datagrams = { writable: new WritableStream<Uint8Array>({ write: () => {} }) };
  closeCalls = 0;
  constructor(readonly url: string) {
    FakeWt.last = this;
  }
  async createBidirectionalStream(): Promise<Stream> {
    const s = new Stream();
    this.streams.push(s);
    return s;
  }
  close(): void {
    this.closeCalls++;
  }
}

const json = (o: object) => new TextEncoder().encode(JSON.stringify(o));

/** A damaged response: a valid HEAD, then `tail` with one guaranteed defect. */
const damaged = fc.oneof(
  // a frame whose version, type or reserved field is wrong
  fc.tuple(fc.constantFrom(0, 1, 2), fc.integer({ min: 1, max: 255 }), fc.uint8Array({ maxLength: 40 })).map(([field, v, payload]) => {
    const f = encodeFrame({ type: FrameType.DATA, seq: 1, send_time_us: 2 }, payload);
    if (field === 0) f[0] = v === 1 ? 2 : v; // version ≠ 1
    if (field === 1) f[1] = v <= 4 ? v + 4 : v; // type outside 1..4
    if (field === 2) f[2] = v; // reserved ≠ 0
    return f;
  }),
  // payload_len beyond 65536
  fc.integer({ min: 65537, max: 2 ** 32 - 1 }).map((len) => {
    const f = encodeFrame({ type: FrameType.DATA, seq: 1, send_time_us: 2 }, new Uint8Array(0));
    new DataView(f.buffer, f.byteOffset).setUint32(16, len);
    return f;
  }),
  // a frame cut short, then FIN
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 60 }), fc.nat()).map(([payload, cut]) => {
    const f = encodeFrame({ type: FrameType.DATA, seq: 1, send_time_us: 2 }, payload);
    return f.subarray(0, cut % f.length);
  }),
);

describe("a malformed stream leaves the session and its other streams alone", () => {
  it(`fuzz: ${RUNS} damaged responses; the neighbour request completes, the session stays open`, async () => {
    (globalThis as unknown as { WebTransport: unknown }).WebTransport = FakeWt;
    await fc.assert(
      fc.asyncProperty(damaged, fc.uint8Array({ minLength: 1, maxLength: 3000 }), async (bad, body) => {
        const s = await NuwaSession.connect({ url: "https://127.0.0.1:1/nuwa", tick_interval_ms: 5 });
        const wt = FakeWt.last!;
        const pBad = s.request({ op: "get", path: "/bad" });
        const pGood = s.request({ op: "get", path: "/good" });
        await expect.poll(() => wt.streams.length).toBe(2);
        const [sb, sg] = wt.streams as [Stream, Stream];
        sb.ctrl.enqueue(encodeFrame({ type: FrameType.HEAD, seq: 0, send_time_us: 1 }, json({ status: 200, total_bytes: 10, body_bytes: 10, content_type: "x" })));
        sb.ctrl.enqueue(bad);
        sb.ctrl.close();
        sg.ctrl.enqueue(encodeFrame({ type: FrameType.HEAD, seq: 2, send_time_us: 3 }, json({ status: 200, total_bytes: body.length, body_bytes: body.length, content_type: "x" })));
        for (let i = 0; i < body.length; i += 1200) sg.ctrl.enqueue(encodeFrame({ type: FrameType.DATA, seq: 3 + i, send_time_us: 4 + i }, body.subarray(i, i + 1200)));
        sg.ctrl.enqueue(encodeFrame({ type: FrameType.END, seq: 99_999, send_time_us: 99_999 }));
        sg.ctrl.close();
        const e = (await pBad.catch((x: unknown) => x)) as NuwaRequestError;
        expect(e.kind).toBe("protocol");
        const good = await pGood;
        expect(good.body).toEqual(body);
        expect(wt.closeCalls).toBe(0);
        // and the session still takes new requests
        const pAfter = s.request({ op: "get", path: "/after" });
        await expect.poll(() => wt.streams.length).toBe(3);
        const sa = wt.streams[2]!;
        sa.ctrl.enqueue(encodeFrame({ type: FrameType.ERROR, seq: 100_000, send_time_us: 100_000 }, json({ status: 404, error: "no" })));
        sa.ctrl.close();
        expect(((await pAfter.catch((x: unknown) => x)) as NuwaRequestError).status).toBe(404);
        s.close();
      }),
      { numRuns: RUNS, seed: 7 },
    );
  });
});
