"""A deployed server (issue 19 item 1): the HTTPS page beside WebTransport, hostile page
paths, structured logs, and a SIGTERM that ends every session with a reason."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aioquic.asyncio.client import connect
from aioquic.buffer import Buffer
from aioquic.h3.events import DataReceived, H3Event
from wt_harness import WtClient, client_configuration, run

from nuwa_server.certs import ensure_dev_cert
from nuwa_server.config import SHUTDOWN_CLOSE_CODE
from nuwa_server.logformat import JsonLogFormatter, configure_logging
from nuwa_server.site import resolve_site_path, start_site

CLOSE_WEBTRANSPORT_SESSION_CAPSULE = 0x2843


def make_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "dist").mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><title>player</title>")
    (site / "dist" / "player.js").write_text("console.log('nuwa');")
    (tmp_path / "secret.txt").write_text("outside the site")
    (site / "link-out").symlink_to(tmp_path / "secret.txt")
    return site


def test_site_paths_stay_inside_the_site(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    assert resolve_site_path(site, "/") == (site / "index.html").resolve()
    js = (site / "dist" / "player.js").resolve()
    assert resolve_site_path(site, "/dist/player.js?v=3#x") == js
    assert resolve_site_path(site, "/dist/") is None  # a directory without index.html
    for hostile in ["/../secret.txt", "/%2e%2e/secret.txt", "/dist/../../secret.txt",
                    "/link-out", "/%00index.html", "/..%5csecret.txt", "//etc/passwd",
                    "/does-not-exist.js"]:
        assert resolve_site_path(site, hostile) is None, hostile


def _get(port: int, path: str, cafile: Path,
         method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    ctx = ssl.create_default_context(cafile=str(cafile))
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=5)
    try:
        conn.putrequest(method, path, skip_host=False, skip_accept_encoding=True)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_site_serves_the_page_and_its_config_over_verified_tls(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    cert = ensure_dev_cert(tmp_path / "state")
    s = start_site(site, "127.0.0.1", 0, cert.cert_path, cert.key_path,
                   {"port": 4433, "path": "/nuwa", "cert_sha256_hex": None, "ws_port": None})
    try:
        # the hostname is verified (SAN localhost)
        status, headers, body = _get(s.port, "/", cert.cert_path)
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert b"player" in body
        status, headers, body = _get(s.port, "/dist/player.js", cert.cert_path)
        assert status == 200 and headers["content-type"].startswith("text/javascript")
        status, _, body = _get(s.port, "/nuwa-config.json", cert.cert_path)
        assert status == 200 and json.loads(body) == {
            "port": 4433, "path": "/nuwa", "cert_sha256_hex": None, "ws_port": None}
        for hostile in ["/../secret.txt", "/%2e%2e/secret.txt", "/link-out"]:
            status, _, body = _get(s.port, hostile, cert.cert_path)
            assert status == 404 and b"outside the site" not in body, hostile
        status, headers, body = _get(s.port, "/", cert.cert_path, method="HEAD")
        assert status == 200 and body == b"" and int(headers["content-length"]) > 0
        # a client that never finishes its TLS handshake holds only its own thread
        import socket

        stalled = socket.create_connection(("127.0.0.1", s.port))
        try:
            assert _get(s.port, "/", cert.cert_path)[0] == 200
        finally:
            stalled.close()
    finally:
        s.close()
    with pytest.raises(ValueError, match="not a directory"):
        start_site(tmp_path / "nope", "127.0.0.1", 0, cert.cert_path, cert.key_path, {})


def test_json_log_lines() -> None:
    rec = logging.LogRecord("nuwa_server.x", logging.WARNING, __file__, 1, "a %s \"quoted\"\nline",
                            ("b",), None)
    line = JsonLogFormatter().format(rec)
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["level"] == "WARNING" and obj["logger"] == "nuwa_server.x"
    assert obj["msg"] == "a b \"quoted\"\nline" and obj["ts"].endswith("+00:00")
    with pytest.raises(ValueError, match="text or json"):
        configure_logging("INFO", "xml")


class CapsuleClient(WtClient):
    """WtClient that keeps what arrives on the session's CONNECT stream (capsules)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connect_stream_data = b""
        self.connect_stream_ended = asyncio.Event()

    def _h3_event(self, event: H3Event) -> None:
        if isinstance(event, DataReceived) and event.stream_id == self.session_id:
            self.connect_stream_data += event.data
            if event.stream_ended:
                self.connect_stream_ended.set()
            return
        super()._h3_event(event)


def parse_close_capsule(data: bytes) -> tuple[int, str]:
    buf = Buffer(data=data)
    while not buf.eof():
        ctype, length = buf.pull_uint_var(), buf.pull_uint_var()
        payload = buf.pull_bytes(length)
        if ctype == CLOSE_WEBTRANSPORT_SESSION_CAPSULE:
            return int.from_bytes(payload[:4], "big"), payload[4:].decode()
    raise AssertionError(f"no CLOSE_WEBTRANSPORT_SESSION capsule in {data!r}")


def test_cli_site_json_logs_and_sigterm_ends_sessions_with_a_reason(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    content = tmp_path / "content"
    content.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nuwa_server.server", "--host", "127.0.0.1", "--port", "0",
         "--content-root", str(content), "--state-dir", str(tmp_path / "state"),
         "--log-dir", str(tmp_path / "logs"), "--site", str(site), "--log-format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        # the page on TCP, the session on UDP, one port number
        assert ready["site_port"] == ready["port"]
        cert = ensure_dev_cert(tmp_path / "state")
        status, _, body = _get(ready["site_port"], "/nuwa-config.json", cert.cert_path)
        assert status == 200 and json.loads(body)["cert_sha256_hex"] == ready["cert_sha256_hex"]

        async def session_then_sigterm() -> tuple[int, str]:
            async with connect("127.0.0.1", ready["port"], configuration=client_configuration(),
                               create_protocol=CapsuleClient) as client:
                assert isinstance(client, CapsuleClient)
                assert await client.open_session() == 200
                client.request({"v": 1, "op": "bulk", "size_bytes": 200_000_000}, fin=True)
                await asyncio.sleep(0.3)
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(client.connect_stream_ended.wait(), 5)
                return parse_close_capsule(client.connect_stream_data)

        code, reason = run(session_then_sigterm())
        assert code == SHUTDOWN_CLOSE_CODE and reason == "server shutting down"
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    lines = [json.loads(x) for x in err.splitlines() if x.strip()]  # every stderr line is JSON
    assert any(x["msg"].startswith("session") and "server_shutdown" in x["msg"] for x in lines)
    summary = json.loads(next((tmp_path / "logs").glob("*/summary.json")).read_text())
    assert summary["close_reason"] == "server_shutdown"
