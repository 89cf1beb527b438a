/**
 * A dash.js loader that serves every request (MPD, init, media) over the Nuwa
 * session: one bidirectional stream per request, byte ranges, aborts, and
 * progress events as fine-grained as a browser's fetch reader gives them: one
 * per chunk read from the stream (the DATA frames of one `reader.read()`
 * arrive in one synchronous burst and make one event), each with `loaded`,
 * `total` and `time` (ms since the previous event: dash.js's trace duration
 * `d`, HTTPLoader `_onprogress`), then onloadend. dash.js derives its own
 * throughput samples (bytes after the first trace ÷ the traces' durations,
 * ThroughputModel `_calculateThroughputValuesForXhr`) and its abandonment
 * decisions from these events, so it measures as it would over HTTP.
 * Registered with `player.extend("XHRLoader", factory, false)`.
 *
 * Failures look to dash.js like an XMLHttpRequest's, so its retry settings
 * (`streaming.retryAttempts`, `streaming.retryIntervals`) and error events
 * apply unchanged: an ERROR answer sets `status` to its HTTP status (404,
 * 416, ...); anything else (session lost, stream reset, malformed frames,
 * no session) ends with `status` 0 like a network error; the request's
 * `timeout` (dash.js's fragmentRequestTimeout / manifestRequestTimeout) fires
 * `ontimeout`, then `onloadend` with status 0, like XHR. dash.js's `abort()`
 * calls `onabort` and never `onloadend`.
 *
 * When the session is lost mid-request (server restart, stall) the loader
 * waits for the next session (see reconnect.ts) and asks for the bytes it is
 * still missing with a range request, so a segment already half downloaded
 * is not fetched again; it gives up at the request's deadline and lets
 * dash.js retry.
 *
 * A retry takes over the timed-out transfer (`LoaderOptions.retry_takeover_ms`, default 3 s): at a
 * request's deadline dash.js gets its timeout as from XHR, but the transfer goes on for that long,
 * and a request for the same path and range within it reads that transfer, with the bytes already
 * in, instead of asking the server afresh. dash.js retries a timed-out segment with the same URL
 * after `streaming.retryIntervals` (1 s); asked afresh, the retry starts from its first byte again
 * and, behind a queue, from the back of it: on a near-dark link a 460 kB segment was asked for at
 * 27.5, 48.6 and 69.6 s, each attempt cut at dash.js's 20 s with what it had (docs/BENCHMARKS.md,
 * fifty-fourth session). A transfer nobody takes within the time is aborted.
 *
 * Byte ranges (issue 19): dash.js's `Range: bytes=first-last` (SegmentBase/SegmentList content,
 * sidx) and `bytes=first-` go to the server as a `range`; any other Range (several ranges,
 * a suffix `bytes=-N`) fails the request with 416 and says why, never the whole file
 * silently. CMCD (CTA-5004), when the site turns it on in dash.js: the `CMCD=` query parameter
 * or the `CMCD-*` headers dash.js put on the request travel as the request's `cmcd` field
 * (docs/PROTOCOL.md "CMCD"); the server logs them. The MPD, before dash.js sees it, goes
 * through `onManifest` (attach.ts: mpd.ts `checkMpd`), which can fail it with a named error.
 *
 * Fetch-ahead (`LoaderOptions.fetchAhead`, off unless given): dash.js asks for one segment of
 * each media type at a time, so between two segments the flow is idle for a request's round
 * trip plus any queue standing at the bottleneck; next to a download that keeps a deep buffer
 * full that wait is 0.3–1.5 s a segment and the video's share of the link falls
 * (docs/BENCHMARKS.md, twenty-ninth session). When the first bytes of a media segment arrive,
 * the loader may request the next segments of the same representation (the paths `fetchAhead`
 * returns, in playback order: one, or several when the wait is longer than a segment); dash.js's
 * own request for one of those paths then takes over the transfer in progress (or done), any
 * fetched ahead for segments before it are discarded (aborted; `onFetchAhead` says so, with the
 * bytes each had), and those after it stay (also when a later answer names fewer); a request of
 * that media type for any other path discards them all.
 *
 * Init-segment prefetch (`LoaderOptions.initPrefetch`, off unless given): dash.js fetches a
 * representation's init segment when it switches to it, and asks for the first media segment
 * of the new rung only once that init segment is in (ScheduleController: init, then media), so
 * every switch costs one more request's wait. Behind a queue a competing download keeps full
 * that wait is the queue: next to a Cubic download on a 3G link (1,000 packets at 0.5-1 Mbit/s)
 * a down-switch waited 12.5 s for an 834-byte init segment while the buffer ran out
 * (docs/BENCHMARKS.md, fifty-third session). With the option the loader fetches every init
 * segment the MPD names as soon as the MPD is in (a few kB; one announcing more than
 * MAX_INIT_PREFETCH_BYTES is dropped) and answers dash.js's init requests
 * from those transfers, so a switch waits for its media segment only. dash.js's own
 * `streaming.cacheInitSegments` keeps only the init segments it has fetched (a switch back).
 */
import { NuwaRequestError, type NuwaResponse, type NuwaSession, type ResponseHead } from "../session.js";

/** The slice of dash.js's CommonMediaRequest this loader reads. */
export interface CommonMediaRequest {
  url: string;
  method?: string;
  responseType?: string;
  headers?: Record<string, string>;
  /** ms, 0 = none (dash.js: fragmentRequestTimeout, manifestRequestTimeout). */
  timeout?: number;
  customData: {
    onloadend?: () => void;
    onprogress?: (e: { loaded: number; total: number; lengthComputable: boolean; time?: number }) => void;
    onabort?: () => void;
    ontimeout?: (e: { loaded: number; total: number; lengthComputable: boolean }) => void;
    abort?: () => void;
    request?: { type?: string };
  };
}

/** The slice of dash.js's CommonMediaResponse this loader writes. */
export interface CommonMediaResponse {
  url?: string;
  status?: number;
  statusText?: string;
  headers?: Record<string, string>;
  data?: ArrayBuffer | string;
}

/** The slice of NuwaSession the loader uses (a fake in unit tests). */
export type RequestSession = Pick<NuwaSession, "request">;

export interface LoaderOptions {
  /** Deadline for a request when dash.js gives none (timeout 0), ms. */
  default_timeout_ms: number;
  /** Most session losses one request rides through before it is failed to dash.js. */
  max_resumes: number;
  /**
   * How long a timed-out request's transfer goes on for a retry of the same path and range to take
   * over (module doc), ms; 0: aborted at the deadline (the behaviour before the fifty-fourth session).
   */
  retry_takeover_ms: number;
  /**
   * Called when a request completes with its body (issue 15: the ABR's realized segment
   * throughput): `media_type`/`type`/`bitrate_kbps`/`segment_s` come from dash.js's request
   * (`customData.request`: mediaType, type "MediaSegment", bandwidth bit/s, duration s) when it carries them.
   */
  onComplete?: (done: LoadedRequest) => void;
  /**
   * Called when a request leaves, before its transfer starts (or a segment fetched ahead is
   * taken over), with dash.js's request type ("MediaSegment", "MPD", ...) and media type when
   * it carries them.
   */
  onRequest?: (q: { type: string | null; media_type: string | null }) => void;
  /**
   * Called with the MPD's text (dash.js request type "MPD") before dash.js gets it; an Error
   * returned fails the request (status 0, the error's message as statusText) instead.
   */
  onManifest?: (text: string, url: string) => Error | null;
  /**
   * Fetch-ahead (module doc): called once per whole-file media segment request, when its first
   * bytes arrive; returns the URL path of the segment to fetch ahead, or the paths of the
   * segments after it in playback order (at most MAX_FETCH_AHEAD are kept), or null for none.
   * Segments already fetched ahead stay until dash.js asks for them or for another path.
   */
  fetchAhead?: (q: FetchAheadQuery) => string | readonly string[] | null;
  /** What became of each segment fetched ahead: taken over by dash.js's request, discarded unused, or failed. */
  onFetchAhead?: (e: FetchAheadEvent) => void;
  /**
   * Init-segment prefetch (module doc): called with the MPD's text and URL once it passed
   * `onManifest`; returns the URL paths of the init segments to fetch at once (mpd.ts
   * `initSegmentPaths`). dash.js's later requests for them (no Range) read those transfers,
   * as often as it asks; a new MPD replaces them.
   */
  initPrefetch?: (text: string, url: string) => readonly string[];
}

/** The media segment whose first bytes arrived, as `LoaderOptions.fetchAhead` sees it. */
export interface FetchAheadQuery {
  path: string;
  media_type: string;
  rep_id: string | null;
  /** dash.js's segment start and duration, s (NaN when absent). */
  start_s: number;
  segment_s: number;
}

/** `LoaderOptions.onFetchAhead`: a segment fetched ahead, its outcome and the bytes it had then. */
export interface FetchAheadEvent {
  path: string;
  media_type: string;
  outcome: "used" | "discarded" | "failed";
  bytes: number;
}

/** A completed request, as LoaderOptions.onComplete sees it. */
export interface LoadedRequest {
  bytes: number;
  /** Request start to complete body, ms (performance.now clock). */
  duration_ms: number;
  /**
   * First body byte to complete body, ms: dash.js's own download time for its throughput sample
   * (`streaming.abr.throughput.useDeadTimeLatency`, on by default, leaves the time to first byte
   * out); from the same start as `duration_ms` when that is later (fetched ahead). NaN when no
   * byte was timed (an empty body).
   */
  transfer_ms: number;
  media_type: string | null;
  type: string | null;
  bitrate_kbps: number;
  segment_s: number;
  /** dash.js's segment start (request startTime, s), NaN when absent. */
  start_s: number;
  /** Representation@id of the request, null when absent. */
  rep_id: string | null;
  /**
   * The body came from a fetch-ahead (LoaderOptions.fetchAhead): `duration_ms` then runs from the
   * later of its own request and the previous segment of its media type completing, so the two
   * overlapping downloads are not both charged the time they shared.
   */
  fetched_ahead?: boolean;
}

/**
 * Largest init segment the loader prefetches (`LoaderOptions.initPrefetch`), bytes: a prefetch whose
 * answer announces more is dropped at its first bytes (aborted unless a dash.js request already
 * reads it), so content with heavy init segments (boxes a packager put there) does not spend a
 * slow link's start-up on every representation's. Init segments are a few kB (834 bytes here).
 */
export const MAX_INIT_PREFETCH_BYTES = 64 * 1024;

/** Most segments of one media type the loader keeps fetched ahead (`LoaderOptions.fetchAhead`). */
export const MAX_FETCH_AHEAD = 8;

export const DEFAULT_LOADER_OPTIONS: Readonly<LoaderOptions> = Object.freeze({ default_timeout_ms: 30_000, max_resumes: 3, retry_takeover_ms: 3_000 });

/** `last` of an open-ended range (`bytes=first-`): the server clamps it to the end (PROTOCOL.md "Requests"). */
export const OPEN_RANGE_LAST = Number.MAX_SAFE_INTEGER;

/**
 * Parse `bytes=first-last` (or `bytes=first-`, to the end: RFC 9110 §14.1.2) into an inclusive
 * range, or undefined (absent, several ranges, a suffix range, garbage, last < first).
 */
export function parseRangeHeader(value: string | undefined): [number, number] | undefined {
  if (!value) return undefined;
  const m = /^bytes=(\d+)-(\d*)$/.exec(value.trim());
  if (!m) return undefined;
  const first = Number(m[1]);
  const last = m[2] === "" ? OPEN_RANGE_LAST : Number(m[2]);
  return Number.isSafeInteger(first) && Number.isSafeInteger(last) && last >= first ? [first, last] : undefined;
}

/** A request's header, case-insensitively. */
function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  const n = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === n) return v;
  return undefined;
}

/** The headers dash.js writes CMCD into in its header mode (CTA-5004 §2.2), in this order. */
const CMCD_HEADERS = ["CMCD-Object", "CMCD-Request", "CMCD-Session", "CMCD-Status"] as const;
/** Longest CMCD payload carried, characters (a request is at most 4096 bytes). */
export const MAX_CMCD_CHARS = 2048;

/**
 * The CMCD payload (CTA-5004 §2.2) a player attached to a request: the `CMCD` query parameter
 * (query mode, decoded) or the `CMCD-*` headers joined by commas (header mode); undefined
 * when there is none or it is longer than MAX_CMCD_CHARS. dash.js (`streaming.cmcd`), hls.js
 * (`config.cmcd`: its CMCDController rewrites the loader context's `url`/`headers`) and
 * shaka-player (`cmcd`: its CmcdManager rewrites the request's `uris`/`headers`) all write
 * it in one of these two places (through @svta/cml-cmcd), so the adapters carry it alike.
 * @param url the request URL, absolute or relative
 */
export function cmcdOf(url: string, headers?: Record<string, string>): string | undefined {
  let q: string | null = null;
  try {
    q = new URL(url, "http://relative.invalid/").searchParams.get("CMCD");
  } catch {
    q = null;
  }
  const parts = q ? [q] : CMCD_HEADERS.map((h) => header(headers, h)).filter((v): v is string => !!v);
  const payload = parts.join(",");
  return payload && payload.length <= MAX_CMCD_CHARS ? payload : undefined;
}

/**
 * HTTP-like status and text dash.js sees for a failed request: the ERROR
 * frame's status for `http` errors, 0 (a network error, as XHR reports it)
 * for everything else.
 */
export function failureStatus(e: unknown): { status: number; statusText: string } {
  if (e instanceof NuwaRequestError) return { status: e.kind === "http" ? e.status : 0, statusText: `${e.kind}: ${e.message}` };
  return { status: 0, statusText: String(e) };
}

class Deadline extends Error {
  constructor(readonly timeout_ms: number) {
    super(`request timed out after ${timeout_ms} ms`);
  }
}

/** Wait for `p`, or reject when `signal` aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/**
 * Fetch `path` (optionally a range) over the session, riding through session
 * losses: after a retryable error it waits for the next session and asks for
 * the bytes still missing. Stops on abort (signal), a non-retryable error, or
 * `max_resumes` losses.
 * @returns the head of the first answer (status 200/206 as asked) and the whole body
 */
export async function fetchResumable(
  session: () => Promise<RequestSession>,
  path: string,
  range: [number, number] | undefined,
  signal: AbortSignal,
  max_resumes: number,
  onData: (loaded_bytes: number, total_bytes: number) => void,
  cmcd?: string,
): Promise<{ head: ResponseHead; body: Uint8Array; resumes: number }> {
  const parts: Uint8Array[] = [];
  let loaded = 0;
  const got: { head: ResponseHead | null } = { head: null }; // set inside the onData callback
  let resumes = 0;
  for (;;) {
    const head = got.head;
    let sub_range = range;
    if (head) {
      // Resume: the bytes not received yet, of the range asked for or of the whole resource.
      const first = (range ? range[0] : 0) + loaded;
      const last = range ? Math.min(range[1], head.total_bytes - 1) : head.total_bytes - 1;
      if (first > last) break;
      sub_range = [first, last];
    }
    const s = await untilAborted(session(), signal);
    let r: NuwaResponse;
    try {
      r = await s.request({ op: "get", path, ...(sub_range ? { range: sub_range } : {}), ...(cmcd ? { cmcd } : {}) }, {
        signal,
        onData: (payload, _sub_loaded, h) => {
          if (!got.head) got.head = h;
          parts.push(payload.slice());
          loaded += payload.length;
          const first = got.head;
          onData(loaded, first.range ? first.range[1] - first.range[0] + 1 : first.total_bytes);
        },
      });
    } catch (e) {
      if (e instanceof NuwaRequestError && e.retryable && resumes < max_resumes && !signal.aborted) {
        resumes++;
        continue;
      }
      throw e;
    }
    if (!got.head) got.head = r.head; // empty body
    break;
  }
  const body = new Uint8Array(loaded);
  let off = 0;
  for (const p of parts) {
    body.set(p, off);
    off += p.length;
  }
  return { head: got.head as ResponseHead, body, resumes };
}

/** One fetch over the session, which a player's request reads, or which waits for one (fetch-ahead, a retry). */
export interface Transfer {
  path: string;
  /** performance.now() when it was asked for, ms. */
  started_ms: number;
  ac: AbortController;
  loaded: number;
  total: number;
  listeners: Set<(loaded: number, total: number) => void>;
  result: Promise<{ head: ResponseHead; body: Uint8Array; resumes: number }>;
  failed: boolean;
  /** performance.now() when its last byte arrived, ms (NaN before). */
  done_ms: number;
  /** performance.now() when its first body byte arrived, ms (NaN before). */
  first_byte_ms: number;
}

/**
 * Start fetching `path` (or its byte range, both ends inclusive) over the session with `fetchResumable`;
 * readers add a listener for progress (loaded and total bytes) and await `result`.
 */
export function startTransfer(session: () => Promise<RequestSession>, path: string, range: [number, number] | undefined, max_resumes: number, cmcd?: string): Transfer {
  const t: Transfer = { path, started_ms: performance.now(), ac: new AbortController(), loaded: 0, total: 0, listeners: new Set(), result: Promise.resolve() as never, failed: false, done_ms: Number.NaN, first_byte_ms: Number.NaN };
  t.result = fetchResumable(session, path, range, t.ac.signal, max_resumes, (n, total) => {
    if (n > 0 && !Number.isFinite(t.first_byte_ms)) t.first_byte_ms = performance.now();
    t.loaded = n;
    t.total = total;
    for (const l of [...t.listeners]) l(n, total);
  }, cmcd);
  t.result.then(
    () => {
      t.done_ms = performance.now();
    },
    () => {
      t.failed = true;
    },
  );
  return t;
}

/**
 * Transfers of timed-out requests, kept `keep_ms` for a retry of the same path and range to take
 * over (the dash.js and hls.js loaders' retry takeover; module doc). Each kept transfer is aborted
 * with the reason it was kept with when nobody takes it in time, when another transfer is kept
 * under its key, or on `clear`.
 */
export class TimedOutTransfers {
  private readonly kept = new Map<string, { t: Transfer; timer: ReturnType<typeof setTimeout> }>();
  constructor(private readonly keep_ms: number) {}

  /** The key of a request: its path and byte range (both ends inclusive), if any. */
  static key(path: string, range: [number, number] | undefined): string {
    return `${path}|${range ? range.join("-") : ""}`;
  }

  /** Keep `t` under `key` for a retry; aborted with `reason` if none takes it within `keep_ms`. */
  keep(key: string, t: Transfer, reason: unknown): void {
    const old = this.kept.get(key);
    if (old) {
      clearTimeout(old.timer); // kept again: one timer per key
      if (old.t !== t) old.t.ac.abort(reason);
    }
    const timer = setTimeout(() => {
      if (this.kept.get(key)?.t === t) this.kept.delete(key);
      t.ac.abort(reason);
    }, this.keep_ms);
    this.kept.set(key, { t, timer });
  }

  /** The transfer kept under `key`, now the caller's, or null (none, or it failed meanwhile). */
  take(key: string): Transfer | null {
    const k = this.kept.get(key);
    if (!k) return null;
    this.kept.delete(key);
    clearTimeout(k.timer);
    return k.t.failed ? null : k.t;
  }

  /** Abort every kept transfer (no retry will come). */
  clear(reason: unknown): void {
    for (const k of this.kept.values()) {
      clearTimeout(k.timer);
      k.t.ac.abort(reason);
    }
    this.kept.clear();
  }
}

/**
 * Make the loader function dash.js instantiates (FactoryMaker calls it with
 * `this = { context }`).
 * @param session the session every request goes over: the open one, or the next one while reconnecting (rejects if none can be had)
 */
export function makeNuwaLoader(session: () => Promise<RequestSession>, options: Partial<LoaderOptions> = {}): () => object {
  const o = { ...DEFAULT_LOADER_OPTIONS, ...options };
  // Segments fetched ahead, in playback order, per media type; shared by every loader dash.js makes.
  type Ahead = { t: Transfer; timer: ReturnType<typeof setTimeout> };
  const ahead = new Map<string, Ahead[]>(); // media type → its segments fetched ahead
  const last_complete_ms = new Map<string, number>(); // per media type: the previous segment's completion
  const inits = new Map<string, Transfer>(); // init segments prefetched (initPrefetch): path → its transfer, kept for every request
  const timed_out = new TimedOutTransfers(o.retry_takeover_ms); // kept for a retry to take over (module doc)
  /** Fetch the init segments the MPD names (initPrefetch), replacing those of an earlier MPD. */
  const prefetchInits = (paths: readonly string[]) => {
    for (const t of inits.values()) if (!Number.isFinite(t.done_ms)) t.ac.abort(new DOMException("init prefetch replaced by a new MPD", "AbortError"));
    inits.clear();
    for (const path of paths) {
      if (inits.has(path)) continue;
      const t = startTransfer(session, path, undefined, o.max_resumes);
      // checked once, at the first bytes (the answer's head gives the size)
      const guard = (_loaded: number, total: number) => {
        t.listeners.delete(guard);
        if (total <= MAX_INIT_PREFETCH_BYTES) return;
        if (inits.get(path) === t) inits.delete(path);
        if (t.listeners.size === 0) t.ac.abort(new DOMException(`init segment ${path} is ${total} bytes, over the prefetch's ${MAX_INIT_PREFETCH_BYTES}`, "AbortError"));
      };
      t.listeners.add(guard);
      inits.set(path, t);
    }
  };
  const release = (media_type: string, a: Ahead, outcome: "used" | "discarded" | "failed") => {
    clearTimeout(a.timer);
    if (outcome === "discarded") a.t.ac.abort(new DOMException("fetch-ahead discarded", "AbortError"));
    o.onFetchAhead?.({ path: a.t.path, media_type, outcome, bytes: a.t.loaded });
  };
  const discard = (media_type: string, a: Ahead) => release(media_type, a, a.t.failed ? "failed" : "discarded");
  const setAhead = (media_type: string, list: Ahead[]) => (list.length > 0 ? ahead.set(media_type, list) : ahead.delete(media_type));
  /** Discard every segment of `media_type` fetched ahead. */
  const dropAhead = (media_type: string) => {
    const list = ahead.get(media_type) ?? [];
    ahead.delete(media_type);
    for (const a of list) discard(media_type, a);
  };
  /**
   * dash.js's request for `path`: the transfer fetched ahead for it, if any (those fetched for
   * segments before it are discarded: skipped by a seek or a lost request; those after it kept);
   * with none for it, every one of that media type is discarded.
   */
  const takeAhead = (media_type: string, path: string): Transfer | null => {
    const list = ahead.get(media_type);
    if (!list) return null;
    const i = list.findIndex((a) => a.t.path === path);
    if (i < 0 || list[i]!.t.failed) {
      dropAhead(media_type);
      return null;
    }
    setAhead(media_type, list.slice(i + 1));
    for (const a of list.slice(0, i)) discard(media_type, a);
    release(media_type, list[i]!, "used");
    return list[i]!.t;
  };
  /**
   * Fetch `paths` ahead (playback order) where not fetched ahead already. Those already fetched
   * ahead stay, named or not (a shallower answer does not throw away segments on their way: dash.js's
   * request for another path discards them, takeAhead); at most MAX_FETCH_AHEAD per media type.
   */
  const startAhead = (media_type: string, paths: readonly string[]) => {
    const list = ahead.get(media_type) ?? [];
    for (const path of paths) {
      if (list.length >= MAX_FETCH_AHEAD) break;
      if (list.some((a) => a.t.path === path)) continue;
      const t = startTransfer(session, path, undefined, o.max_resumes);
      // Never taken within a request's deadline (dash.js stopped, seeked elsewhere): let it go.
      const timer = setTimeout(() => {
        const cur = ahead.get(media_type) ?? [];
        const a = cur.find((x) => x.t === t);
        if (!a) return;
        setAhead(media_type, cur.filter((x) => x !== a));
        discard(media_type, a);
      }, o.default_timeout_ms);
      list.push({ t, timer });
    }
    setAhead(media_type, list);
  };
  return function NuwaLoader() {
    const inflight = new Map<CommonMediaRequest, () => void>();
    function load(req: CommonMediaRequest, res: CommonMediaResponse): boolean {
      const cd = req.customData;
      let transfer: Transfer | null = null; // set once the range is known good
      let finished = false;
      let loaded = 0;
      let total = 0;
      const finish = () => {
        finished = true;
        inflight.delete(req);
        clearTimeout(timer);
      };
      let shared = false; // reading a prefetched init segment: others may read it too, so never abort it
      // dash.js's abort (seek, abandonment, reset): stop, onabort, no onloadend (as XHRLoader.abort).
      const abort = () => {
        if (finished) return;
        finish();
        if (!shared) transfer?.ac.abort(new DOMException("aborted by dash.js", "AbortError"));
        cd.onabort?.();
      };
      cd.abort = abort;
      inflight.set(req, abort);
      const timeout_ms = req.timeout && req.timeout > 0 ? req.timeout : o.default_timeout_ms;
      const timer = setTimeout(() => {
        if (finished) return;
        finish();
        if (!shared && transfer) {
          if (o.retry_takeover_ms > 0 && !transfer.failed) timed_out.keep(transfer_key, transfer, new Deadline(timeout_ms)); // a retry may take it over
          else transfer.ac.abort(new Deadline(timeout_ms));
        }
        res.url = req.url;
        res.status = 0;
        res.statusText = `timeout: no complete answer within ${timeout_ms} ms`;
        cd.ontimeout?.({ loaded, total, lengthComputable: total > 0 });
        cd.onloadend?.();
      }, timeout_ms);
      const url = new URL(req.url);
      const range_header = header(req.headers, "Range");
      const range = parseRangeHeader(range_header);
      if (range_header !== undefined && !range) {
        // One range, `bytes=first-last` or `bytes=first-`, is what the protocol carries; never the whole file instead.
        queueMicrotask(() => {
          if (finished) return;
          finish();
          res.url = req.url;
          res.status = 416;
          res.statusText = `unsupported Range header ${JSON.stringify(range_header)}: Nuwa's loader asks for one range, bytes=first-last or bytes=first-`;
          cd.onloadend?.();
        });
        return true;
      }
      const cmcd = cmcdOf(req.url, req.headers);
      const transfer_key = TimedOutTransfers.key(url.pathname, range);
      // One progress event per chunk read: onData runs once per DATA frame, synchronously for
      // all frames of one reader.read() (session.ts), so a microtask queued at the burst's first
      // frame runs after its last one and before the next chunk is parsed.
      let last_event_ms = performance.now();
      let emitted_bytes = 0;
      let pending = false;
      const emitProgress = () => {
        pending = false;
        if (finished || loaded === emitted_bytes) return;
        const t_ms = performance.now();
        emitted_bytes = loaded;
        cd.onprogress?.({ loaded, total, lengthComputable: true, time: t_ms - last_event_ms });
        last_event_ms = t_ms;
      };
      const dr = (cd as { request?: { mediaType?: unknown; type?: unknown; bandwidth?: unknown; duration?: unknown; startTime?: unknown; representation?: { id?: unknown } | null } }).request;
      const media_type = typeof dr?.mediaType === "string" ? dr.mediaType : null;
      const rep_id = dr?.representation?.id !== undefined && dr.representation.id !== null ? String(dr.representation.id) : null;
      const segment_s = typeof dr?.duration === "number" ? dr.duration : Number.NaN;
      const start_s = typeof dr?.startTime === "number" ? dr.startTime : Number.NaN;
      // A whole media segment may be one fetched ahead (module doc); any other request is fetched now.
      const whole_segment = dr?.type === "MediaSegment" && media_type !== null && !range;
      o.onRequest?.({ type: typeof dr?.type === "string" ? dr.type : null, media_type });
      const taken = whole_segment ? takeAhead(media_type, url.pathname) : null;
      // A whole init segment may be one prefetched (initPrefetch); one whose prefetch failed is fetched afresh.
      const load_ms = performance.now();
      let prefetched = dr?.type === "InitializationSegment" && !range ? (inits.get(url.pathname) ?? null) : null;
      if (prefetched?.failed) {
        inits.delete(url.pathname);
        prefetched = null;
      }
      shared = prefetched !== null;
      // a retry of a request that timed out reads the transfer it left (module doc)
      const resumed = taken || prefetched ? null : timed_out.take(transfer_key);
      const t = taken ?? prefetched ?? resumed ?? startTransfer(session, url.pathname, range, o.max_resumes, cmcd);
      transfer = t;
      let asked_ahead = !whole_segment || !o.fetchAhead;
      const onData = (n: number, tot: number) => {
        if (finished) return;
        loaded = n;
        total = tot;
        if (!asked_ahead && n > 0) {
          asked_ahead = true;
          const next = o.fetchAhead!({ path: url.pathname, media_type: media_type!, rep_id, start_s, segment_s });
          const paths = (next === null ? [] : typeof next === "string" ? [next] : next).filter((p) => p !== url.pathname);
          if (paths.length > 0) startAhead(media_type!, paths);
        }
        if (!pending) {
          pending = true;
          queueMicrotask(emitProgress);
        }
      };
      t.listeners.add(onData);
      if (t.loaded > 0) onData(t.loaded, t.total); // taken over with bytes already in
      t.result.then(
        (r) => {
          t.listeners.delete(onData);
          if (finished) return;
          if ((o.onManifest || o.initPrefetch) && dr?.type === "MPD" && r.head.status < 300) {
            const text = new TextDecoder().decode(r.body);
            const err = o.onManifest ? o.onManifest(text, req.url) : null;
            if (err) {
              finish();
              res.url = req.url;
              res.status = 0;
              res.statusText = err.message;
              cd.onloadend?.();
              return;
            }
            if (o.initPrefetch) prefetchInits(o.initPrefetch(text, req.url));
          }
          finish();
          res.url = req.url;
          res.status = r.head.status;
          res.statusText = r.head.status < 300 ? "OK" : "error";
          res.headers = { "content-type": r.head.content_type ?? "application/octet-stream", "content-length": String(r.body.length) };
          res.data = req.responseType === "arraybuffer" ? (r.body.slice().buffer as ArrayBuffer) : new TextDecoder().decode(r.body);
          if (pending || emitted_bytes !== r.body.length) {
            // The last chunk's event has not run yet (or the body was empty): the end is one more event.
            const t_ms = performance.now();
            cd.onprogress?.({ loaded: r.body.length, total: r.body.length, lengthComputable: true, time: t_ms - last_event_ms });
            emitted_bytes = r.body.length;
          }
          // a segment fetched ahead or an init segment prefetched may have been in for a while (from this request: 0)
          const done_ms = Math.max(Number.isFinite(t.done_ms) ? t.done_ms : performance.now(), shared ? load_ms : 0);
          const prev_ms = taken ? last_complete_ms.get(media_type!) : undefined;
          const from_ms = shared ? Math.max(t.started_ms, load_ms) : prev_ms !== undefined && prev_ms < done_ms ? Math.max(t.started_ms, prev_ms) : t.started_ms;
          if (whole_segment && r.head.status < 300) last_complete_ms.set(media_type!, done_ms);
          if (o.onComplete && r.head.status < 300) {
            o.onComplete({
              bytes: r.body.length,
              duration_ms: Math.max(1e-3, done_ms - from_ms),
              transfer_ms: Number.isFinite(t.first_byte_ms) ? Math.max(1e-3, done_ms - Math.max(t.first_byte_ms, from_ms)) : Number.NaN,
              media_type,
              type: typeof dr?.type === "string" ? dr.type : null,
              bitrate_kbps: typeof dr?.bandwidth === "number" ? dr.bandwidth / 1000 : Number.NaN,
              segment_s,
              start_s,
              rep_id,
              ...(taken ? { fetched_ahead: true } : {}),
            });
          }
          cd.onloadend?.();
        },
        (e: unknown) => {
          t.listeners.delete(onData);
          if (finished) return;
          finish();
          const f = failureStatus(e);
          res.url = req.url;
          res.status = f.status;
          res.statusText = f.statusText;
          cd.onloadend?.();
        },
      );
      return true;
    }
    /** Abort one request (dash.js's progress timeout passes it) or, without one, all. */
    function abort(req?: CommonMediaRequest): void {
      if (req && inflight.has(req)) {
        inflight.get(req)?.();
        return;
      }
      for (const a of [...inflight.values()]) a();
      for (const m of [...ahead.keys()]) dropAhead(m);
      timed_out.clear(new DOMException("loader reset", "AbortError")); // no retry will come
    }
    return { load, abort, reset: () => abort(), resetInitialSettings: () => abort(), getXhr: () => null };
  };
}
