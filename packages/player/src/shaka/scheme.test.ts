// @vitest-environment happy-dom
/**
 * The scheme plugin against the real shaka-player 5 (its NetworkingEngine,
 * AbortableOperation and Error classes load under happy-dom; nothing plays):
 * the response shaka gets, the progress events shaka's engine passes on to its
 * ABR, errors as ShakaError codes, abort and timeout. The session is a
 * stand-in (the session's own paths are in ../session.test.ts).
 */
import * as shakaModule from "shaka-player";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type NuwaRequest, NuwaRequestError, type NuwaResponse, type RequestOptions, type ResponseHead } from "../session.js";
import { makeNuwaScheme, sessionPath } from "./scheme.js";
import type { NuwaSchemePlugin, ShakaLike, ShakaRequestLike } from "./types.js";

/** shaka-player is CommonJS: at run time the namespace is module.exports; its typings (`export default shaka`), read as CommonJS under NodeNext, put it at `.default.default`. */
type Shaka = typeof shakaModule.default.default;
const shaka = ((shakaModule as unknown as { default?: Shaka }).default ?? shakaModule) as Shaka;
type ShakaError = InstanceType<Shaka["util"]["Error"]>;
const S = shaka as unknown as ShakaLike;
const NE = shaka.net.NetworkingEngine;
const ORIGIN = "https://127.0.0.1:4433";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Handler = (req: NuwaRequest, o: RequestOptions) => Promise<NuwaResponse>;

/** A session serving `bytes` in the given chunk sizes, `gap_ms` apart (one chunk per macrotask, as reader.read()). */
function session(bytes: Uint8Array, chunks: number[], gap_ms = 0): { request: Handler; calls: NuwaRequest[]; signals: AbortSignal[] } {
  const calls: NuwaRequest[] = [];
  const signals: AbortSignal[] = [];
  return {
    calls,
    signals,
    request: async (req, o) => {
      calls.push(req);
      if (o.signal) signals.push(o.signal);
      const range = req.op === "get" ? req.range : undefined;
      const first = range ? range[0] : 0;
      const last = range ? range[1] : bytes.length - 1;
      const head: ResponseHead = { status: range ? 206 : 200, total_bytes: bytes.length, content_type: "video/mp4", ...(range ? { range: [first, last] as [number, number] } : {}) };
      let off = first;
      for (const n of chunks) {
        if (off > last) break;
        await sleep(gap_ms);
        if (o.signal?.aborted) throw new NuwaRequestError("cancelled", 0, "stream");
        const p = bytes.slice(off, Math.min(off + n, last + 1));
        off += p.length;
        o.onData?.(p, off - first, head);
      }
      return { head, body: bytes.slice(first, last + 1), first_byte_us: 1, duration_us: 2 };
    },
  };
}

const failing = (e: Error): { request: Handler } => ({ request: () => Promise.reject(e) });

function shakaRequest(uri: string, headers: Record<string, string> = {}, timeout = 0): ShakaRequestLike {
  const r = NE.makeRequest([uri], { ...NE.defaultRetryParameters(), timeout, maxAttempts: 1 }) as unknown as ShakaRequestLike;
  r.headers = headers;
  return r;
}

/** A NetworkingEngine with shaka's default networking config (minBytesForProgressEvents 16 kB). */
function engineWith(onProgress?: (ms: number, bytes: number, allow: boolean) => void): InstanceType<Shaka["net"]["NetworkingEngine"]> {
  const e = new NE(onProgress as never);
  e.configure((shaka.util as unknown as { PlayerConfiguration: { createDefault(): { networking: never } } }).PlayerConfiguration.createDefault().networking);
  return e;
}

const BODY = Uint8Array.from({ length: 70_000 }, (_, i) => i % 251);

afterEach(() => {
  NE.unregisterScheme("https");
});

describe("sessionPath", () => {
  it("serves the session's origin and nuwa: URIs, nothing else", () => {
    expect(sessionPath(`${ORIGIN}/v/seg-3.m4s?x=1`, ORIGIN)).toBe("/v/seg-3.m4s");
    expect(sessionPath("nuwa://host/manifest.mpd", ORIGIN)).toBe("/manifest.mpd");
    expect(sessionPath("https://127.0.0.1:9999/seg.m4s", ORIGIN)).toBeNull();
    expect(sessionPath("not a uri", ORIGIN)).toBeNull();
  });
});

describe("the Nuwa scheme inside shaka's NetworkingEngine", () => {
  it("answers with shaka's Response shape: body, status, headers, URIs; ranges go to the session", async () => {
    const s = session(BODY, [30_000, 40_000]);
    NE.registerScheme("https", makeNuwaScheme(S, async () => s, { origin: ORIGIN }) as never, NE.PluginPriority.APPLICATION, true);
    const engine = engineWith();
    const r = await engine.request(NE.RequestType.SEGMENT, shakaRequest(`${ORIGIN}/seg-1.m4s`) as never).promise;
    expect(new Uint8Array(r.data as ArrayBuffer)).toEqual(BODY);
    expect(r.status).toBe(200);
    expect(r.uri).toBe(`${ORIGIN}/seg-1.m4s`);
    expect(r.headers["content-length"]).toBe(String(BODY.length));
    expect(r.headers["content-type"]).toBe("video/mp4");
    expect(s.calls).toEqual([{ op: "get", path: "/seg-1.m4s" }]);
    const ranged = await engine.request(NE.RequestType.SEGMENT, shakaRequest(`${ORIGIN}/seg-1.m4s`, { Range: "bytes=100-199" }) as never).promise;
    expect(ranged.status).toBe(206);
    expect(new Uint8Array(ranged.data as ArrayBuffer)).toEqual(BODY.slice(100, 200));
    expect(s.calls[1]).toEqual({ op: "get", path: "/seg-1.m4s", range: [100, 199] });
  });

  it("reports progress as shaka's fetch plugin does (> 100 ms and ≥ 16 kB since the last report, and at the end), through the engine to its ABR hook", async () => {
    // Three 20 kB chunks 120 ms apart, then 10 small ones at once: the small ones make one last report.
    const chunks = [20_000, 20_000, 20_000, ...Array(10).fill(1_000)];
    const s = session(BODY, chunks, 0);
    const slow: Handler = async (req, o) => {
      const head: ResponseHead = { status: 200, total_bytes: BODY.length };
      let off = 0;
      for (const [i, n] of chunks.entries()) {
        await sleep(i < 3 ? 120 : 0);
        const p = BODY.slice(off, off + n);
        off += n;
        o.onData?.(p, off, head);
      }
      return s.request(req, {});
    };
    NE.registerScheme("https", makeNuwaScheme(S, async () => ({ request: slow }), { origin: ORIGIN }) as never, NE.PluginPriority.APPLICATION, true);
    const progress: [number, number, boolean][] = [];
    const engine = engineWith((ms, bytes, allow) => progress.push([ms, bytes, allow]));
    await engine.request(NE.RequestType.SEGMENT, shakaRequest(`${ORIGIN}/seg-2.m4s`) as never).promise;
    expect(progress.map((p) => p[1])).toEqual([20_000, 20_000, 20_000, 10_000]);
    for (const p of progress.slice(0, 3)) expect(p[0]).toBeGreaterThan(100);
    expect(progress.reduce((a, p) => a + p[1], 0)).toBe(70_000);
  });

  it("maps failures to shaka.util.Error: ERROR answer → BAD_HTTP_STATUS with the status, session failure → HTTP_ERROR", async () => {
    const codes: unknown[][] = [];
    for (const e of [new NuwaRequestError("404 not_found", 404, "http"), new NuwaRequestError("bad frame", 0, "protocol")]) {
      const plugin = makeNuwaScheme(S, async () => failing(e), { origin: ORIGIN, max_resumes: 0 });
      const err = await plugin(`${ORIGIN}/missing.m4s`, shakaRequest(`${ORIGIN}/missing.m4s`), 1, () => {}, () => {}).promise.catch((x: unknown) => x);
      expect(err).toBeInstanceOf(shaka.util.Error);
      const se = err as ShakaError;
      codes.push([se.code, se.category, se.severity, se.data[1]]);
    }
    expect(codes).toEqual([
      [shaka.util.Error.Code.BAD_HTTP_STATUS, shaka.util.Error.Category.NETWORK, shaka.util.Error.Severity.RECOVERABLE, 404],
      [shaka.util.Error.Code.HTTP_ERROR, shaka.util.Error.Category.NETWORK, shaka.util.Error.Severity.RECOVERABLE, expect.any(NuwaRequestError)],
    ]);
  });

  it("abort: the session request is cancelled, no progress afterwards, OPERATION_ABORTED", async () => {
    const s = session(BODY, Array(70).fill(1_000), 5);
    const progress: number[] = [];
    const plugin = makeNuwaScheme(S, async () => s, { origin: ORIGIN });
    const op = plugin(`${ORIGIN}/seg-3.m4s`, shakaRequest(`${ORIGIN}/seg-3.m4s`), 1, (_ms, b) => progress.push(b), () => {});
    await sleep(30);
    await op.abort();
    const err = (await op.promise.catch((x: unknown) => x)) as ShakaError;
    expect(err.code).toBe(shaka.util.Error.Code.OPERATION_ABORTED);
    expect(s.signals[0]?.aborted).toBe(true);
    const n = progress.length;
    await sleep(30);
    expect(progress.length).toBe(n);
  });

  it("times out after retryParameters.timeout with TIMEOUT", async () => {
    const s = session(BODY, Array(70).fill(1_000), 20);
    const plugin = makeNuwaScheme(S, async () => s, { origin: ORIGIN });
    const err = (await plugin(`${ORIGIN}/seg-4.m4s`, shakaRequest(`${ORIGIN}/seg-4.m4s`, {}, 50), 1, () => {}, () => {}).promise.catch((x: unknown) => x)) as ShakaError;
    expect(err.code).toBe(shaka.util.Error.Code.TIMEOUT);
    expect(s.signals[0]?.aborted).toBe(true);
  });

  it("passes other origins to the fallback, or fails them without one", async () => {
    const fallback = vi.fn(() => new shaka.util.AbortableOperation(Promise.resolve("fb"), () => Promise.resolve())) as unknown as NuwaSchemePlugin;
    const s = session(BODY, [70_000]);
    const other = "https://cdn.example/seg.m4s";
    expect(await makeNuwaScheme(S, async () => s, { origin: ORIGIN, fallback })(other, shakaRequest(other), 1, () => {}, () => {}).promise).toBe("fb");
    const err = (await makeNuwaScheme(S, async () => s, { origin: ORIGIN })(other, shakaRequest(other), 1, () => {}, () => {}).promise.catch((x: unknown) => x)) as ShakaError;
    expect(err.code).toBe(shaka.util.Error.Code.HTTP_ERROR);
    expect(s.calls).toEqual([]);
  });
});
