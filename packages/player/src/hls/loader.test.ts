/**
 * The hls.js loader's contract (hls.js 1.x Loader, XhrLoader's stats): the stats hls.js's
 * ABR reads (loading.start/first/end, loaded, total, bwEstimate, aborted), byte ranges,
 * callbacks for success, HTTP and network errors, abort and timeout. The session is a
 * stand-in with a controlled clock.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RequestSession } from "../dash/loader.js";
import { type NuwaRequest, NuwaRequestError, type NuwaResponse, type RequestOptions, type ResponseHead } from "../session.js";
import { type HlsLoaderCallbacks, type HlsLoaderContext, type HlsLoaderStats, makeNuwaHlsLoader } from "./loader.js";

const clock = { ms: 1000 };
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** A session answering `bytes` (or the asked range) in chunks, `step_ms` apart on the fake clock, after `ttfb_ms`. */
function session(bytes: Uint8Array, o: { chunk?: number; ttfb_ms?: number; step_ms?: number; fail?: () => Error; seen?: { loaded: number; total: number }[]; stats?: () => HlsLoaderStats } = {}) {
  const calls: NuwaRequest[] = [];
  const s: RequestSession = {
    request: async (req: NuwaRequest, ro: RequestOptions = {}): Promise<NuwaResponse> => {
      calls.push(req);
      if (o.fail) throw o.fail();
      const range = req.op === "get" ? req.range : undefined;
      const first = range ? range[0] : 0;
      const last = range ? range[1] : bytes.length - 1;
      const head: ResponseHead = { status: range ? 206 : 200, total_bytes: bytes.length, ...(range ? { range: [first, last] as [number, number] } : {}) };
      clock.ms += o.ttfb_ms ?? 0;
      let loaded = 0;
      for (let off = first; off <= last; off += o.chunk ?? 10) {
        const p = bytes.slice(off, Math.min(off + (o.chunk ?? 10), last + 1));
        loaded += p.length;
        ro.onData?.(p, loaded, head);
        const st = o.stats?.();
        if (st) o.seen?.push({ loaded: st.loaded, total: st.total });
        clock.ms += o.step_ms ?? 0;
        await Promise.resolve();
      }
      return { head, body: bytes.slice(first, last + 1), first_byte_us: 0, duration_us: 0 };
    },
  };
  return { s, calls };
}

function callbacks() {
  const events: { kind: string; code?: number; data?: unknown; stats?: HlsLoaderStats }[] = [];
  const cb: HlsLoaderCallbacks = {
    onSuccess: (r, stats) => events.push({ kind: "success", code: r.code, data: r.data, stats }),
    onError: (e, _c, _n, stats) => events.push({ kind: "error", code: e.code, stats }),
    onTimeout: (stats) => events.push({ kind: "timeout", stats }),
    onAbort: (stats) => events.push({ kind: "abort", stats }),
  };
  return { cb, events };
}

const BYTES = Uint8Array.from({ length: 100 }, (_, i) => i);
const POLICY = { loadPolicy: { maxTimeToFirstByteMs: 10_000, maxLoadTimeMs: 20_000 } };
const frag = (url = "https://h/seg-3-00001.m4s"): HlsLoaderContext => ({ url, responseType: "arraybuffer", frag: { type: "main", level: 3, sn: 0, duration: 2 } });

describe("makeNuwaHlsLoader: stats as hls.js's ABR reads them", () => {
  it("fills loading.start at load, first at the first byte, loaded/total as bytes arrive, end and bwEstimate at the end", async () => {
    vi.spyOn(performance, "now").mockImplementation(() => clock.ms);
    clock.ms = 1000;
    const seen: { loaded: number; total: number }[] = [];
    const Loader = makeNuwaHlsLoader(() => Promise.resolve(session(BYTES, { chunk: 25, ttfb_ms: 40, step_ms: 10, seen, stats: () => loader.stats }).s));
    const loader = new Loader({});
    const { cb, events } = callbacks();
    loader.load(frag(), POLICY, cb);
    expect(loader.stats.loading.start).toBe(1000);
    await vi.waitFor(() => expect(events.length).toBe(1), { timeout: 10_000 });
    const st = loader.stats;
    expect(events[0]!.kind).toBe("success");
    expect(events[0]!.code).toBe(200);
    expect((events[0]!.data as ArrayBuffer).byteLength).toBe(100);
    expect(events[0]!.stats).toBe(st); // the very object hls.js stores as frag.stats
    expect(st.loading.first).toBe(1040); // TTFB 40 ms
    expect(seen).toEqual([
      { loaded: 25, total: 100 },
      { loaded: 50, total: 100 },
      { loaded: 75, total: 100 },
      { loaded: 100, total: 100 },
    ]);
    expect(st.loading.end).toBe(1080);
    expect(st.loaded).toBe(100);
    expect(st.total).toBe(100);
    expect(st.bwEstimate).toBeCloseTo((100 * 8000) / 40);
    expect(st.aborted).toBe(false);
    expect(() => loader.load(frag(), POLICY, cb)).toThrow(/only be used once/);
  });

  it("asks for hls.js's byte range (rangeEnd exclusive) and decodes playlists as text", async () => {
    const { s, calls } = session(new TextEncoder().encode("#EXTM3U\n#EXT-X-ENDLIST\n"));
    const Loader = makeNuwaHlsLoader(() => Promise.resolve(s));
    const { cb, events } = callbacks();
    new Loader().load({ url: "https://h/x/seg.m4s", responseType: "arraybuffer", rangeStart: 4, rangeEnd: 10 }, POLICY, cb);
    await vi.waitFor(() => expect(events.length).toBe(1), { timeout: 10_000 });
    expect(calls[0]).toEqual({ op: "get", path: "/x/seg.m4s", range: [4, 9] });
    expect(events[0]!.code).toBe(206);
    const p = callbacks();
    new Loader().load({ url: "https://h/master.m3u8", responseType: "" }, POLICY, p.cb);
    await vi.waitFor(() => expect(p.events.length).toBe(1), { timeout: 10_000 });
    expect(p.events[0]!.data).toBe("#EXTM3U\n#EXT-X-ENDLIST\n");
  });

  it("reports an ERROR answer as its HTTP status and a lost session as code 0", async () => {
    for (const [err, code] of [
      [new NuwaRequestError("404 not_found", 404, "http"), 404],
      [new NuwaRequestError("reset", 0, "stream"), 0],
    ] as const) {
      const Loader = makeNuwaHlsLoader(() => Promise.resolve(session(BYTES, { fail: () => err }).s), { max_resumes: 0 });
      const { cb, events } = callbacks();
      new Loader().load(frag(), POLICY, cb);
      await vi.waitFor(() => expect(events.length).toBe(1), { timeout: 10_000 });
      expect(events[0]).toMatchObject({ kind: "error", code });
    }
  });

  it("abort(): onAbort with stats.aborted, no success afterwards", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const s: RequestSession = {
      request: async (_req, ro = {}) => {
        await gate;
        ro.signal?.throwIfAborted();
        return { head: { status: 200, total_bytes: 0 }, body: new Uint8Array(), first_byte_us: 0, duration_us: 0 };
      },
    };
    const loader = new (makeNuwaHlsLoader(() => Promise.resolve(s)))();
    const { cb, events } = callbacks();
    loader.load(frag(), POLICY, cb);
    loader.abort();
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(events.map((e) => e.kind)).toEqual(["abort"]);
    expect(loader.stats.aborted).toBe(true);
  });

  it("times out at maxTimeToFirstByteMs without a byte: onTimeout, aborted", async () => {
    vi.useFakeTimers();
    const s: RequestSession = { request: (_r, ro = {}) => new Promise((_, rej) => ro.signal?.addEventListener("abort", () => rej(ro.signal?.reason))) };
    const loader = new (makeNuwaHlsLoader(() => Promise.resolve(s)))();
    const { cb, events } = callbacks();
    loader.load(frag(), { loadPolicy: { maxTimeToFirstByteMs: 500, maxLoadTimeMs: 5000 } }, cb);
    await vi.advanceTimersByTimeAsync(499);
    expect(events).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    expect(events.map((e) => e.kind)).toEqual(["timeout"]);
    expect(loader.stats.aborted).toBe(true);
  });

  it("a retry of a timed-out fragment takes over its transfer with the bytes already in (retry_takeover_ms); without the option the transfer is aborted at the deadline", async () => {
    vi.useFakeTimers();
    const head: ResponseHead = { status: 200, total_bytes: 100 };
    for (const takeover_ms of [3000, 0]) {
      const signals: AbortSignal[] = [];
      let release: (() => void) | null = null;
      // Half the fragment after 12 s (behind a deep queue), the rest when released.
      const s: RequestSession = {
        request: (_req, ro = {}) => {
          signals.push(ro.signal!);
          return new Promise((resolve, reject) => {
            ro.signal?.addEventListener("abort", () => reject(ro.signal?.reason));
            setTimeout(() => ro.onData?.(BYTES.slice(0, 50), 50, head), 12_000);
            release = () => {
              ro.onData?.(BYTES.slice(50), 100, head);
              resolve({ head, body: BYTES.slice(), first_byte_us: 0, duration_us: 0 });
            };
          });
        },
      };
      const done: { duration_ms: number }[] = [];
      const Loader = makeNuwaHlsLoader(() => Promise.resolve(s), { retry_takeover_ms: takeover_ms, onComplete: (d) => void done.push(d) });
      const first = callbacks();
      new Loader().load(frag(), POLICY, first.cb);
      await vi.advanceTimersByTimeAsync(10_001); // hls.js's 10 s time to first byte
      expect(first.events.map((e) => e.kind)).toEqual(["timeout"]);
      expect(signals[0]!.aborted).toBe(takeover_ms === 0);
      // hls.js retries at once (timeoutRetry.retryDelayMs 0)
      const retry = callbacks();
      const loader = new Loader();
      loader.load(frag(), POLICY, retry.cb);
      if (takeover_ms === 0) {
        await vi.advanceTimersByTimeAsync(0);
        expect(signals).toHaveLength(2); // asked afresh
        continue;
      }
      await vi.advanceTimersByTimeAsync(2_000); // the first half arrives
      expect(signals).toHaveLength(1);
      expect(loader.stats.loaded).toBe(50);
      release!();
      await vi.advanceTimersByTimeAsync(0);
      expect(retry.events.map((e) => e.kind)).toEqual(["success"]);
      expect(new Uint8Array(retry.events[0]!.data as ArrayBuffer)).toEqual(BYTES);
      expect(done[0]!.duration_ms).toBeGreaterThanOrEqual(12_000); // from the transfer's start: both attempts
      expect(signals[0]!.aborted).toBe(false);
    }
  });

  it("a timed-out transfer no retry takes within retry_takeover_ms is aborted; a load of another path is asked afresh", async () => {
    vi.useFakeTimers();
    const signals: AbortSignal[] = [];
    const s: RequestSession = { request: (_r, ro = {}) => (signals.push(ro.signal!), new Promise((_, rej) => ro.signal?.addEventListener("abort", () => rej(ro.signal?.reason)))) };
    const Loader = makeNuwaHlsLoader(() => Promise.resolve(s), { retry_takeover_ms: 3000 });
    const a = callbacks();
    new Loader().load(frag(), { loadPolicy: { maxTimeToFirstByteMs: 500, maxLoadTimeMs: 5000 } }, a.cb);
    await vi.advanceTimersByTimeAsync(501);
    expect(a.events.map((e) => e.kind)).toEqual(["timeout"]);
    new Loader().load(frag("https://h/seg-2-00001.m4s"), POLICY, callbacks().cb); // hls.js went down a level instead
    await vi.advanceTimersByTimeAsync(0);
    expect(signals).toHaveLength(2);
    expect(signals[0]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(3000);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[1]!.aborted).toBe(false);
  });

  it("reports each completed fragment (bytes, load time) for the MPC's history", async () => {
    vi.spyOn(performance, "now").mockImplementation(() => clock.ms);
    const done: unknown[] = [];
    const Loader = makeNuwaHlsLoader(() => Promise.resolve(session(BYTES, { chunk: 50, ttfb_ms: 20, step_ms: 30 }).s), { onComplete: (d) => done.push(d) });
    const { cb, events } = callbacks();
    new Loader().load(frag(), POLICY, cb);
    await vi.waitFor(() => expect(events.length).toBe(1), { timeout: 10_000 });
    expect(done).toEqual([{ frag: { type: "main", level: 3, sn: 0, duration: 2 }, bytes: 100, duration_ms: 80 }]);
  });
});
