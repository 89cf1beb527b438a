/**
 * A shaka-player scheme plugin (shaka.net.NetworkingEngine.registerScheme) that
 * serves the requests of the session's origin over the Nuwa session: one `get`
 * per request (byte ranges from the Range header), the response shaped as
 * shaka's HTTP plugins shape it, and progress reported as shaka's own
 * HttpFetchPlugin reports it over HTTP (lib/net/http_fetch_plugin.js `request_`):
 * after each chunk read from the stream, `progressUpdated(ms since the last call,
 * bytes since it, bytes remaining)` once more than 100 ms have passed and at
 * least `minBytesForProgressEvents` bytes (shaka's default 16 kB) came, and
 * always at the end. The NetworkingEngine hands these to the AbrManager's
 * `segmentDownloaded`, so shaka's EWMA estimator measures as it would over
 * HTTP (it ignores samples under 16 kB and keeps its default estimate until
 * 128 kB were sampled: shaka's AdvancedAbrConfiguration).
 *
 * Failures are shaka.util.Error objects like the HTTP plugins' (category
 * NETWORK, severity RECOVERABLE, so shaka's retry parameters apply): an ERROR
 * answer → BAD_HTTP_STATUS (data: uri, status, text, headers, request type,
 * uri); shaka's abort → OPERATION_ABORTED; `retryParameters.timeout` →
 * TIMEOUT; anything else (session lost beyond the resumes, stream reset, no
 * session) → HTTP_ERROR. A session lost mid-request is ridden through as in the
 * dash.js loader (`fetchResumable`: the missing bytes asked for again on the
 * next session). URIs of other origins go to `fallback` (shaka's
 * HttpFetchPlugin when the attachment registers it for https).
 *
 * CMCD (CTA-5004), when the site turns on shaka's `cmcd` config: shaka's CmcdManager, called
 * by the NetworkingEngine before the plugin (player.js `onRequest_` → `applyRequestData`),
 * puts the payload on the URI (`CMCD=` query parameter) or in `request.headers` (`CMCD-*`,
 * with `useHeaders`) (lib/util/cmcd_manager.js `applyToRequest_`). That payload travels as
 * the request's `cmcd` field, as dash.js's does (docs/PROTOCOL.md "CMCD"); the server logs it.
 */
import { cmcdOf, fetchResumable, parseRangeHeader, type RequestSession } from "../dash/loader.js";
import { NuwaRequestError } from "../session.js";
import type { NuwaSchemePlugin, ProgressUpdated, ShakaLike, ShakaRequestLike, ShakaResponseLike } from "./types.js";

/** What `makeNuwaScheme` needs of the shaka namespace. */
export type ShakaSchemeDeps = Pick<ShakaLike, "util">;

/** A completed request, as `NuwaSchemeOptions.onComplete` sees it. */
export interface SchemeCompletion {
  uri: string;
  /** shaka.net.NetworkingEngine.RequestType (1 = SEGMENT, 0 = MANIFEST). */
  request_type: number;
  /** shaka's `request.contentType` ("video", "audio", ...), null when it sets none. */
  content_type: string | null;
  bytes: number;
  /** Request start to complete body, ms (performance.now clock). */
  duration_ms: number;
}

export interface NuwaSchemeOptions {
  /** Origin served over the session (e.g. `https://127.0.0.1:4433`); `nuwa:` URIs always are. */
  origin: string;
  /** Plugin for every other URI (e.g. shaka.net.HttpFetchPlugin.parse); without one they fail with HTTP_ERROR. */
  fallback?: NuwaSchemePlugin;
  /** Most session losses one request rides through (default 3). */
  max_resumes?: number;
  /** Called when a request completes with its body. */
  onComplete?: (c: SchemeCompletion) => void;
}

/** The session path of a URI served over the session (path + query), or null for another origin. */
export function sessionPath(uri: string, origin: string): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return null;
  }
  if (u.protocol !== "nuwa:" && u.origin !== new URL(origin).origin) return null;
  return u.pathname || "/";
}

/** A shaka Range header (`bytes=a-b`, or `bytes=0-` = all) as an inclusive range, `"all"`, or null when unsupported. */
function rangeOf(headers: Record<string, string>): [number, number] | "all" | null {
  const v = headers.Range ?? headers.range;
  if (v === undefined) return "all";
  if (/^bytes=0-$/.test(v.trim())) return "all";
  return parseRangeHeader(v) ?? null;
}

/**
 * The scheme plugin (register it with progressSupport = true).
 * @param shaka the shaka namespace (its AbortableOperation and Error classes)
 * @param session the session every request goes over: the open one, or the next one while reconnecting
 */
export function makeNuwaScheme(shaka: ShakaSchemeDeps, session: () => Promise<RequestSession>, o: NuwaSchemeOptions): NuwaSchemePlugin {
  const { Error: ShakaError, AbortableOperation } = shaka.util;
  const netError = (code: number, ...data: unknown[]) => new ShakaError(ShakaError.Severity.RECOVERABLE, ShakaError.Category.NETWORK, code, ...data);
  return (uri, request, request_type, progressUpdated, headersReceived, config) => {
    const path = sessionPath(uri, o.origin);
    if (path === null) {
      if (o.fallback) return o.fallback(uri, request, request_type, progressUpdated, headersReceived, config);
      const e = netError(ShakaError.Code.HTTP_ERROR, uri, new Error(`not served over the Nuwa session (origin ${o.origin})`), request_type);
      return new AbortableOperation(Promise.reject(e), () => Promise.resolve());
    }
    const range = rangeOf(request.headers);
    if (range === null) {
      const e = netError(ShakaError.Code.HTTP_ERROR, uri, new Error(`unsupported Range ${request.headers.Range ?? request.headers.range}`), request_type);
      return new AbortableOperation(Promise.reject(e), () => Promise.resolve());
    }
    const ac = new AbortController();
    const state = { aborted: false, timed_out: false };
    const timeout_ms = request.retryParameters?.timeout ?? 0;
    const onTimeout = () => {
      state.timed_out = true;
      ac.abort(new Error("timeout"));
    };
    const timer = timeout_ms > 0 ? setTimeout(onTimeout, timeout_ms) : undefined;
    const promise = serve(uri, path, range === "all" ? undefined : range, request, request_type, progressUpdated, headersReceived, config?.minBytesForProgressEvents ?? 0, ac.signal)
      .catch((e: unknown) => {
        if (state.aborted) throw netError(ShakaError.Code.OPERATION_ABORTED, uri, request_type);
        if (state.timed_out) throw netError(ShakaError.Code.TIMEOUT, uri, request_type);
        if (e instanceof NuwaRequestError && e.kind === "http") throw netError(ShakaError.Code.BAD_HTTP_STATUS, uri, e.status, e.message, {}, request_type, uri);
        throw netError(ShakaError.Code.HTTP_ERROR, uri, e, request_type);
      })
      .finally(() => clearTimeout(timer));
    return new AbortableOperation(promise, () => {
      state.aborted = true;
      ac.abort(new DOMException("aborted by shaka", "AbortError"));
      return promise.then(
        () => undefined,
        () => undefined,
      );
    });
  };

  async function serve(
    uri: string,
    path: string,
    range: [number, number] | undefined,
    request: ShakaRequestLike,
    request_type: number,
    progressUpdated: ProgressUpdated,
    headersReceived: (h: Record<string, string>) => unknown,
    min_bytes: number,
    signal: AbortSignal,
  ): Promise<ShakaResponseLike> {
    const started_ms = performance.now();
    let last_ms = started_ms;
    let loaded = 0;
    let total = 0;
    let reported = 0;
    let pending = false;
    let got_head = false;
    let done = false;
    // One check per chunk read: onData runs once per DATA frame, synchronously for all frames of
    // one reader.read() (session.ts), so a microtask queued at a burst's first frame runs after its last.
    const onChunk = () => {
      pending = false;
      const t_ms = performance.now();
      const chunk = loaded - reported;
      if (done || signal.aborted || !(t_ms - last_ms > 100 && chunk >= min_bytes)) return; // http_fetch_plugin.js's rule
      progressUpdated(t_ms - last_ms, chunk, Math.max(0, total - loaded));
      reported = loaded;
      last_ms = t_ms;
    };
    const r = await fetchResumable(
      session,
      path,
      range,
      signal,
      o.max_resumes ?? 3,
      (n, t) => {
        loaded = n;
        total = t;
        if (!got_head) {
          got_head = true;
          headersReceived({ "content-length": String(t) });
        }
        if (!pending) {
          pending = true;
          queueMicrotask(onChunk);
        }
      },
      cmcdOf(uri, request.headers),
    );
    done = true;
    const t_ms = performance.now();
    progressUpdated(t_ms - last_ms, r.body.length - reported, 0); // the end: always one call (readObj.done)
    const headers = { "content-type": r.head.content_type ?? "application/octet-stream", "content-length": String(r.body.length) };
    if (!got_head) headersReceived(headers);
    o.onComplete?.({ uri, request_type, content_type: request.contentType ?? null, bytes: r.body.length, duration_ms: t_ms - started_ms });
    const data = r.body.buffer.slice(r.body.byteOffset, r.body.byteOffset + r.body.byteLength) as ArrayBuffer;
    return { uri, originalUri: uri, data, status: r.head.status, headers, fromCache: false, originalRequest: request };
  }
}
