/**
 * An hls.js loader (hls.js 1.x `config.loader`: a class hls.js instantiates per request
 * with `new Loader(config)`) that serves playlists and fragments over the Nuwa session:
 * one `get` request per load on its own stream, byte ranges (`rangeStart`/`rangeEnd`,
 * end exclusive), aborts, and session losses ridden through with range requests for the
 * bytes still missing (dash/loader.ts `fetchResumable`).
 *
 * It fills `stats` the way hls.js's own XhrLoader does (hls.js src/utils/xhr-loader.ts),
 * because that object is what its ABR reads (`frag.stats = loader.stats`; AbrController
 * `onFragBuffered` samples `loaded` over `loading.end` (or `parsing.end`) − `loading.start`
 * − min(TTFB, its TTFB estimate), and `_abandonRulesCheck` reads `loaded`/`total` while
 * loading):
 * - `loading.start`: when `load()` is called (performance.now ms);
 * - `loading.first`: the first byte of the answer (XHR: readyState ≥ 2), ≥ start;
 * - `loaded` / `total`: updated per DATA payload as they arrive (XHR onprogress), both the
 *   body length at the end;
 * - `loading.end`: the complete body, ≥ first; `bwEstimate` = total·8000 / (end − first) bit/s;
 * - `aborted`: set by `abort()` (and by a timeout) before the answer completed.
 *
 * Timeouts follow `config.loadPolicy` as XhrLoader's do: `maxTimeToFirstByteMs` until the
 * first byte, then `maxLoadTimeMs` from the start; on expiry `onTimeout`. Errors: an ERROR
 * answer is `onError({code: status})`, anything else (session lost beyond `max_resumes`,
 * stream reset, no session) `onError({code: 0})`, as a network error from XHR. hls.js's own
 * retry policies (error-controller) then apply unchanged. Responses are whole (no
 * progressive `onProgress` chunks: a custom loader disables hls.js's progressive streaming).
 *
 * A retry takes over a timed-out transfer (`retry_takeover_ms`; attach.ts turns it on with Nuwa's
 * MPC): at hls.js's deadline (`maxTimeToFirstByteMs`, 10 s by default, or `maxLoadTimeMs`) hls.js
 * gets `onTimeout` as from XHR, but the transfer goes on for that long, and a load of the same
 * path and range within it reads that transfer with the bytes already in. hls.js retries a
 * timed-out fragment at once (`timeoutRetry.retryDelayMs` 0); asked afresh, the retry would start
 * from its first byte at the back of whatever queue made the first attempt late (next to a Cubic
 * download on a 3G link the queue is 10-20 s: docs/BENCHMARKS.md, fifty-fourth session). Its
 * `stats` and the completion it reports then run from the transfer's start, so the throughput
 * sample spans both attempts. A transfer nobody takes within the time is aborted.
 *
 * CMCD (CTA-5004), when the site sets hls.js's `cmcd` config: hls.js's CMCDController wraps
 * this class as `pLoader`/`fLoader` and, before each `load`, rewrites the context's `url`
 * (a `CMCD=` query parameter, the default) or `headers` (`CMCD-*`, with `useHeaders: true`)
 * (hls.js src/controller/cmcd-controller.ts `apply`). That payload travels as the request's
 * `cmcd` field, as dash.js's does (docs/PROTOCOL.md "CMCD"); the server logs it, and the
 * path asked for drops the query.
 */
import { cmcdOf, failureStatus, type RequestSession, startTransfer, TimedOutTransfers, type Transfer } from "../dash/loader.js";

/** hls.js's LoaderStats (hls.js src/loader/load-stats.ts), the fields this loader writes. */
export interface HlsLoaderStats {
  aborted: boolean;
  loaded: number;
  retry: number;
  total: number;
  chunkCount: number;
  bwEstimate: number;
  loading: { start: number; first: number; end: number };
  parsing: { start: number; end: number };
  buffering: { start: number; first: number; end: number };
}

/** The slice of hls.js's Fragment a fragment load carries (FragmentLoaderContext.frag). */
export interface HlsFragLike {
  type?: string;
  level?: number;
  sn?: number | string;
  start?: number;
  duration?: number;
}

/** The slice of hls.js's LoaderContext this loader reads. */
export interface HlsLoaderContext {
  url: string;
  /** `arraybuffer` for fragments and keys; `""`/`text` for playlists. */
  responseType: string;
  type?: string;
  rangeStart?: number;
  /** Exclusive (hls.js requests `bytes=rangeStart-(rangeEnd-1)`). */
  rangeEnd?: number;
  frag?: HlsFragLike;
  /** Request headers hls.js set (its CMCD header mode writes `CMCD-*` here). */
  headers?: Record<string, string>;
}

/** The slice of hls.js's LoaderConfiguration this loader reads. */
export interface HlsLoaderConfiguration {
  loadPolicy?: { maxTimeToFirstByteMs?: number; maxLoadTimeMs?: number };
  timeout?: number;
}

/** hls.js's LoaderCallbacks. `networkDetails` is always null (there is no XMLHttpRequest). */
export interface HlsLoaderCallbacks {
  onSuccess(response: { url: string; data: string | ArrayBuffer; code: number }, stats: HlsLoaderStats, context: HlsLoaderContext, networkDetails: null): void;
  onError(error: { code: number; text: string }, context: HlsLoaderContext, networkDetails: null, stats: HlsLoaderStats): void;
  onTimeout(stats: HlsLoaderStats, context: HlsLoaderContext, networkDetails: null): void;
  onAbort?(stats: HlsLoaderStats, context: HlsLoaderContext, networkDetails: null): void;
  onProgress?(stats: HlsLoaderStats, context: HlsLoaderContext, data: string | ArrayBuffer, networkDetails: null): void;
}

/** A completed fragment load, as HlsLoaderOptions.onComplete sees it. */
export interface HlsLoadedFragment {
  frag: HlsFragLike;
  bytes: number;
  /** `loading.start` → `loading.end`, ms. */
  duration_ms: number;
}

export interface HlsLoaderOptions {
  /** Deadline when hls.js's load policy gives none, ms. */
  default_timeout_ms: number;
  /** Most session losses one load rides through before it fails to hls.js. */
  max_resumes: number;
  /** Called when a fragment load completes with status < 300 (the MPC's segment history). */
  onComplete?: (done: HlsLoadedFragment) => void;
  /**
   * How long a timed-out load's transfer goes on for a retry of the same path and range to take
   * over (module doc), ms; 0 (the default): aborted at the deadline, as hls.js's XhrLoader does.
   */
  retry_takeover_ms: number;
}

export const DEFAULT_HLS_LOADER_OPTIONS: Readonly<HlsLoaderOptions> = Object.freeze({ default_timeout_ms: 30_000, max_resumes: 3, retry_takeover_ms: 0 });

/** A fresh hls.js LoadStats. */
export function newLoadStats(): HlsLoaderStats {
  return { aborted: false, loaded: 0, retry: 0, total: 0, chunkCount: 0, bwEstimate: 0, loading: { start: 0, first: 0, end: 0 }, parsing: { start: 0, end: 0 }, buffering: { start: 0, first: 0, end: 0 } };
}

/** The instance side of the loader class (hls.js's `Loader<LoaderContext>`). */
export interface NuwaHlsLoader {
  context: HlsLoaderContext | null;
  stats: HlsLoaderStats;
  load(context: HlsLoaderContext, config: HlsLoaderConfiguration, callbacks: HlsLoaderCallbacks): void;
  abort(): void;
  destroy(): void;
  getCacheAge(): number | null;
  getResponseHeader(name: string): string | null;
}

/** The class handed to hls.js as `config.loader` (constructed with hls.js's config). */
export type NuwaHlsLoaderClass = new (config?: unknown) => NuwaHlsLoader;

/**
 * Make the loader class.
 * @param session the session every load goes over: the open one, or the next one while reconnecting (rejects if none can be had)
 */
export function makeNuwaHlsLoader(session: () => Promise<RequestSession>, options: Partial<HlsLoaderOptions> = {}): NuwaHlsLoaderClass {
  const o = { ...DEFAULT_HLS_LOADER_OPTIONS, ...options };
  const timed_out = new TimedOutTransfers(o.retry_takeover_ms); // kept for a retry to take over (module doc)
  return class NuwaHlsLoaderImpl implements NuwaHlsLoader {
    context: HlsLoaderContext | null = null;
    stats: HlsLoaderStats = newLoadStats();
    private callbacks: HlsLoaderCallbacks | null = null;
    private transfer: Transfer | null = null;
    private key = "";
    private timer: ReturnType<typeof setTimeout> | undefined;
    private finished = false;

    load(context: HlsLoaderContext, config: HlsLoaderConfiguration, callbacks: HlsLoaderCallbacks): void {
      const stats = this.stats;
      if (stats.loading.start) throw new Error("Loader can only be used once."); // as hls.js's BaseLoader
      const now = performance.now();
      this.context = context;
      this.callbacks = callbacks;
      const policy = config.loadPolicy ?? {};
      const load_ms = Number.isFinite(policy.maxLoadTimeMs) && policy.maxLoadTimeMs! > 0 ? policy.maxLoadTimeMs! : config.timeout && config.timeout > 0 ? config.timeout : o.default_timeout_ms;
      const ttfb_ms = Number.isFinite(policy.maxTimeToFirstByteMs) && policy.maxTimeToFirstByteMs! > 0 ? Math.min(policy.maxTimeToFirstByteMs!, load_ms) : load_ms;
      this.arm(ttfb_ms);
      const range: [number, number] | undefined = context.rangeEnd ? [context.rangeStart ?? 0, context.rangeEnd - 1] : undefined;
      const path = new URL(context.url, "http://x/").pathname;
      const cmcd = cmcdOf(context.url, context.headers);
      this.key = TimedOutTransfers.key(path, range);
      // a retry of a load that timed out reads the transfer it left (module doc), timed from that transfer's start
      const kept = o.retry_takeover_ms > 0 ? timed_out.take(this.key) : null;
      const t = kept ?? startTransfer(session, path, range, o.max_resumes, cmcd);
      this.transfer = t;
      stats.loading.start = kept ? Math.min(t.started_ms, now) : now;
      const onData = (loaded: number, total: number) => {
        if (this.finished) return;
        if (stats.loading.first === 0) {
          stats.loading.first = Math.max(Number.isFinite(t.first_byte_ms) ? t.first_byte_ms : performance.now(), stats.loading.start);
          this.arm(load_ms - (performance.now() - now)); // XhrLoader: the rest of maxLoadTimeMs (this load's own)
        }
        stats.loaded = loaded;
        stats.total = total;
      };
      t.listeners.add(onData);
      if (t.loaded > 0) onData(t.loaded, t.total); // taken over with bytes already in
      t.result.then(
        (r) => {
          t.listeners.delete(onData);
          if (this.finished) return;
          const cb = this.finish();
          if (r.head.status >= 300) {
            cb?.onError({ code: r.head.status, text: `HTTP ${r.head.status}` }, context, null, stats);
            return;
          }
          const now = performance.now();
          if (stats.loading.first === 0) stats.loading.first = Math.max(now, stats.loading.start); // empty body
          stats.loading.end = Math.max(now, stats.loading.first);
          stats.loaded = stats.total = r.body.length;
          stats.bwEstimate = (stats.total * 8000) / Math.max(stats.loading.end - stats.loading.first, 1e-3);
          const data = context.responseType === "arraybuffer" ? (r.body.slice().buffer as ArrayBuffer) : new TextDecoder().decode(r.body);
          cb?.onProgress?.(stats, context, data, null);
          if (context.frag && o.onComplete) o.onComplete({ frag: context.frag, bytes: r.body.length, duration_ms: stats.loading.end - stats.loading.start });
          cb?.onSuccess({ url: context.url, data, code: r.head.status }, stats, context, null);
        },
        (e: unknown) => {
          t.listeners.delete(onData);
          if (this.finished) return;
          const cb = this.finish();
          const f = failureStatus(e);
          cb?.onError({ code: f.status, text: f.statusText }, context, null, stats);
        },
      );
    }

    /** (Re)arm the deadline: on expiry the load stops and hls.js gets `onTimeout`; the transfer is kept for a retry when `retry_takeover_ms` is set. */
    private arm(ms: number): void {
      clearTimeout(this.timer);
      this.timer = setTimeout(
        () => {
          if (this.finished) return;
          const cb = this.finish(o.retry_takeover_ms > 0 ? "timeout" : "abort");
          cb?.onTimeout(this.stats, this.context as HlsLoaderContext, null);
        },
        Math.max(0, ms),
      );
    }

    /**
     * Stop the load once: `abort` aborts its transfer, `timeout` keeps it for a retry to take over
     * (module doc); both mark `stats.aborted`. Returns the callbacks to answer with.
     */
    private finish(cancel?: "abort" | "timeout"): HlsLoaderCallbacks | null {
      this.finished = true;
      clearTimeout(this.timer);
      if (cancel) {
        this.stats.aborted = true;
        const t = this.transfer;
        if (t && cancel === "timeout" && !t.failed) timed_out.keep(this.key, t, new DOMException("timed out, no retry took it over", "AbortError"));
        else t?.ac.abort(new DOMException("aborted by hls.js", "AbortError"));
      }
      return this.callbacks;
    }

    abort(): void {
      if (this.finished || !this.context) return;
      const cb = this.finish("abort");
      cb?.onAbort?.(this.stats, this.context, null);
    }

    destroy(): void {
      if (!this.finished && this.context) this.finish("abort");
      this.callbacks = null;
      this.context = null;
    }

    getCacheAge(): number | null {
      return null;
    }

    getResponseHeader(_name: string): string | null {
      return null;
    }
  };
}
