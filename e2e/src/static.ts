/** A static file server for the test pages on 127.0.0.1 (a secure context for WebTransport). */
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".map": "application/json", ".css": "text/css", ".json": "application/json", ".wasm": "application/wasm" };

/**
 * Serve `root` on 127.0.0.1 at a free port. Paths outside `root` get 403.
 * `mounts` serve other directories under URL prefixes (e.g. `{ "/models/": dir }`), with the same check.
 */
export async function serveStatic(root: string, mounts: Record<string, string> = {}): Promise<{ server: Server; port: number }> {
  const server = createServer(async (req, res) => {
    let path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    let base = root;
    for (const [prefix, dir] of Object.entries(mounts))
      if (path.startsWith(prefix)) {
        base = dir;
        path = path.slice(prefix.length - 1);
        break;
      }
    const file = join(base, path);
    if (!file.startsWith(normalize(base))) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}
