/**
 * The loader's contract with dash.js's HTTPLoader (dash.js 5.2.1
 * HTTPLoader._internalLoad): what status, which callbacks, in which order,
 * for each way a request can end. The session is a stand-in; the session's
 * own error paths are in ../session.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type NuwaRequest, NuwaRequestError, type NuwaResponse, type RequestOptions, type ResponseHead } from "../session.js";
import { type CommonMediaRequest, type CommonMediaResponse, cmcdOf, failureStatus, fetchResumable, type LoadedRequest, MAX_FETCH_AHEAD, MAX_INIT_PREFETCH_BYTES, makeNuwaLoader, OPEN_RANGE_LAST, parseRangeHeader, type RequestSession, TimedOutTransfers, type Transfer } from "./loader.js";

type Handler = (req: NuwaRequest, o: RequestOptions) => Promise<NuwaResponse>;

/** A session whose request() runs the next handler in line. */
function fakeSession(handlers: Handler[]): RequestSession & { calls: NuwaRequest[] } {
  const calls: NuwaRequest[] = [];
  return {
    calls,
    request: (req: NuwaRequest, o: RequestOptions = {}) => {
      calls.push(req);
      const h = handlers.shift();
      if (!h) throw new Error("no more handlers");
      return h(req, o);
    },
  } as RequestSession & { calls: NuwaRequest[] };
}

/** Serve `bytes` (or the requested range of it) in chunks of `chunk`, failing after `fail_after` bytes if given. */
function serve(bytes: Uint8Array, chunk = 4, fail_after?: number, err: () => Error = () => new NuwaRequestError("session closed during the request: test", 0, "session")): Handler {
  return async (req, o) => {
    const range = req.op === "get" ? req.range : undefined;
    const first = range ? range[0] : 0;
    const last = range ? Math.min(range[1], bytes.length - 1) : bytes.length - 1;
    const head: ResponseHead = { status: range ? 206 : 200, total_bytes: bytes.length, ...(range ? { range: [first, last] as [number, number] } : {}) };
    let loaded = 0;
    for (let off = first; off <= last; off += chunk) {
      if (fail_after !== undefined && loaded >= fail_after) throw err();
      const p = bytes.slice(off, Math.min(off + chunk, last + 1));
      loaded += p.length;
      o.onData?.(p, loaded, head);
      await Promise.resolve();
    }
    return { head, body: bytes.slice(first, last + 1), first_byte_us: 1, duration_us: 2 };
  };
}

function dashRequest(url: string, extra: Partial<CommonMediaRequest> = {}) {
  const events: string[] = [];
  const progress: { loaded: number; total: number }[] = [];
  const req: CommonMediaRequest = {
    url,
    responseType: "arraybuffer",
    ...extra,
    customData: {
      onloadend: () => events.push("loadend"),
      onabort: () => events.push("abort"),
      ontimeout: () => events.push("timeout"),
      onprogress: (e) => progress.push({ loaded: e.loaded, total: e.total }),
    },
  };
  const res: CommonMediaResponse = {};
  return { req, res, events, progress };
}

// vi.waitFor's default gives up after 1 s; CI runs these beside the computation lane, where one
// wait took 1.14 s (twenty-sixth session). Waiting longer cannot pass a condition that never holds.
const until = (f: () => boolean) => vi.waitFor(() => expect(f()).toBe(true), { timeout: 10_000 });
const BYTES = Uint8Array.from({ length: 40 }, (_, i) => i);

afterEach(() => {
  vi.useRealTimers();
});

describe("parseRangeHeader / failureStatus", () => {
  it("parses inclusive ranges and rejects the rest", () => {
    expect(parseRangeHeader("bytes=10-19")).toEqual([10, 19]);
    expect(parseRangeHeader("bytes=19-10")).toBeUndefined();
    expect(parseRangeHeader("bytes=10-")).toEqual([10, OPEN_RANGE_LAST]); // to the end (RFC 9110 §14.1.2)
    expect(parseRangeHeader("bytes=-500")).toBeUndefined(); // suffix range
    expect(parseRangeHeader("bytes=0-9,20-29")).toBeUndefined(); // several ranges
    expect(parseRangeHeader(undefined)).toBeUndefined();
  });
  it("maps http errors to their status and everything else to 0", () => {
    expect(failureStatus(new NuwaRequestError("404 not_found", 404, "http")).status).toBe(404);
    expect(failureStatus(new NuwaRequestError("x", 0, "session")).status).toBe(0);
    expect(failureStatus(new NuwaRequestError("x", 0, "protocol")).status).toBe(0);
    expect(failureStatus(new TypeError("boom"))).toEqual({ status: 0, statusText: "TypeError: boom" });
  });
});

describe("NuwaLoader → dash.js", () => {
  it("success: status, body, progress at first byte and at the end, then onloadend once", async () => {
    const s = fakeSession([serve(BYTES, 4)]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events, progress } = dashRequest("https://h:1/v/seg-1.m4s");
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(res.status).toBe(200);
    expect([...new Uint8Array(res.data as ArrayBuffer)]).toEqual([...BYTES]);
    expect(progress[0]).toEqual({ loaded: 4, total: 40 });
    expect(progress.at(-1)).toEqual({ loaded: 40, total: 40 });
    expect(s.calls[0]).toEqual({ op: "get", path: "/v/seg-1.m4s" });
  });

  it("progress: one event per chunk read (not per 64 kB), each with loaded, total and time, as fetch's reader gives them", async () => {
    // 200 kB in reads of two 1000-byte DATA frames each: a browser's fetch reader would hand
    // dash.js 100 chunks, so its throughput and abandon rules get 100 samples, not 4.
    const body = Uint8Array.from({ length: 200_000 }, (_, i) => i & 0xff);
    const bursts: Handler = async (_req, o) => {
      const head: ResponseHead = { status: 200, total_bytes: body.length };
      let loaded = 0;
      for (let off = 0; off < body.length; off += 2000) {
        for (const f of [body.slice(off, off + 1000), body.slice(off + 1000, off + 2000)]) {
          loaded += f.length;
          o.onData?.(f, loaded, head); // the frames of one read arrive in one synchronous burst
        }
        await new Promise((r) => setTimeout(r, 0)); // the next read
      }
      return { head, body, first_byte_us: 1, duration_us: 2 };
    };
    const s = fakeSession([bursts]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/v/seg-7.m4s");
    const seen: { loaded: number; total: number; lengthComputable: boolean; time?: number }[] = [];
    req.customData.onprogress = (e) => void seen.push(e);
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(seen.map((e) => e.loaded)).toEqual(Array.from({ length: 100 }, (_, i) => 2000 * (i + 1)));
    expect(seen.every((e) => e.total === 200_000 && e.lengthComputable)).toBe(true);
    expect(seen.every((e) => typeof e.time === "number" && e.time >= 0)).toBe(true);
    // `time` is the interval since the previous event (dash.js's trace duration): they add up to the download
    const sum_ms = seen.reduce((a, e) => a + (e.time ?? 0), 0);
    expect(sum_ms).toBeGreaterThan(0);
    expect(res.status).toBe(200);
  });

  it("an ERROR 404 answer reaches dash.js as status 404 (its retry settings apply)", async () => {
    const s = fakeSession([() => Promise.reject(new NuwaRequestError("404 not_found", 404, "http"))]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/seg-9.m4s");
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(res.status).toBe(404);
    expect(res.statusText).toMatch(/http: 404/);
    expect(res.data).toBeUndefined();
    expect(s.calls).toHaveLength(1); // no retry inside the loader for an answer
  });

  it("no session to be had: status 0 (a network error), not a hang", async () => {
    const loader = makeNuwaLoader(() => Promise.reject(new Error("WebTransportError: Opening handshake failed.")))() as {
      load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean;
    };
    const { req, res, events } = dashRequest("https://h:1/manifest.mpd", { responseType: "text" });
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(res.status).toBe(0);
    expect(res.statusText).toMatch(/handshake failed/);
  });

  it("session lost mid-segment: waits for the next session and asks only for the missing bytes", async () => {
    const first = fakeSession([serve(BYTES, 4, 12)]);
    const second = fakeSession([serve(BYTES, 4)]);
    let n = 0;
    const loader = makeNuwaLoader(async () => (n++ === 0 ? first : second))() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/seg-2.m4s");
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(second.calls[0]).toEqual({ op: "get", path: "/seg-2.m4s", range: [12, 39] });
    expect(res.status).toBe(200); // the status of the request dash.js made
    expect([...new Uint8Array(res.data as ArrayBuffer)]).toEqual([...BYTES]);
  });

  it("resumes inside a requested range", async () => {
    const first = fakeSession([serve(BYTES, 4, 8)]);
    const second = fakeSession([serve(BYTES, 4)]);
    let n = 0;
    const loader = makeNuwaLoader(async () => (n++ === 0 ? first : second))() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/seg-2.m4s", { headers: { Range: "bytes=10-29" } });
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(first.calls[0]).toEqual({ op: "get", path: "/seg-2.m4s", range: [10, 29] });
    expect(second.calls[0]).toEqual({ op: "get", path: "/seg-2.m4s", range: [18, 29] });
    expect(res.status).toBe(206);
    expect([...new Uint8Array(res.data as ArrayBuffer)]).toEqual([...BYTES.slice(10, 30)]);
  });

  it("gives up after max_resumes session losses with status 0", async () => {
    const lose = serve(BYTES, 4, 4);
    const s = fakeSession([lose, lose, lose]);
    const loader = makeNuwaLoader(async () => s, { max_resumes: 2 })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/seg-3.m4s");
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(s.calls).toHaveLength(3);
    expect(res.status).toBe(0);
    expect(res.statusText).toMatch(/^session:/);
  });

  it("a protocol error is not resumed: status 0 at once", async () => {
    const s = fakeSession([serve(BYTES, 4, 4, () => new NuwaRequestError("malformed response frame: frame_version", 0, "protocol"))]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/seg-3.m4s");
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(s.calls).toHaveLength(1);
    expect(res.status).toBe(0);
    expect(res.statusText).toMatch(/protocol: malformed/);
  });

  it("dash.js abort(): onabort, the session request's signal aborts, never onloadend", async () => {
    let signal: AbortSignal | undefined;
    const s = fakeSession([
      (_r, o) => {
        signal = o.signal;
        return new Promise((_, rej) => o.signal?.addEventListener("abort", () => rej(new DOMException("aborted", "AbortError"))));
      },
    ]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean; abort: (r?: CommonMediaRequest) => void };
    const a = dashRequest("https://h:1/seg-4.m4s");
    loader.load(a.req, a.res);
    await until(() => signal !== undefined);
    a.req.customData.abort!(); // what HTTPLoader.abort() calls per request
    await new Promise((r) => setTimeout(r, 10));
    expect(signal!.aborted).toBe(true);
    expect(a.events).toEqual(["abort"]);
  });

  it("loader.abort(req) aborts only that request", async () => {
    const signals: AbortSignal[] = [];
    const hang: Handler = (_r, o) => {
      signals.push(o.signal!);
      return new Promise((_, rej) => o.signal?.addEventListener("abort", () => rej(new DOMException("aborted", "AbortError"))));
    };
    const s = fakeSession([hang, hang]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean; abort: (r?: CommonMediaRequest) => void };
    const a = dashRequest("https://h:1/a.m4s");
    const b = dashRequest("https://h:1/b.m4s");
    loader.load(a.req, a.res);
    loader.load(b.req, b.res);
    await until(() => signals.length === 2);
    loader.abort(a.req);
    expect(signals.map((x) => x.aborted)).toEqual([true, false]);
    loader.abort();
    expect(signals.map((x) => x.aborted)).toEqual([true, true]);
    expect(a.events).toEqual(["abort"]);
    expect(b.events).toEqual(["abort"]);
  });

  it("request timeout (dash.js fragmentRequestTimeout): ontimeout then onloadend with status 0, stream aborted (at once with retry_takeover_ms 0, after it by default)", async () => {
    vi.useFakeTimers();
    for (const takeover_ms of [0, undefined]) {
      let signal: AbortSignal | undefined;
      const s = fakeSession([
        (_r, o) => {
          signal = o.signal;
          return new Promise(() => {}); // a server that never answers
        },
      ]);
      const loader = makeNuwaLoader(async () => s, takeover_ms === undefined ? {} : { retry_takeover_ms: takeover_ms })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
      const a = dashRequest("https://h:1/seg-5.m4s", { timeout: 20_000 });
      loader.load(a.req, a.res);
      await vi.advanceTimersByTimeAsync(19_999);
      expect(a.events).toEqual([]);
      await vi.advanceTimersByTimeAsync(2);
      expect(a.events).toEqual(["timeout", "loadend"]);
      expect(a.res.status).toBe(0);
      expect(signal!.aborted).toBe(takeover_ms === 0);
      await vi.advanceTimersByTimeAsync(3_000); // nobody retried within the default 3 s: the transfer is let go
      expect(signal!.aborted).toBe(true);
    }
  });

  it("a retry of a timed-out request takes over its transfer with the bytes already in: no second request to the server", async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    let release: (() => void) | null = null;
    // Half the body, then nothing until released (a link gone nearly dark), then the rest.
    const slow: Handler = (_req, o) => {
      signal = o.signal;
      const head: ResponseHead = { status: 200, total_bytes: BYTES.length };
      o.onData?.(BYTES.slice(0, 20), 20, head);
      return new Promise((resolve) => {
        release = () => {
          o.onData?.(BYTES.slice(20), 40, head);
          resolve({ head, body: BYTES.slice(), first_byte_us: 1, duration_us: 2 });
        };
      });
    };
    const s = fakeSession([slow]);
    const done: LoadedRequest[] = [];
    const loader = makeNuwaLoader(async () => s, { onComplete: (d) => void done.push(d) })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const a = dashRequest("https://h:1/v/seg-23.m4s", { timeout: 20_000 });
    loader.load(a.req, a.res);
    await vi.advanceTimersByTimeAsync(20_001);
    expect(a.events).toEqual(["timeout", "loadend"]);
    await vi.advanceTimersByTimeAsync(1_000); // dash.js's retry interval
    const b = dashRequest("https://h:1/v/seg-23.m4s", { timeout: 20_000 });
    loader.load(b.req, b.res);
    await vi.advanceTimersByTimeAsync(0);
    expect(b.progress[0]).toEqual({ loaded: 20, total: 40 }); // the bytes the first attempt had
    release!();
    await vi.advanceTimersByTimeAsync(0);
    expect(b.events).toEqual(["loadend"]);
    expect(b.res.status).toBe(200);
    expect([...new Uint8Array(b.res.data as ArrayBuffer)]).toEqual([...BYTES]);
    expect(s.calls).toHaveLength(1);
    expect(signal!.aborted).toBe(false);
    // the throughput sample spans both attempts: from the first request, not the retry
    expect(done[0]!.duration_ms).toBeGreaterThanOrEqual(21_000);
  });

  it("a transfer kept twice under one key lives keep_ms from the second keep", async () => {
    vi.useFakeTimers();
    const kept = new TimedOutTransfers(3_000);
    const t = { ac: new AbortController(), failed: false } as unknown as Transfer;
    const key = TimedOutTransfers.key("/v/seg-1.m4s", undefined);
    kept.keep(key, t, new Error("first"));
    await vi.advanceTimersByTimeAsync(2_000);
    kept.keep(key, t, new Error("second"));
    await vi.advanceTimersByTimeAsync(1_500); // past the first keep's end
    expect(t.ac.signal.aborted).toBe(false);
    expect(kept.take(key)).toBe(t);
  });

  it("dash.js's reset lets a kept timed-out transfer go at once", async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const s = fakeSession([
      (_r, o) => {
        signal = o.signal;
        return new Promise(() => {});
      },
    ]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean; reset: () => void };
    const a = dashRequest("https://h:1/v/seg-23.m4s", { timeout: 1_000 });
    loader.load(a.req, a.res);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(signal!.aborted).toBe(false); // kept for a retry
    loader.reset();
    expect(signal!.aborted).toBe(true);
  });

  it("a retry takes over only the same path and range; another request is asked afresh", async () => {
    vi.useFakeTimers();
    const signals: AbortSignal[] = [];
    const never: Handler = (_r, o) => {
      signals.push(o.signal!);
      return new Promise(() => {});
    };
    const s = fakeSession([never, serve(BYTES, 8)]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const a = dashRequest("https://h:1/v/seg-23.m4s", { timeout: 1_000, headers: { Range: "bytes=0-19" } });
    loader.load(a.req, a.res);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(a.events).toEqual(["timeout", "loadend"]);
    const b = dashRequest("https://h:1/v/seg-23.m4s", { timeout: 1_000 }); // the whole file: not the range that timed out
    loader.load(b.req, b.res);
    await vi.advanceTimersByTimeAsync(0);
    await vi.waitFor(() => expect(b.events).toEqual(["loadend"]));
    expect(s.calls).toHaveLength(2);
    expect(signals[0]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(signals[0]!.aborted).toBe(true);
  });

  it("waiting for a session counts against the deadline too (default when dash.js gives none)", async () => {
    vi.useFakeTimers();
    const loader = makeNuwaLoader(() => new Promise(() => {}), { default_timeout_ms: 5000 })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const a = dashRequest("https://h:1/seg-6.m4s");
    loader.load(a.req, a.res);
    await vi.advanceTimersByTimeAsync(5001);
    expect(a.events).toEqual(["timeout", "loadend"]);
    expect(a.res.status).toBe(0);
  });
});

describe("fetchResumable", () => {
  it("an abort while waiting for a session rejects with the abort reason", async () => {
    const ac = new AbortController();
    const p = fetchResumable(() => new Promise(() => {}), "/x", undefined, ac.signal, 3, () => {});
    ac.abort(new DOMException("stop", "AbortError"));
    await expect(p).rejects.toMatchObject({ name: "AbortError" });
  });
});

describe("onComplete (issue 15: the ABR's realized segment throughput)", () => {
  it("reports bytes, time and dash.js's media type, kind, bitrate and duration once per completed request", async () => {
    const s = fakeSession([serve(BYTES, 8)]);
    const done: import("./loader.js").LoadedRequest[] = [];
    const loader = makeNuwaLoader(async () => s, { onComplete: (d) => void done.push(d) })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/v/seg-1.m4s");
    (req.customData as Record<string, unknown>).request = { mediaType: "video", type: "MediaSegment", bandwidth: 2_850_000, duration: 2 };
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ bytes: 40, media_type: "video", type: "MediaSegment", bitrate_kbps: 2850, segment_s: 2 });
    expect(done[0]!.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("reports the transfer time apart (first body byte to last, dash.js's own download time): a 60 ms wait for the first byte is in duration_ms only", async () => {
    const late: Handler = async (req, o) => {
      await new Promise((r) => setTimeout(r, 60));
      return serve(BYTES, 8)(req, o);
    };
    const s = fakeSession([late]);
    const done: LoadedRequest[] = [];
    const loader = makeNuwaLoader(async () => s, { onComplete: (d) => void done.push(d) })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/v/seg-1.m4s");
    (req.customData as Record<string, unknown>).request = { mediaType: "video", type: "MediaSegment", bandwidth: 2_850_000, duration: 2 };
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(done[0]!.duration_ms).toBeGreaterThanOrEqual(55);
    expect(done[0]!.transfer_ms).toBeLessThan(done[0]!.duration_ms - 40);
    expect(done[0]!.transfer_ms).toBeGreaterThan(0);
  });
});

describe("onRequest (the figure when a segment's request leaves: attachNuwa estimate_sample)", () => {
  it("is called once per request with dash.js's request and media type, before any body byte, and before onComplete", async () => {
    const s = fakeSession([serve(BYTES, 8)]);
    const seen: string[] = [];
    const loader = makeNuwaLoader(async () => s, {
      onRequest: (q) => void seen.push(`request ${q.type} ${q.media_type}`),
      onComplete: (d) => void seen.push(`complete ${d.bytes}`),
    })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const { req, res, events } = dashRequest("https://h:1/v/seg-1.m4s");
    (req.customData as Record<string, unknown>).request = { mediaType: "video", type: "MediaSegment", bandwidth: 2_850_000, duration: 2 };
    loader.load(req, res);
    expect(seen).toEqual(["request MediaSegment video"]); // synchronously, with the request
    await until(() => events.length > 0);
    expect(seen).toEqual(["request MediaSegment video", "complete 40"]);
  });
});

describe("NuwaLoader: ranges, CMCD, the manifest check (issue 19)", () => {
  type L = { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
  it("an open-ended Range asks the server for the rest of the file; the answer is 206 with those bytes", async () => {
    const s = fakeSession([serve(BYTES, 8)]);
    const loader = makeNuwaLoader(async () => s)() as L;
    const { req, res, events } = dashRequest("https://h:1/v/one.mp4", { headers: { range: "bytes=30-" } });
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(s.calls[0]).toEqual({ op: "get", path: "/v/one.mp4", range: [30, OPEN_RANGE_LAST] });
    expect(res.status).toBe(206);
    expect([...new Uint8Array(res.data as ArrayBuffer)]).toEqual([...BYTES.slice(30)]);
  });

  it.each(["bytes=0-9,20-29", "bytes=-10", "bytes=9-1", "items=0-1"])("a Range it cannot carry (%s) fails with 416 and says why; nothing is fetched", async (range) => {
    const s = fakeSession([serve(BYTES, 8)]);
    const loader = makeNuwaLoader(async () => s)() as L;
    const { req, res, events } = dashRequest("https://h:1/v/one.mp4", { headers: { Range: range } });
    loader.load(req, res);
    await until(() => events.length > 0);
    expect(events).toEqual(["loadend"]);
    expect(res.status).toBe(416);
    expect(res.statusText).toContain("unsupported Range header");
    expect(s.calls).toEqual([]);
  });

  it("CMCD: dash.js's query parameter or its CMCD-* headers travel as the request's cmcd; the path drops the query", async () => {
    const s = fakeSession([serve(BYTES), serve(BYTES), serve(BYTES)]);
    const loader = makeNuwaLoader(async () => s)() as L;
    const q = dashRequest(`https://h:1/v/seg-1.m4s?CMCD=${encodeURIComponent('bl=21300,br=700,mtp=4800,ot=v,sid="s"')}`);
    loader.load(q.req, q.res);
    await until(() => q.events.length > 0);
    const h = dashRequest("https://h:1/v/seg-2.m4s", { headers: { "CMCD-Object": "br=700,d=2000,ot=v", "CMCD-Request": "bl=21300,mtp=4800", "CMCD-Session": 'sid="s"' } });
    loader.load(h.req, h.res);
    await until(() => h.events.length > 0);
    const none = dashRequest("https://h:1/v/seg-3.m4s?x=1");
    loader.load(none.req, none.res);
    await until(() => none.events.length > 0);
    expect(s.calls).toEqual([
      { op: "get", path: "/v/seg-1.m4s", cmcd: 'bl=21300,br=700,mtp=4800,ot=v,sid="s"' },
      { op: "get", path: "/v/seg-2.m4s", cmcd: 'br=700,d=2000,ot=v,bl=21300,mtp=4800,sid="s"' },
      { op: "get", path: "/v/seg-3.m4s" },
    ]);
    expect(cmcdOf(`https://h:1/a?CMCD=${"x".repeat(3000)}`)).toBeUndefined(); // too long to carry
  });

  it("onManifest: an MPD it refuses fails with its message, before dash.js sees the text; other requests pass", async () => {
    const mpd = new TextEncoder().encode('<MPD type="dynamic"/>');
    const s = fakeSession([serve(mpd, 64), serve(BYTES)]);
    const seen: string[] = [];
    const loader = makeNuwaLoader(async () => s, {
      onManifest: (text) => {
        seen.push(text);
        return text.includes("dynamic") ? new Error("unsupported content: live") : null;
      },
    })() as L;
    const m = dashRequest("https://h:1/manifest.mpd");
    m.req.customData.request = { type: "MPD" };
    loader.load(m.req, m.res);
    await until(() => m.events.length > 0);
    expect(m.events).toEqual(["loadend"]);
    expect(m.res.status).toBe(0);
    expect(m.res.statusText).toBe("unsupported content: live");
    expect(m.res.data).toBeUndefined();
    const seg = dashRequest("https://h:1/seg.m4s");
    seg.req.customData.request = { type: "MediaSegment" };
    loader.load(seg.req, seg.res);
    await until(() => seg.events.length > 0);
    expect(seg.res.status).toBe(200);
    expect(seen).toEqual(['<MPD type="dynamic"/>']);
  });

  it("onComplete carries the segment's start and representation id (the MPC's real sizes look them up)", async () => {
    const s = fakeSession([serve(BYTES)]);
    const done: LoadedRequest[] = [];
    const loader = makeNuwaLoader(async () => s, { onComplete: (d) => done.push(d) })() as L;
    const r = dashRequest("https://h:1/v/one.mp4");
    (r.req.customData as { request?: unknown }).request = { type: "MediaSegment", mediaType: "video", startTime: 4, duration: 2, bandwidth: 700_000, representation: { id: "1" } };
    loader.load(r.req, r.res);
    await until(() => r.events.length > 0);
    expect(done[0]).toMatchObject({ start_s: 4, rep_id: "1", segment_s: 2, bitrate_kbps: 700, bytes: 40 });
  });
});

/** The loader as the fetch-ahead tests drive it. */
type AheadLoader = { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean; abort: (r?: CommonMediaRequest) => void };

/** dash.js's request for a 2 s video segment of representation "1" starting at `start_s`. */
function aheadSegment(path: string, start_s: number) {
  const r = dashRequest(`https://h:1${path}`);
  (r.req.customData as { request?: unknown }).request = { type: "MediaSegment", mediaType: "video", startTime: start_s, duration: 2, bandwidth: 700_000, representation: { id: "1" } };
  return r;
}

describe("NuwaLoader: fetch-ahead (the next segment requested while this one arrives)", () => {
  const next = (q: import("./loader.js").FetchAheadQuery) => `/v/seg-${q.start_s / 2 + 2}.m4s`; // seg-1 starts at 0

  it("asks once a segment's first bytes are in; dash.js's request for that segment takes the transfer over, with no second fetch", async () => {
    const queries: import("./loader.js").FetchAheadQuery[] = [];
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const done: LoadedRequest[] = [];
    const s = fakeSession([serve(BYTES, 8), serve(BYTES.map((b) => b + 100), 8)]);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: (q) => (queries.push(q), next(q)), onFetchAhead: (e) => void events.push(e), onComplete: (d) => void done.push(d) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0);
    expect(queries).toEqual([{ path: "/v/seg-1.m4s", media_type: "video", rep_id: "1", start_s: 0, segment_s: 2 }]);
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/v/seg-1.m4s", "/v/seg-2.m4s"]);
    const b = aheadSegment("/v/seg-2.m4s", 2);
    loader.load(b.req, b.res);
    await until(() => b.events.length > 0);
    expect(b.events).toEqual(["loadend"]);
    expect(b.res.status).toBe(200);
    expect([...new Uint8Array(b.res.data as ArrayBuffer)]).toEqual([...BYTES.map((x) => x + 100)]);
    expect(b.progress.at(-1)).toEqual({ loaded: 40, total: 40 }); // dash.js sees the bytes arrive as for any request
    expect(events[0]).toMatchObject({ path: "/v/seg-2.m4s", media_type: "video", outcome: "used" });
    expect(done.map((d) => d.start_s)).toEqual([0, 2]);
    expect(done.map((d) => d.fetched_ahead)).toEqual([undefined, true]);
    expect(done[1]!.duration_ms).toBeGreaterThan(0);
    // seg-2's own first bytes asked for seg-3, which no handler serves: the third fetch is that one
    await until(() => s.calls.length === 3);
    expect(s.calls[2]).toMatchObject({ path: "/v/seg-3.m4s" });
  });

  it("a request for another segment of that media type discards the one fetched ahead (aborted, its bytes reported)", async () => {
    const events: import("./loader.js").FetchAheadEvent[] = [];
    let ahead_signal: AbortSignal | undefined;
    const hang: Handler = (_req, o) => {
      ahead_signal = o.signal;
      return new Promise((_res, rej) => o.signal?.addEventListener("abort", () => rej(o.signal?.reason)));
    };
    const s = fakeSession([serve(BYTES, 8), hang, serve(BYTES, 8)]);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: next, onFetchAhead: (e) => void events.push(e) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && ahead_signal !== undefined);
    const c = aheadSegment("/v/other-rung-2.m4s", 2); // the ABR chose another rung
    loader.load(c.req, c.res);
    await until(() => c.events.length > 0);
    expect(ahead_signal!.aborted).toBe(true);
    expect(events).toEqual([{ path: "/v/seg-2.m4s", media_type: "video", outcome: "discarded", bytes: 0 }]);
    expect(c.res.status).toBe(200);
    expect(s.calls.map((x) => x.op === "get" && x.path).slice(0, 3)).toEqual(["/v/seg-1.m4s", "/v/seg-2.m4s", "/v/other-rung-2.m4s"]);
  });

  it("a fetch-ahead that failed is not handed to dash.js: its request is fetched afresh", async () => {
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const fail: Handler = async () => {
      throw new NuwaRequestError("not found", 404, "http");
    };
    const s = fakeSession([serve(BYTES, 8), fail, serve(BYTES, 8)]);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: (q) => (q.start_s === 0 ? next(q) : null), onFetchAhead: (e) => void events.push(e) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && s.calls.length === 2);
    await new Promise((r) => setTimeout(r, 0));
    const b = aheadSegment("/v/seg-2.m4s", 2);
    loader.load(b.req, b.res);
    await until(() => b.events.length > 0);
    expect(events[0]).toMatchObject({ path: "/v/seg-2.m4s", outcome: "failed" });
    expect(b.res.status).toBe(200);
    expect(s.calls).toHaveLength(3);
  });

  it("never for the manifest, ranged requests or without the option; reset discards what was fetched ahead", async () => {
    const asked: string[] = [];
    const s = fakeSession([serve(BYTES, 8), serve(BYTES, 8), serve(BYTES, 8), (_r, o) => new Promise((_res, rej) => o.signal?.addEventListener("abort", () => rej(o.signal?.reason)))]);
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const loader = makeNuwaLoader(async () => s, { fetchAhead: (q) => (asked.push(q.path), next(q)), onFetchAhead: (e) => void events.push(e) })() as AheadLoader;
    const m = dashRequest("https://h:1/v/manifest.mpd");
    (m.req.customData as { request?: unknown }).request = { type: "MPD" };
    loader.load(m.req, m.res);
    const r = aheadSegment("/v/seg-1.m4s", 0);
    r.req.headers = { Range: "bytes=0-9" };
    loader.load(r.req, r.res);
    await until(() => m.events.length > 0 && r.events.length > 0);
    expect(asked).toEqual([]);
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && s.calls.length === 4);
    loader.abort(); // dash.js's reset
    expect(events).toEqual([{ path: "/v/seg-2.m4s", media_type: "video", outcome: "discarded", bytes: 0 }]);
    const plain = fakeSession([serve(BYTES, 8)]);
    const off = makeNuwaLoader(async () => plain)() as AheadLoader;
    const p = aheadSegment("/v/seg-1.m4s", 0);
    off.load(p.req, p.res);
    await until(() => p.events.length > 0);
    expect(plain.calls).toHaveLength(1);
  });
});

describe("NuwaLoader: several segments fetched ahead (fetch_ahead \"queue\")", () => {
  const hang: Handler = (_req, o) => new Promise((_res, rej) => o.signal?.addEventListener("abort", () => rej(o.signal?.reason)));
  // seg-N starts at 2 (N − 1) s; the answer names the two segments after the one arriving
  const two = (q: import("./loader.js").FetchAheadQuery) => [`/v/seg-${q.start_s / 2 + 2}.m4s`, `/v/seg-${q.start_s / 2 + 3}.m4s`];

  it("keeps them all in flight; dash.js takes them over in order, each asking only for the segments not yet fetched", async () => {
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const done: LoadedRequest[] = [];
    const s = fakeSession([serve(BYTES, 8), serve(BYTES.map((b) => b + 1), 8), serve(BYTES.map((b) => b + 2), 8), hang, hang]);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: two, onFetchAhead: (e) => void events.push(e), onComplete: (d) => void done.push(d) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && s.calls.length === 3);
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/v/seg-1.m4s", "/v/seg-2.m4s", "/v/seg-3.m4s"]);
    const b = aheadSegment("/v/seg-2.m4s", 2);
    loader.load(b.req, b.res);
    await until(() => b.events.length > 0 && s.calls.length === 4);
    // seg-2 taken over, seg-3 kept, only seg-4 is new
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/v/seg-1.m4s", "/v/seg-2.m4s", "/v/seg-3.m4s", "/v/seg-4.m4s"]);
    expect([...new Uint8Array(b.res.data as ArrayBuffer)]).toEqual([...BYTES.map((x) => x + 1)]);
    const c = aheadSegment("/v/seg-3.m4s", 4);
    loader.load(c.req, c.res);
    await until(() => c.events.length > 0);
    expect([...new Uint8Array(c.res.data as ArrayBuffer)]).toEqual([...BYTES.map((x) => x + 2)]);
    expect(events.map((e) => [e.path, e.outcome])).toEqual([["/v/seg-2.m4s", "used"], ["/v/seg-3.m4s", "used"]]);
    expect(done.map((d) => d.fetched_ahead)).toEqual([undefined, true, true]);
    await until(() => s.calls.length === 5); // seg-3's own first bytes asked for seg-4 (in flight) and seg-5
    loader.abort();
    expect(events.slice(2).map((e) => [e.path, e.outcome])).toEqual([["/v/seg-4.m4s", "discarded"], ["/v/seg-5.m4s", "discarded"]]);
  });

  it("a request past the first one fetched ahead discards the ones before it and keeps the ones after; another path discards them all", async () => {
    const events: import("./loader.js").FetchAheadEvent[] = [];
    let aborted = 0;
    const counting: Handler = (_req, o) =>
      new Promise((_res, rej) =>
        o.signal?.addEventListener("abort", () => {
          aborted++;
          rej(o.signal?.reason);
        }),
      );
    const s = fakeSession([serve(BYTES, 8), counting, serve(BYTES, 8), counting, counting]);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: two, onFetchAhead: (e) => void events.push(e) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && s.calls.length === 3);
    const c = aheadSegment("/v/seg-3.m4s", 4); // seg-2 skipped (a seek within the buffer)
    loader.load(c.req, c.res);
    await until(() => c.events.length > 0 && s.calls.length === 5);
    expect(c.res.status).toBe(200);
    expect(events.map((e) => [e.path, e.outcome])).toEqual([["/v/seg-2.m4s", "discarded"], ["/v/seg-3.m4s", "used"]]);
    expect(s.calls.map((x) => x.op === "get" && x.path).slice(3)).toEqual(["/v/seg-4.m4s", "/v/seg-5.m4s"]);
    const other = aheadSegment("/v/other-rung-4.m4s", 6); // the ABR chose another rung
    loader.load(other.req, other.res);
    await until(() => events.length === 4);
    expect(events.slice(2).map((e) => [e.path, e.outcome])).toEqual([["/v/seg-4.m4s", "discarded"], ["/v/seg-5.m4s", "discarded"]]);
    expect(aborted).toBe(3);
  });

  it("a shallower answer later keeps the segments already on their way", async () => {
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const s = fakeSession([serve(BYTES, 8), serve(BYTES, 8), hang, hang]);
    // three ahead while the first segment arrives, then one (the standing wait fell)
    const shrinking = (q: import("./loader.js").FetchAheadQuery) => {
      const n = q.start_s / 2 + 2;
      return q.start_s === 0 ? [`/v/seg-${n}.m4s`, `/v/seg-${n + 1}.m4s`, `/v/seg-${n + 2}.m4s`] : [`/v/seg-${n}.m4s`];
    };
    const loader = makeNuwaLoader(async () => s, { fetchAhead: shrinking, onFetchAhead: (e) => void events.push(e) })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0 && s.calls.length === 4);
    const b = aheadSegment("/v/seg-2.m4s", 2);
    loader.load(b.req, b.res);
    await until(() => b.events.length > 0);
    await new Promise((r) => setTimeout(r, 0));
    // seg-2's answer names only seg-3: seg-4, also on its way, is not thrown away, and nothing new is asked for
    expect(events.map((e) => [e.path, e.outcome])).toEqual([["/v/seg-2.m4s", "used"]]);
    expect(s.calls).toHaveLength(4);
    loader.abort();
    expect(events.slice(1).map((e) => [e.path, e.outcome])).toEqual([["/v/seg-3.m4s", "discarded"], ["/v/seg-4.m4s", "discarded"]]);
  });

  it("never keeps more than MAX_FETCH_AHEAD of one media type", async () => {
    const s = fakeSession([serve(BYTES, 8), ...Array.from({ length: 20 }, () => hang)]);
    const many = (q: import("./loader.js").FetchAheadQuery) => Array.from({ length: 20 }, (_, k) => `/v/seg-${q.start_s / 2 + 2 + k}.m4s`);
    const loader = makeNuwaLoader(async () => s, { fetchAhead: many })() as AheadLoader;
    const a = aheadSegment("/v/seg-1.m4s", 0);
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0);
    await new Promise((r) => setTimeout(r, 0));
    expect(s.calls).toHaveLength(1 + MAX_FETCH_AHEAD);
    loader.abort();
  });
});

describe("NuwaLoader: a fetch-ahead nobody asks for", () => {
  it("is let go after the default deadline, reported failed when it had failed (the segment after the last one: 404)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const events: import("./loader.js").FetchAheadEvent[] = [];
    const s = fakeSession([serve(BYTES, 8), async () => {
      throw new NuwaRequestError("not found", 404, "http");
    }]);
    const loader = makeNuwaLoader(async () => s, { default_timeout_ms: 5000, fetchAhead: () => "/v/seg-31.m4s", onFetchAhead: (e) => void events.push(e) })() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const a = dashRequest("https://h:1/v/seg-30.m4s");
    (a.req.customData as { request?: unknown }).request = { type: "MediaSegment", mediaType: "video", startTime: 58, duration: 2 };
    loader.load(a.req, a.res);
    for (let i = 0; i < 50 && (a.events.length === 0 || s.calls.length < 2); i++) await Promise.resolve();
    expect(a.events).toEqual(["loadend"]);
    await Promise.resolve();
    expect(events).toEqual([]);
    vi.advanceTimersByTime(5000);
    expect(events).toEqual([{ path: "/v/seg-31.m4s", media_type: "video", outcome: "failed", bytes: 0 }]);
  });
});

describe("NuwaLoader: init segments prefetched with the MPD (initPrefetch)", () => {
  const MPD_TEXT = "<MPD/>";
  const mpdRequest = () => {
    const r = dashRequest("https://h:1/c/manifest.mpd", { responseType: "text" });
    (r.req.customData as { request?: unknown }).request = { type: "MPD" };
    return r;
  };
  const initRequest = (path: string, extra: Partial<CommonMediaRequest> = {}) => {
    const r = dashRequest(`https://h:1${path}`, extra);
    (r.req.customData as { request?: unknown }).request = { type: "InitializationSegment", mediaType: "video", representation: { id: "1" } };
    return r;
  };
  const INIT_A = BYTES.map((b) => b + 1);
  const INIT_B = BYTES.map((b) => b + 2);

  it("fetches every init segment the MPD names once it is in; dash.js's init requests, repeated, read those transfers with no second fetch", async () => {
    const s = fakeSession([serve(new TextEncoder().encode(MPD_TEXT), 8), serve(INIT_A, 8), serve(INIT_B, 8)]);
    const named: string[] = [];
    const loader = makeNuwaLoader(async () => s, { initPrefetch: (text, url) => (named.push(`${text} ${url}`), ["/c/init-0.m4s", "/c/init-1.m4s"]) })() as AheadLoader;
    const m = mpdRequest();
    loader.load(m.req, m.res);
    await until(() => m.events.length > 0);
    expect(named).toEqual([`${MPD_TEXT} https://h:1/c/manifest.mpd`]);
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/c/manifest.mpd", "/c/init-0.m4s", "/c/init-1.m4s"]);
    for (let i = 0; i < 2; i++) {
      // the switch to rung 1, and later back to it: the same bytes, no request on the session
      const b = initRequest("/c/init-1.m4s");
      loader.load(b.req, b.res);
      await until(() => b.events.length > 0);
      expect(b.events).toEqual(["loadend"]);
      expect(b.res.status).toBe(200);
      expect([...new Uint8Array(b.res.data as ArrayBuffer)]).toEqual([...INIT_B]);
      expect(b.progress.at(-1)).toEqual({ loaded: 40, total: 40 });
    }
    expect(s.calls).toHaveLength(3);
  });

  it("dash.js's abort of a request reading a prefetched init segment does not abort it for the next request", async () => {
    const signals: AbortSignal[] = [];
    let finish: (() => void) | null = null;
    const slow: Handler = (req, o) => {
      signals.push(o.signal!);
      return new Promise((resolve) => {
        finish = () => void serve(INIT_A, 8)(req, o).then(resolve);
      });
    };
    const s = fakeSession([serve(new TextEncoder().encode(MPD_TEXT), 8), slow]);
    const loader = makeNuwaLoader(async () => s, { initPrefetch: () => ["/c/init-0.m4s"] })() as AheadLoader;
    const m = mpdRequest();
    loader.load(m.req, m.res);
    await until(() => m.events.length > 0 && finish !== null);
    const a = initRequest("/c/init-0.m4s");
    loader.load(a.req, a.res);
    a.req.customData.abort!(); // a seek, say
    expect(a.events).toEqual(["abort"]);
    expect(signals[0]!.aborted).toBe(false);
    const b = initRequest("/c/init-0.m4s");
    loader.load(b.req, b.res);
    finish!();
    await until(() => b.events.length > 0);
    expect(b.res.status).toBe(200);
    expect([...new Uint8Array(b.res.data as ArrayBuffer)]).toEqual([...INIT_A]);
    expect(s.calls).toHaveLength(2);
  });

  it("a prefetch that failed is fetched afresh; a ranged init request, a path not named and loaders without the option fetch as before", async () => {
    const s = fakeSession([
      serve(new TextEncoder().encode(MPD_TEXT), 8),
      () => Promise.reject(new NuwaRequestError("404 not_found", 404, "http")),
      serve(INIT_A, 8),
      serve(INIT_A, 8),
      serve(INIT_B, 8),
    ]);
    const loader = makeNuwaLoader(async () => s, { initPrefetch: () => ["/c/init-0.m4s"] })() as AheadLoader;
    const m = mpdRequest();
    loader.load(m.req, m.res);
    await until(() => m.events.length > 0 && s.calls.length === 2);
    await new Promise((r) => setTimeout(r, 0)); // the prefetch's failure settles
    const a = initRequest("/c/init-0.m4s");
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0);
    expect(a.res.status).toBe(200);
    expect(s.calls[2]).toEqual({ op: "get", path: "/c/init-0.m4s" });
    const ranged = initRequest("/c/init-0.m4s", { headers: { Range: "bytes=0-9" } });
    loader.load(ranged.req, ranged.res);
    await until(() => ranged.events.length > 0);
    expect(s.calls[3]).toEqual({ op: "get", path: "/c/init-0.m4s", range: [0, 9] });
    const other = initRequest("/c/init-7.m4s");
    loader.load(other.req, other.res);
    await until(() => other.events.length > 0);
    expect(s.calls[4]).toEqual({ op: "get", path: "/c/init-7.m4s" });

    const plain = fakeSession([serve(new TextEncoder().encode(MPD_TEXT), 8)]);
    const without = makeNuwaLoader(async () => plain)() as AheadLoader;
    const m2 = mpdRequest();
    without.load(m2.req, m2.res);
    await until(() => m2.events.length > 0);
    expect(plain.calls).toHaveLength(1);
  });

  it("an init segment over MAX_INIT_PREFETCH_BYTES is dropped at its first bytes (aborted) and fetched when dash.js asks", async () => {
    const big = MAX_INIT_PREFETCH_BYTES + 1;
    let signal: AbortSignal | undefined;
    const firstBytesThenWait: Handler = (_req, o) => {
      signal = o.signal;
      o.onData?.(new Uint8Array(1000), 1000, { status: 200, total_bytes: big });
      return new Promise((_res, rej) => o.signal?.addEventListener("abort", () => rej(o.signal?.reason)));
    };
    const s = fakeSession([serve(new TextEncoder().encode(MPD_TEXT), 8), firstBytesThenWait, serve(INIT_A, 8)]);
    const loader = makeNuwaLoader(async () => s, { initPrefetch: () => ["/c/init-0.m4s"] })() as AheadLoader;
    const m = mpdRequest();
    loader.load(m.req, m.res);
    await until(() => m.events.length > 0 && signal !== undefined);
    expect(signal!.aborted).toBe(true);
    const a = initRequest("/c/init-0.m4s");
    loader.load(a.req, a.res);
    await until(() => a.events.length > 0);
    expect(a.res.status).toBe(200);
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/c/manifest.mpd", "/c/init-0.m4s", "/c/init-0.m4s"]);
  });

  it("a new MPD replaces the init segments of the old one (those still on their way are aborted)", async () => {
    const signals: AbortSignal[] = [];
    const hang: Handler = (_req, o) => {
      signals.push(o.signal!);
      return new Promise((_res, rej) => o.signal?.addEventListener("abort", () => rej(o.signal?.reason)));
    };
    const s = fakeSession([serve(new TextEncoder().encode(MPD_TEXT), 8), hang, serve(new TextEncoder().encode(MPD_TEXT), 8), serve(INIT_B, 8)]);
    let n = 0;
    const loader = makeNuwaLoader(async () => s, { initPrefetch: () => (n++ === 0 ? ["/c/init-0.m4s"] : ["/d/init-0.m4s"]) })() as AheadLoader;
    for (let i = 0; i < 2; i++) {
      const m = mpdRequest();
      loader.load(m.req, m.res);
      await until(() => m.events.length > 0);
    }
    expect(signals[0]!.aborted).toBe(true);
    expect(s.calls.map((c) => c.op === "get" && c.path)).toEqual(["/c/manifest.mpd", "/c/init-0.m4s", "/c/manifest.mpd", "/d/init-0.m4s"]);
  });
});
