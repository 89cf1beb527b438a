/**
 * A dash.js loader that serves every request (MPD, init, media) over the Nuwa
 * session: one bidirectional stream per request, byte ranges, aborts, and the
 * progress events dash.js's own accounting expects (NOTES.md "dash.js 5.2.1":
 * a first event with loaded < total at first byte, then the end, then
 * onloadend). Registered with `player.extend("XHRLoader", factory, false)`.
 */
import { NuwaRequestError, type NuwaSession } from "../session.js";

/** The slice of dash.js's CommonMediaRequest this loader reads. */
interface CommonMediaRequest {
  url: string;
  method?: string;
  responseType?: string;
  headers?: Record<string, string>;
  customData: {
    onloadend?: () => void;
    onprogress?: (e: { loaded: number; total: number; lengthComputable: boolean; time?: number }) => void;
    onabort?: () => void;
    abort?: () => void;
    request?: { type?: string };
  };
}

/** The slice of dash.js's CommonMediaResponse this loader writes. */
interface CommonMediaResponse {
  url?: string;
  status?: number;
  statusText?: string;
  headers?: Record<string, string>;
  data?: ArrayBuffer | string;
}

/** Parse `bytes=first-last` into an inclusive range, or undefined. */
export function parseRangeHeader(value: string | undefined): [number, number] | undefined {
  if (!value) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(value.trim());
  if (!m) return undefined;
  const first = Number(m[1]);
  const last = Number(m[2]);
  return last >= first ? [first, last] : undefined;
}

/** Progress events are emitted at first byte, then at most every `interval_bytes`. */
const PROGRESS_INTERVAL_BYTES = 64 * 1024;

/**
 * Make the loader function dash.js instantiates (FactoryMaker calls it with
 * `this = { context }`).
 * @param session the Nuwa session every request goes over
 */
export function makeNuwaLoader(session: () => Promise<NuwaSession>): () => object {
  return function NuwaLoader() {
    const inflight = new Set<AbortController>();
    function load(req: CommonMediaRequest, res: CommonMediaResponse): boolean {
      const cd = req.customData;
      const ac = new AbortController();
      inflight.add(ac);
      cd.abort = () => {
        if (ac.signal.aborted) return;
        ac.abort();
        cd.onabort?.();
      };
      const url = new URL(req.url);
      const range = parseRangeHeader(req.headers?.Range ?? req.headers?.range);
      let last_progress = 0;
      session()
        .then((s) => s.request(range ? { op: "get", path: url.pathname, range } : { op: "get", path: url.pathname }, {
          signal: ac.signal,
          onData: (_payload, loaded, head) => {
            if (loaded < head.total_bytes && (last_progress === 0 || loaded - last_progress >= PROGRESS_INTERVAL_BYTES)) {
              last_progress = loaded;
              cd.onprogress?.({ loaded, total: head.total_bytes, lengthComputable: true });
            }
          },
        }))
        .then(
          (r) => {
            if (ac.signal.aborted) return;
            const body = r.body ?? new Uint8Array(0);
            res.url = req.url;
            res.status = r.head.status;
            res.statusText = r.head.status < 300 ? "OK" : "error";
            res.headers = { "content-type": r.head.content_type ?? "application/octet-stream", "content-length": String(body.length) };
            res.data = req.responseType === "arraybuffer" ? (body.slice().buffer as ArrayBuffer) : new TextDecoder().decode(body);
            cd.onprogress?.({ loaded: body.length, total: body.length, lengthComputable: true });
            cd.onloadend?.();
          },
          (e: unknown) => {
            if (ac.signal.aborted) return;
            res.url = req.url;
            res.status = e instanceof NuwaRequestError && e.status > 0 ? e.status : 0;
            res.statusText = String(e);
            cd.onloadend?.();
          },
        )
        .finally(() => inflight.delete(ac));
      return true;
    }
    function abortAll(): void {
      for (const ac of inflight) ac.abort();
      inflight.clear();
    }
    return { load, abort: abortAll, reset: abortAll, resetInitialSettings: abortAll, getXhr: () => null };
  };
}
