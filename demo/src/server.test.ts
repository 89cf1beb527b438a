/**
 * The demo's API with a content choice (issue 19 item 6), over plain HTTP without Vite, with a
 * stand-in for server + emulator that records what each link start was asked to serve: the
 * first link serves `--content DIR`; `POST /api/content` restarts the link on the chosen
 * content's root (same trace) and `/api/config` then names its MPD and HLS playlist; a trace
 * change keeps the content; unknown contents are refused.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Link, LinkSetup } from "../../e2e/src/procs.js";
import { type DemoConfig, type DemoCore, startDemoCore } from "./server.js";

const root = mkdtempSync(join(tmpdir(), "nuwa-demo-api-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
function dir(name: string, files: string[]): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  for (const f of files) writeFileSync(join(d, f), "");
  return d;
}
const LADDER = dir("ladder", ["manifest.mpd", "master.m3u8"]);
const OWN = dir("vod", ["stream.mpd"]);

/** A link stand-in: records its setup; stop() is recorded too. */
function fakeLinks(): { starts: LinkSetup[]; stops: number; start: (l: LinkSetup) => Promise<Link> } {
  const rec = { starts: [] as LinkSetup[], stops: 0, start: async (l: LinkSetup): Promise<Link> => l as never };
  rec.start = async (l) => {
    rec.starts.push(l);
    const n = rec.starts.length;
    const started = (ready: Record<string, unknown>) => ({ proc: null as never, ready, stop: async () => 0 });
    return {
      server: started({ cert_sha256_hex: `cert${n}` }),
      emulator: started({ listen_port: 4000 + n, base_timestamp_ms: Number(process.hrtime.bigint()) / 1e6 }),
      competitor: null,
      stop: async () => {
        rec.stops++;
      },
    };
  };
  return rec;
}

let core: DemoCore | null = null;
let http: Server | null = null;
afterEach(async () => {
  await new Promise<void>((r) => (http ? http.close(() => r()) : r()));
  await core?.stop();
  core = http = null;
});

async function serve(c: DemoCore): Promise<(path: string, body?: unknown) => Promise<{ status: number; json: DemoConfig & { error?: string } }>> {
  http = createServer((req, res) => c.middleware(req, res, () => res.writeHead(404).end()));
  await new Promise<void>((r) => http?.listen(0, "127.0.0.1", () => r()));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return async (path, body) => {
    const r = await fetch(`${base}${path}`, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as DemoConfig & { error?: string } };
  };
}

describe("demo API: content choice", () => {
  it("serves --content DIR first, switches to the ladder and back on POST /api/content, keeps it across a trace change", async () => {
    const links = fakeLinks();
    core = await startDemoCore({ ladder_dir: LADDER, content: OWN, player: "shaka", start_link: links.start, out_dir: join(root, "out") });
    const api = await serve(core);

    const a = await api("/api/config");
    expect(a.status).toBe(200);
    expect(links.starts.map((l) => l.content_root)).toEqual([OWN]);
    expect(a.json.content).toEqual({ id: "own", label: "vod (--content)", mpd: "/stream.mpd", hls: null });
    expect(a.json.mpd).toBe("/stream.mpd");
    expect(a.json.player).toBe("shaka");
    expect(a.json.contents.map((c) => c.id)).toEqual(["ladder", "own"]);
    expect(JSON.stringify(a.json)).not.toContain(root); // directories stay on the server side
    expect(a.json.session_url).toBe("https://127.0.0.1:4001/nuwa");

    const b = await api("/api/content", { id: "ladder" });
    expect(b.status).toBe(200);
    expect(links.starts.map((l) => l.content_root)).toEqual([OWN, LADDER]);
    expect(links.stops).toBe(1); // the old link stopped first
    expect(b.json.content).toMatchObject({ id: "ladder", mpd: "/manifest.mpd", hls: "/master.m3u8" });
    expect(b.json.epoch).toBe(a.json.epoch + 1);
    expect(b.json.cert_sha256_hex).toBe("cert2");
    expect(links.starts[1]?.trace).toBe(links.starts[0]?.trace); // same trace

    const t = await api("/api/trace", { path: "traces/3G/norway-hsdpa-bus-1.mahi" });
    expect(t.status, JSON.stringify(t.json)).toBe(200);
    expect(links.starts[2]?.content_root).toBe(LADDER); // a trace change keeps the content
    expect(links.starts[2]?.trace).toMatch(/norway-hsdpa-bus-1\.mahi$/);

    const back = await api("/api/content", { id: "own" });
    expect(back.json.content.id).toBe("own");
    expect(links.starts[3]?.content_root).toBe(OWN);
    expect(links.starts[3]?.trace).toMatch(/norway-hsdpa-bus-1\.mahi$/); // and a content change keeps the trace
  });

  it("refuses an unknown content or a malformed body, and restarts nothing", async () => {
    const links = fakeLinks();
    core = await startDemoCore({ ladder_dir: LADDER, start_link: links.start, out_dir: join(root, "out2") });
    const api = await serve(core);
    const a = await api("/api/config");
    expect(a.json.contents.map((c) => c.id)).toEqual(["ladder"]); // no --content: the ladder alone
    expect(a.json.player).toBe("dashjs");
    const bad = await api("/api/content", { id: "own" });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/unknown content "own"/);
    expect((await api("/api/content", "nope")).status).toBe(400);
    expect(links.starts).toHaveLength(1);
  });
});
