"""The player page over HTTPS, from the same host and port number as the WebTransport server.

A deployment (``./nuwa serve``, README "Deploy") serves its page and its media from one
place: the page (HTML + the player bundle the site built with ``@nuwa/player``) over
HTTPS on TCP, the media over WebTransport (QUIC, UDP) on the same port number with the
same certificate. Standard library only (``http.server`` + ``ssl``, one thread per
request), so the product keeps its three dependencies.

``GET /nuwa-config.json`` tells the page where the session is: ``{"port": UDP port of
the WebTransport server, "path": "/nuwa", "cert_sha256_hex": hash of the dev certificate
or null with a real one, "ws_port": the WebSocket fallback's TCP port or null}``.

Paths are resolved inside the site directory only: ``..``, absolute paths, NUL bytes,
symlinks leading out and anything not a regular file answer 404, never a file outside
(tested with hostile paths).
"""

from __future__ import annotations

import json
import logging
import mimetypes
import socket
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

logger = logging.getLogger("nuwa_server.site")

MIME_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
              ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
              ".json": "application/json", ".map": "application/json", ".wasm": "application/wasm",
              ".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon"}
"""Content types of what a player page is made of (others: Python's mimetypes guess)."""


def resolve_site_path(root: Path, url_path: str) -> Path | None:
    """The regular file under ``root`` that the request path names, or None.

    ``url_path``: the path part of the request target (percent-encoded; query dropped);
    ``/`` and directories map to their ``index.html``. None for anything that would leave
    ``root`` once resolved (``..``, symlinks), NUL bytes, or is not a regular file."""
    path = urllib.parse.unquote(url_path.split("?", 1)[0].split("#", 1)[0])
    if "\x00" in path or "\\" in path:
        return None
    rel = path.lstrip("/")
    base = root.resolve()
    try:
        target = (base / rel).resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return None
    if target != base and base not in target.parents:
        return None
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


class SiteHandler(BaseHTTPRequestHandler):
    """GET/HEAD of the site's files and ``/nuwa-config.json``; nothing else."""

    server: _SiteServer
    server_version = "nuwa-site"
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """Answer a file, the config, or 404."""
        self._answer(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        """As GET, without the body."""
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        if self.path.split("?", 1)[0] == "/nuwa-config.json":
            body = json.dumps(self.server.page_config).encode()
            ctype = "application/json"
        else:
            target = resolve_site_path(self.server.root, self.path)
            if target is None:
                self.send_error(404, "not found")
                return
            body = target.read_bytes()
            ctype = MIME_TYPES.get(target.suffix.lower()) or (
                mimetypes.guess_type(target.name)[0] or "application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        """Access log through logging (structured when the server's log format is JSON)."""
        logger.info("site %s " + format, self.address_string(), *args)


class _SiteServer(ThreadingHTTPServer):
    """IPv4 site server; TLS is set up per connection in its worker thread, so a client
    that stalls the handshake holds only its own thread, never the accept loop."""

    daemon_threads = True
    root: Path
    page_config: dict[str, Any]
    tls: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Wrap the accepted socket in TLS (10 s to finish the handshake), then serve it."""
        request.settimeout(10.0)
        try:
            tls_sock = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            logger.info("site %s: TLS handshake failed: %s", client_address[0], exc)
            return
        super().finish_request(tls_sock, client_address)


class _SiteServer6(_SiteServer):
    """Dual-stack (``::``) or IPv6 site server."""

    address_family = socket.AF_INET6

    def server_bind(self) -> None:
        """Bind with IPV6_V6ONLY off (dual stack, as the QUIC socket)."""
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class Site:
    """A running HTTPS site (``start_site``); ``port`` is the bound TCP port."""

    def __init__(self, server: _SiteServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.port = int(server.server_address[1])

    def close(self) -> None:
        """Stop serving and close the socket (joins the serving thread)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def start_site(root: str | Path, host: str, port: int, cert_path: str | Path,
               key_path: str | Path, page_config: dict[str, Any]) -> Site:
    """Serve ``root`` over HTTPS on TCP ``host:port`` (0: any free port) in a thread.

    ``page_config`` is served as ``/nuwa-config.json``. Raises ValueError when ``root`` is
    not a directory, OSError when the bind fails, ssl.SSLError on a bad certificate."""
    root_path = Path(root)
    if not root_path.is_dir():
        raise ValueError(f"--site {root}: not a directory")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert_path), str(key_path))
    bind_host = "::" if host in ("", "::") else host
    cls = _SiteServer6 if ":" in bind_host else _SiteServer
    server = cls((bind_host, port), SiteHandler)
    server.tls = ctx
    server.root = root_path
    server.page_config = dict(page_config)
    thread = threading.Thread(target=server.serve_forever, name="nuwa-site", daemon=True)
    thread.start()
    return Site(server, thread)
