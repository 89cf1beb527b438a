// @vitest-environment happy-dom
/**
 * CMCD through the shaka adapter (issue 19 item 7), against the real shaka-player 5: a Player
 * with shaka's `cmcd` config and a (happy-dom) video element, whose NetworkingEngine runs
 * shaka's CmcdManager on every request before our scheme plugin (player.js `onRequest_` →
 * `applyRequestData`), which writes the payload on the URI (`CMCD=`) or in the request's
 * `CMCD-*` headers (`useHeaders`). The scheme must send that payload as the request's `cmcd`
 * field (the field dash.js's loader uses, which the server logs). The session is a stand-in;
 * nothing plays.
 */
import * as shakaModule from "shaka-player";
import { afterEach, describe, expect, it } from "vitest";
import type { NuwaRequest, NuwaResponse, RequestOptions } from "../session.js";
import { makeNuwaScheme } from "./scheme.js";
import type { NuwaSchemePlugin, ShakaLike } from "./types.js";

type Shaka = typeof shakaModule.default.default;
const shaka = ((shakaModule as unknown as { default?: Shaka }).default ?? shakaModule) as Shaka;
const NE = shaka.net.NetworkingEngine;
const ORIGIN = "https://127.0.0.1:4433";

/** What the plugin was handed (URI and headers, after shaka's CmcdManager) and what it sent. */
type Seen = { uri: string; headers: Record<string, string> };

/** A segment request through a real shaka.Player's NetworkingEngine with `cmcd` config (undefined: CMCD off). */
async function run(cmcd: Record<string, unknown> | undefined, headers: Record<string, string> = {}): Promise<{ calls: NuwaRequest[]; seen: Seen[] }> {
  (shaka as unknown as { polyfill: { installAll(): void } }).polyfill.installAll(); // Map.getOrInsertComputed etc. on Node 20
  const calls: NuwaRequest[] = [];
  const seen: Seen[] = [];
  const body = new Uint8Array(3000);
  const session = {
    request: async (req: NuwaRequest, o: RequestOptions = {}): Promise<NuwaResponse> => {
      calls.push(req);
      const r = req.op === "get" ? req.range : undefined;
      const part = r ? body.slice(r[0], r[1] + 1) : body;
      const head = { status: r ? 206 : 200, total_bytes: body.length, ...(r ? { range: r } : {}) };
      o.onData?.(part, part.length, head);
      return { head, body: part, first_byte_us: 0, duration_us: 0 };
    },
  };
  const nuwa = makeNuwaScheme(shaka as unknown as ShakaLike, async () => session, { origin: ORIGIN });
  const spy: NuwaSchemePlugin = (uri, request, ...rest) => {
    seen.push({ uri, headers: { ...request.headers } });
    return nuwa(uri, request, ...rest);
  };
  NE.registerScheme("https", spy as never, NE.PluginPriority.APPLICATION, true);
  const player = new shaka.Player();
  try {
    if (cmcd) player.configure({ cmcd: { enabled: true, ...cmcd } } as never);
    await player.attach(document.createElement("video"), false);
    const engine = player.getNetworkingEngine();
    if (!engine) throw new Error("no NetworkingEngine");
    const req = NE.makeRequest([`${ORIGIN}/v/seg-3.m4s`], NE.defaultRetryParameters());
    req.headers = { ...headers };
    // The context shaka's StreamingEngine gives a media segment request: its stream and segment.
    const context = { type: NE.AdvancedRequestType.MEDIA_SEGMENT, stream: { type: "video", bandwidth: 700_000, codecs: "avc1.64001f" }, segment: { startTime: 4, endTime: 6 } };
    await engine.request(NE.RequestType.SEGMENT, req, context as never).promise;
    return { calls, seen };
  } finally {
    await player.destroy();
  }
}

/** The CMCD payload's keys → raw values (CTA-5004 §3.3: comma-separated, a bare key is true). */
function keys(payload: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (payload ?? "").split(",")) if (kv) out[kv.split("=")[0] as string] = kv.includes("=") ? kv.slice(kv.indexOf("=") + 1) : "true";
  return out;
}

afterEach(() => {
  NE.unregisterScheme("https");
});

describe("CMCD through the shaka adapter (real shaka CmcdManager)", () => {
  it("query mode (shaka's default): the CMCD= parameter shaka put on the URI is the request's cmcd; the path drops it", async () => {
    const { calls, seen } = await run({ sessionId: "s1", contentId: "c1" });
    expect(seen).toHaveLength(1);
    const sent = new URL(seen[0]?.uri as string).searchParams.get("CMCD");
    expect(sent, "shaka put CMCD on the URI").toBeTruthy();
    expect(calls).toEqual([{ op: "get", path: "/v/seg-3.m4s", cmcd: sent }]);
    // shaka's keys for a 2 s video segment of the 700 kbit/s stream.
    expect(keys(calls[0]?.op === "get" ? calls[0].cmcd : undefined)).toMatchObject({ br: "700", d: "2000", ot: "v", sid: '"s1"', cid: '"c1"' });
  });

  it("header mode (useHeaders), on a byte-range request: the CMCD-* headers are joined into cmcd and the range still travels", async () => {
    const { calls, seen } = await run({ sessionId: "s1", useHeaders: true }, { Range: "bytes=100-1099" });
    const h = seen[0]?.headers ?? {};
    expect(new URL(seen[0]?.uri as string).search).toBe("");
    const parts = ["CMCD-Object", "CMCD-Request", "CMCD-Session", "CMCD-Status"].map((k) => h[k]).filter(Boolean);
    expect(parts.length, "shaka set CMCD headers").toBeGreaterThan(0);
    expect(calls).toEqual([{ op: "get", path: "/v/seg-3.m4s", range: [100, 1099], cmcd: parts.join(",") }]);
    expect(keys(parts.join(","))).toMatchObject({ br: "700", ot: "v", sid: '"s1"' });
  });

  it("without shaka's cmcd config the request carries no cmcd", async () => {
    const { calls } = await run(undefined);
    expect(calls).toEqual([{ op: "get", path: "/v/seg-3.m4s" }]);
  });
});
