// @vitest-environment happy-dom
/**
 * CMCD through the hls.js adapter (issue 19 item 7), against the real hls.js 1.7: with hls.js's
 * `cmcd` config its CMCDController wraps our loader class (pLoader/fLoader) and writes the CMCD
 * payload into the load context (`url` query parameter, or `headers` with `useHeaders`); the
 * loader must send that payload as the request's `cmcd` field (the field dash.js's loader uses,
 * which the server logs) and ask for the path without the query. The session is a stand-in
 * serving a two-rendition HLS VOD; nothing plays (happy-dom has no MSE: MediaSource is a stub
 * whose isTypeSupported says yes, so hls.js keeps the renditions).
 */
import Hls from "hls.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RequestSession } from "../dash/loader.js";
import type { NuwaRequest, NuwaResponse, RequestOptions } from "../session.js";
import { type HlsLoaderCallbacks, type HlsLoaderConfiguration, type HlsLoaderContext, makeNuwaHlsLoader } from "./loader.js";

const FILES: Record<string, string> = {
  "/master.m3u8": '#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-STREAM-INF:BANDWIDTH=700000,CODECS="avc1.64001f",RESOLUTION=640x360\nv0.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1500000,CODECS="avc1.64001f",RESOLUTION=1280x720\nv1.m3u8\n',
  "/v0.m3u8": '#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI="init-0.mp4"\n#EXTINF:2.0,\nseg-0-1.m4s\n#EXTINF:2.0,\nseg-0-2.m4s\n#EXT-X-ENDLIST\n',
};

/** A session answering FILES (anything else: 64 bytes), recording the requests. */
function fakeSession(): { s: RequestSession; calls: NuwaRequest[] } {
  const calls: NuwaRequest[] = [];
  const s: RequestSession = {
    request: async (req: NuwaRequest, o: RequestOptions = {}): Promise<NuwaResponse> => {
      calls.push(req);
      const body = req.op === "get" && FILES[req.path] !== undefined ? new TextEncoder().encode(FILES[req.path]) : new Uint8Array(64);
      const head = { status: 200, total_bytes: body.length };
      o.onData?.(body, body.length, head);
      return { head, body, first_byte_us: 0, duration_us: 0 };
    },
  };
  return { s, calls };
}

type Seen = { url: string; headers: Record<string, string> };

/**
 * hls.js with our loader (wrapped to record the context hls.js hands it) and `cmcd` config;
 * loads the multivariant and the first level playlist, then the first fragment through
 * hls.js's own fragment loader class (a real Fragment of the parsed level).
 */
async function run(cmcd: Record<string, unknown> | undefined): Promise<{ calls: NuwaRequest[]; seen: Seen[] }> {
  const { s, calls } = fakeSession();
  const seen: Seen[] = [];
  const Base = makeNuwaHlsLoader(async () => s);
  class Spy extends Base {
    override load(context: HlsLoaderContext, config: HlsLoaderConfiguration, callbacks: HlsLoaderCallbacks): void {
      seen.push({ url: context.url, headers: { ...(context.headers ?? {}) } });
      super.load(context, config, callbacks);
    }
  }
  const hls = new Hls({ loader: Spy as never, ...(cmcd ? { cmcd } : {}) });
  try {
    const loaded = new Promise((r) => hls.once(Hls.Events.LEVEL_LOADED, r));
    hls.loadSource("https://127.0.0.1:4433/master.m3u8");
    hls.startLoad();
    await loaded;
    const frag = hls.levels[0]?.details?.fragments[0];
    if (!frag) throw new Error("hls.js parsed no fragment");
    const FLoader = (hls.config.fLoader ?? hls.config.loader) as unknown as new (c: unknown) => { load(c: unknown, cfg: unknown, cb: unknown): void };
    await new Promise((done) => new FLoader(hls.config).load({ url: frag.url, frag, responseType: "arraybuffer" }, { loadPolicy: {} }, { onSuccess: done, onError: done, onTimeout: done }));
    return { calls, seen };
  } finally {
    hls.destroy();
  }
}

/** The CMCD payload's keys → raw values (CTA-5004 §3.3: comma-separated, a bare key is true). */
function keys(payload: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (payload ?? "").split(",")) if (kv) out[kv.split("=")[0] as string] = kv.includes("=") ? kv.slice(kv.indexOf("=") + 1) : "true";
  return out;
}

const gets = (calls: NuwaRequest[]) => calls.filter((c): c is Extract<NuwaRequest, { op: "get" }> => c.op === "get");

beforeEach(() => {
  (globalThis as { MediaSource?: unknown }).MediaSource = { isTypeSupported: () => true };
});
afterEach(() => {
  delete (globalThis as { MediaSource?: unknown }).MediaSource;
});

describe("CMCD through the hls.js adapter (real hls.js CMCDController)", () => {
  it("query mode (hls.js's default): the CMCD= parameter hls.js put on the URL is the request's cmcd; the path drops it", async () => {
    const { calls, seen } = await run({ sessionId: "s1", contentId: "c1" });
    const g = gets(calls);
    expect(g.map((c) => c.path)).toEqual(["/master.m3u8", "/v0.m3u8", "/seg-0-1.m4s"]);
    expect(seen).toHaveLength(3);
    for (const [i, c] of g.entries()) {
      const sent = new URL(seen[i]?.url as string).searchParams.get("CMCD");
      expect(sent, `hls.js put CMCD on ${c.path}`).toBeTruthy();
      expect(c.cmcd).toBe(sent);
    }
    expect(keys(g[0]?.cmcd)).toMatchObject({ ot: "m", sid: '"s1"', cid: '"c1"', sf: "h" });
    // The fragment: hls.js's keys for a video segment of the 700 kbit/s rendition, 2 s long.
    expect(keys(g[2]?.cmcd)).toMatchObject({ br: "700", d: "2000", ot: "v", sid: '"s1"' });
    expect(keys(g[2]?.cmcd).mtp).toMatch(/^\d+$/);
  });

  it("header mode (useHeaders): the CMCD-* headers hls.js set are joined into cmcd", async () => {
    const { calls, seen } = await run({ sessionId: "s1", useHeaders: true });
    const g = gets(calls);
    expect(g).toHaveLength(3);
    for (const [i, c] of g.entries()) {
      const h = seen[i]?.headers ?? {};
      expect(new URL(seen[i]?.url as string).search).toBe("");
      const parts = ["CMCD-Object", "CMCD-Request", "CMCD-Session", "CMCD-Status"].map((k) => h[k]).filter(Boolean);
      expect(parts.length, `hls.js set CMCD headers on ${c.path}`).toBeGreaterThan(0);
      expect(c.cmcd).toBe(parts.join(","));
    }
    expect(keys(g[2]?.cmcd)).toMatchObject({ br: "700", ot: "v", sid: '"s1"' });
  });

  it("without hls.js's cmcd config no request carries cmcd", async () => {
    const { calls } = await run(undefined);
    expect(gets(calls)).toHaveLength(3);
    for (const c of gets(calls)) expect(c.cmcd).toBeUndefined();
  });
});
