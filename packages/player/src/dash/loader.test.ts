/**
 * The loader's contract with dash.js's HTTPLoader (dash.js 5.2.1
 * HTTPLoader._internalLoad): what status, which callbacks, in which order,
 * for each way a request can end. The session is a stand-in; the session's
 * own error paths are in ../session.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type NuwaRequest, NuwaRequestError, type NuwaResponse, type RequestOptions, type ResponseHead } from "../session.js";
import { type CommonMediaRequest, type CommonMediaResponse, failureStatus, fetchResumable, makeNuwaLoader, parseRangeHeader, type RequestSession } from "./loader.js";

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

const until = (f: () => boolean) => vi.waitFor(() => expect(f()).toBe(true));
const BYTES = Uint8Array.from({ length: 40 }, (_, i) => i);

afterEach(() => {
  vi.useRealTimers();
});

describe("parseRangeHeader / failureStatus", () => {
  it("parses inclusive ranges and rejects the rest", () => {
    expect(parseRangeHeader("bytes=10-19")).toEqual([10, 19]);
    expect(parseRangeHeader("bytes=19-10")).toBeUndefined();
    expect(parseRangeHeader("bytes=10-")).toBeUndefined();
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

  it("request timeout (dash.js fragmentRequestTimeout): ontimeout then onloadend with status 0, stream aborted", async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const s = fakeSession([
      (_r, o) => {
        signal = o.signal;
        return new Promise(() => {}); // a server that never answers
      },
    ]);
    const loader = makeNuwaLoader(async () => s)() as { load: (a: CommonMediaRequest, b: CommonMediaResponse) => boolean };
    const a = dashRequest("https://h:1/seg-5.m4s", { timeout: 20_000 });
    loader.load(a.req, a.res);
    await vi.advanceTimersByTimeAsync(19_999);
    expect(a.events).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(a.events).toEqual(["timeout", "loadend"]);
    expect(a.res.status).toBe(0);
    expect(signal!.aborted).toBe(true);
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
});
