"""Command line and socket setup of the Nuwa WebTransport server.

Usage::

    python -m nuwa_server.server --host :: --port 4433 --cc nuwa|cubic|reno|bbr|pbq \\
        [--ceiling cubic|bbr] --content-root DIR --state-dir DIR [--log-dir DIR] [--qlog-dir DIR] \\
        [--frame-payload-bytes 1200] [--cert PEM --key PEM] [--ws-port P] \\
        [--site DIR [--site-port P]] [--log-format text|json]

On start it prints one JSON line to stdout and flushes it::

    {"event":"ready","port":4433,"cert_sha256_hex":"…","cc":"nuwa",
     "spki_sha256_b64":"…","host":"::"}

(``cert_sha256_hex`` is null with ``--cert/--key``; ``ws_port`` is the TCP
port of the WebSocket endpoint with ``--ws-port``, else null: see
:mod:`.websocket`, plain ``ws:`` in dev mode, ``wss:`` with ``--cert/--key``;
``site_port`` is the TCP port of the HTTPS page with ``--site``, else null: see
:mod:`.site`). Everything else goes to stderr (``--log-format json``: one JSON object
per line, :mod:`.logformat`). SIGINT/SIGTERM end every session with a reason (a
CLOSE_WEBTRANSPORT_SESSION capsule, code ``SHUTDOWN_CLOSE_CODE``, "server shutting
down"; summaries written) and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import ipaddress
import json
import logging
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from aioquic.asyncio.server import QuicServer
from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicFileLogger

from .cc.switching import SWITCH_MODES
from .certs import CertInfo, ensure_dev_cert, load_cert_info
from .config import CC_MODES, CEILINGS, SENDER_CCS, SWITCHES, SessionConfig
from .connection import NuwaProtocol
from .context import ServerContext
from .logformat import configure_logging
from .oracle_sender import ORACLE_HEADROOM_MS, SentBytesTransport
from .oracle_wire import OracleMessageError, decode_report
from .site import Site, start_site
from .websocket import start_ws_server

logger = logging.getLogger("nuwa_server.server")

MAX_DATAGRAM_FRAME_BYTES = 65536
"""QUIC max_datagram_frame_size transport parameter (RFC 9221 §3), needed for
HTTP datagrams (RFC 9297) and so for grants."""

SOCKET_BUFFER_BYTES = 4 << 20
"""UDP socket buffers asked for (the kernel may cap them at net.core.*mem_max);
small ones drop loopback packets as RcvbufErrors (docs/DESIGN.md §8)."""


@dataclass
class RunningServer:
    """A listening server: its UDP ``port``, the certificate, and the shared context."""

    port: int
    cert: CertInfo
    context: ServerContext
    transport: asyncio.DatagramTransport
    quic_server: QuicServer
    oracle_port: int | None = None
    oracle_transport: asyncio.DatagramTransport | None = None
    quic_config: QuicConfiguration | None = None
    state_dir: str | None = None
    """Set in dev mode only (no --cert/--key): where the dev certificate lives."""
    ws_port: int | None = None
    """TCP port of the WebSocket endpoint (:mod:`.websocket`), when started."""
    ws_server: Any = None
    site: Site | None = None
    """The HTTPS page (:mod:`.site`), when started with ``--site``."""

    def renew_dev_cert(self, now: dt.datetime | None = None) -> bool:
        """Dev mode: replace the certificate if it is within 2 days of expiry (certs.py).

        New connections get the new certificate; open ones keep theirs. Returns True
        when a new one was made (its hash is then ``self.cert.cert_sha256_hex``); always
        False in production mode (the operator renews a real certificate).
        """
        if self.state_dir is None or self.quic_config is None:
            return False
        info = ensure_dev_cert(self.state_dir, now)
        if not info.generated:
            return False
        self.quic_config.load_cert_chain(info.cert_path, info.key_path)
        self.cert = info
        logger.info("dev certificate renewed: sha256 %s, valid until %s", info.cert_sha256_hex,
                    info.not_after.isoformat())
        return True

    def ready_line(self, host: str, production: bool) -> dict[str, Any]:
        """The ``ready`` JSON object printed on start."""
        return {
            "event": "ready",
            "port": self.port,
            "cert_sha256_hex": None if production else self.cert.cert_sha256_hex,
            "cc": self.context.config.cc,
            "spki_sha256_b64": self.cert.spki_sha256_b64,
            "host": host,
            "oracle_port": self.oracle_port,
            "ws_port": self.ws_port,
            "site_port": self.site.port if self.site is not None else None,
        }

    async def shutdown(self) -> None:
        """Graceful stop (SIGTERM): WebSocket sessions end with their reason first (their
        close needs the loop), then :meth:`close`."""
        if self.ws_server is not None:
            # from now on a new WebSocket is closed at once with the reason (websocket.serve)
            self.ws_server.nuwa_closing = True  # type: ignore[attr-defined]
            live: set[Any] = getattr(self.ws_server, "nuwa_connections", set())
            done: set[Any] = set()
            while pending := [c for c in list(live) if c not in done]:  # one opened meanwhile
                done.update(pending)
                await asyncio.gather(*(c.shutdown() for c in pending), return_exceptions=True)
        self.close()

    def close(self) -> None:
        """Close every session and connection, then the sockets."""
        for proto in set(self.quic_server._protocols.values()):
            if isinstance(proto, NuwaProtocol):
                proto.close_all("server_shutdown")
        self.quic_server.close()
        if self.ws_server is not None:
            self.ws_server.close()
        if self.site is not None:
            self.site.close()
        if self.oracle_transport is not None:
            self.oracle_transport.close()
        self.context.close_oracle_log()


class _OracleQuicServer(QuicServer):
    """QuicServer whose transport counts the bytes sent to each peer port (oracle mode:
    the server side of the emulator's delivered-bytes clock, :mod:`.oracle_sender`)."""

    def __init__(self, *args: Any, sent_bytes: dict[int, int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sent_bytes = sent_bytes

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Wrap the transport in a :class:`.oracle_sender.SentBytesTransport`."""
        super().connection_made(SentBytesTransport(transport, self._sent_bytes))  # type: ignore[arg-type]


class OracleProtocol(asyncio.DatagramProtocol):
    """Receives the emulator's capacity reports (``--cc oracle``, :mod:`.emulator.oracle`).

    Malformed datagrams are counted in ``dropped`` and otherwise ignored.
    """

    def __init__(self, context: ServerContext) -> None:
        self.context = context
        self.dropped = 0

    def datagram_received(self, data: bytes, addr: Any) -> None:
        """Decode one report and apply it to every session."""
        try:
            r = decode_report(data)
        except OracleMessageError as exc:
            self.dropped += 1
            logger.warning("dropped oracle datagram from %s: %s", addr, exc)
            return
        self.context.on_oracle_report(r)


def make_quic_configuration(
    config: SessionConfig, cert: CertInfo, qlog_dir: str | None = None
) -> QuicConfiguration:
    """Server QuicConfiguration: h3 ALPN, datagrams, the chosen cc, the certificate."""
    quic_config = QuicConfiguration(
        is_client=False,
        alpn_protocols=H3_ALPN,
        max_datagram_frame_size=MAX_DATAGRAM_FRAME_BYTES,
        max_datagram_size=config.max_datagram_bytes,
        congestion_control_algorithm=config.quic_congestion_control,
        idle_timeout=60.0,
    )
    quic_config.load_cert_chain(cert.cert_path, cert.key_path)
    if qlog_dir:
        Path(qlog_dir).mkdir(parents=True, exist_ok=True)
        quic_config.quic_logger = QuicFileLogger(qlog_dir)
    return quic_config


def _bind_socket(host: str, port: int) -> socket.socket:
    """UDP socket on (host, port); ``::`` is dual stack (IPV6_V6ONLY off)."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][0]
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER_BYTES)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


async def start_server(
    config: SessionConfig,
    *,
    host: str = "::",
    port: int = 0,
    state_dir: str | None = None,
    cert_path: str | None = None,
    key_path: str | None = None,
    qlog_dir: str | None = None,
    oracle_host: str = "127.0.0.1",
    oracle_port: int = 0,
    ws_port: int | None = None,
    oracle_headroom_ms: float = ORACLE_HEADROOM_MS,
) -> RunningServer:
    """Start listening; returns once the socket is bound (port 0: any free port).

    Either ``state_dir`` (dev certificate, made if needed) or both
    ``cert_path`` and ``key_path`` must be given.

    With ``config.cc == "oracle"`` it also binds a UDP socket on
    ``oracle_host:oracle_port`` (0: any free port) for the emulator's capacity
    reports; its port is ``RunningServer.oracle_port``, and its window
    keeps ``oracle_headroom_ms`` of queue (:mod:`.oracle_sender`).

    With ``ws_port`` (0: any free port) it also serves the WebSocket
    fallback (:mod:`.websocket`) on TCP ``host:ws_port``, in the same
    context (same config, content, sessions list): plain ``ws:`` in dev
    mode, TLS (``wss:``) with ``cert_path``/``key_path``.

    Raises:
        ValueError: bad config or certificate arguments. OSError: bind failed.
    """
    context = ServerContext.create(config)
    context.oracle_headroom_ms = oracle_headroom_ms
    if cert_path and key_path:
        cert = load_cert_info(cert_path, key_path)
    elif state_dir:
        cert = ensure_dev_cert(state_dir)
    else:
        raise ValueError("need --state-dir or both --cert and --key")
    quic_config = make_quic_configuration(config, cert, qlog_dir)
    sock = _bind_socket(host, port)
    loop = asyncio.get_running_loop()

    def create_protocol(quic: Any, stream_handler: Any = None) -> NuwaProtocol:
        return NuwaProtocol(quic, stream_handler, context=context)

    factory: Callable[[], QuicServer] = partial(
        QuicServer, configuration=quic_config, create_protocol=create_protocol)
    if config.cc == "oracle":
        factory = partial(_OracleQuicServer, configuration=quic_config,
                          create_protocol=create_protocol,
                          sent_bytes=context.oracle_sent_wire_bytes)
    transport, quic_server = await loop.create_datagram_endpoint(factory, sock=sock)
    bound_port = sock.getsockname()[1]
    running = RunningServer(bound_port, cert, context, transport, quic_server,
                            quic_config=quic_config,
                            state_dir=None if (cert_path and key_path) else state_dir)
    if config.cc == "oracle":
        o_transport, _ = await loop.create_datagram_endpoint(
            partial(OracleProtocol, context), local_addr=(oracle_host, oracle_port)
        )
        running.oracle_transport = o_transport
        running.oracle_port = int(o_transport.get_extra_info("sockname")[1])
    if ws_port is not None:
        ssl_context = None
        if cert_path and key_path:
            import ssl

            ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_context.load_cert_chain(cert_path, key_path)
        running.ws_server = await start_ws_server(context, host, ws_port, ssl_context)
        running.ws_port = int(running.ws_server.sockets[0].getsockname()[1])
    return running


def build_arg_parser() -> argparse.ArgumentParser:
    """The CLI (see module doc)."""
    p = argparse.ArgumentParser(prog="nuwa-server", description=__doc__.split("\n")[0])
    p.add_argument("--host", default="::", help="bind address; :: is dual stack (default ::)")
    p.add_argument("--port", type=int, default=4433, help="UDP port, 0 = any (default 4433)")
    p.add_argument("--cc", choices=CC_MODES, default="nuwa",
                   help="nuwa: grants obeyed under a loss-based ceiling (--ceiling); "
                   "cubic/reno/bbr/pbq: the server's own controller, grants ignored; "
                   "oracle: window from the emulator's capacity reports (--oracle-port)")
    p.add_argument("--ceiling", choices=CEILINGS, default="cubic",
                   help="nuwa mode: the controller under the grants, cubic (default) or bbr")
    p.add_argument("--pbq-model", default=None,
                   help="pbq mode: the agent's ONNX model (default: the checkout's models/pbq.onnx;"
                   " missing or unusable: plain BBR, logged)")
    p.add_argument("--switch", choices=SWITCHES, default="none",
                   help="--cc nuwa: live switching between receiver-driven and sender-driven "
                   "control by the rule of switch_policy.py or the DQN of switch_dqn.py "
                   "(default none)")
    p.add_argument("--switch-model", default=None,
                   help="--switch dqn: the Q-network's ONNX file (default: the checkout's "
                   "models/switch-dqn.onnx; missing or unusable: the rule, logged)")
    p.add_argument("--switch-mode", choices=SWITCH_MODES, default="unrestricted",
                   help="what a switch carries over: unrestricted (all controller state) or "
                   "limited (connection-level state only) (default unrestricted)")
    p.add_argument("--switch-rule", default=None, metavar="JSON",
                   help="--switch rule/dqn: the rule's thresholds to change from their "
                   "defaults, a JSON object of switch_policy.RuleConfig fields, e.g. "
                   "'{\"probe_fail_min_samples\": null}'")
    p.add_argument("--sender-cc", choices=SENDER_CCS, default=SENDER_CCS[0],
                   help="the controller while sender-driven (default cubic: aioquic's as "
                   "shipped; cubic_hystart: Cubic with RFC 9406's slow start)")
    p.add_argument("--oracle-port", type=int, default=0,
                   help="oracle mode: UDP port on 127.0.0.1 for capacity reports (0: any)")
    p.add_argument("--oracle-headroom-ms", type=float, default=ORACLE_HEADROOM_MS,
                   help="oracle mode: standing queue the window keeps, ms at the last base "
                   f"RTT's rate (default {ORACLE_HEADROOM_MS:g})")
    p.add_argument("--content-root", help="directory served by get requests")
    p.add_argument("--state-dir", help="where the dev certificate lives")
    p.add_argument("--cert", help="PEM certificate (production; no hash printed)")
    p.add_argument("--key", help="PEM private key for --cert")
    p.add_argument("--log-dir", help="per-session JSONL logs")
    p.add_argument("--qlog-dir", help="one qlog per QUIC connection")
    p.add_argument("--frame-payload-bytes", type=int, default=1200,
                   help="DATA payload per frame, bytes (default 1200)")
    p.add_argument("--max-datagram-bytes", type=int, default=1350,
                   help="QUIC max UDP payload sent, bytes (default 1350: one frame per packet)")
    p.add_argument("--grant-timeout-ms", type=float, default=1000.0,
                   help="nuwa mode: fall back after this long without a grant (default 1000)")
    p.add_argument("--ws-port", type=int, default=None,
                   help="also serve the WebSocket fallback (browsers without WebTransport, "
                   "PROTOCOL.md) on this TCP port, 0 = any (default: off)")
    p.add_argument("--site", help="serve this directory (the player page) over HTTPS on TCP, "
                   "with /nuwa-config.json telling the page the session's port and hash")
    p.add_argument("--site-port", type=int, default=None,
                   help="TCP port of --site (default: the QUIC port's number; 0 = any)")
    p.add_argument("--log-level", default="INFO", help="stderr log level (default INFO)")
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="stderr log lines: text, or one JSON object per line (default text)")
    return p


DEV_CERT_CHECK_INTERVAL_S = 3600.0
"""Dev mode: how often a running server checks its certificate's expiry."""


async def _renew_dev_cert_forever(server: RunningServer) -> None:
    """Dev mode: every hour renew the certificate when due and print
    ``{"event": "cert_renewed", "cert_sha256_hex": ..., ...}`` on stdout (a harness
    that pins the hash must pick the new one up for new sessions)."""
    while server.state_dir is not None:
        await asyncio.sleep(DEV_CERT_CHECK_INTERVAL_S)
        if server.renew_dev_cert():
            sys.stdout.write(json.dumps({"event": "cert_renewed",
                                         "cert_sha256_hex": server.cert.cert_sha256_hex,
                                         "spki_sha256_b64": server.cert.spki_sha256_b64,
                                         "not_after": server.cert.not_after.isoformat()}) + "\n")
            sys.stdout.flush()


async def _run(args: argparse.Namespace) -> int:
    config = SessionConfig(
        cc=args.cc,
        ceiling=args.ceiling,
        content_root=args.content_root,
        log_dir=args.log_dir,
        frame_payload_bytes=args.frame_payload_bytes,
        max_datagram_bytes=args.max_datagram_bytes,
        grant_timeout_us=int(args.grant_timeout_ms * 1000),
        pbq_model=args.pbq_model,
        switch=args.switch,
        switch_model=args.switch_model,
        switch_mode=args.switch_mode,
        switch_rule=args.switch_rule,
        sender_cc=args.sender_cc,
    )
    if bool(args.cert) != bool(args.key):
        raise ValueError("--cert and --key go together")
    if args.log_dir:
        Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    server = await start_server(
        config,
        host=args.host,
        port=args.port,
        state_dir=args.state_dir,
        cert_path=args.cert,
        key_path=args.key,
        qlog_dir=args.qlog_dir,
        oracle_port=args.oracle_port,
        ws_port=args.ws_port,
        oracle_headroom_ms=args.oracle_headroom_ms,
    )
    if args.site:
        server.site = start_site(
            args.site, args.host, server.port if args.site_port is None else args.site_port,
            server.cert.cert_path, server.cert.key_path,
            {"port": server.port, "path": "/nuwa", "ws_port": server.ws_port,
             "cert_sha256_hex": None if args.cert else server.cert.cert_sha256_hex})
    effective = {"event": "config", **asdict(config), "host": args.host, "port": server.port,
                 "quic_congestion_control": config.quic_congestion_control,
                 "qlog_dir": args.qlog_dir, "cert_path": str(server.cert.cert_path),
                 "cert_not_after": server.cert.not_after.isoformat(),
                 "cert_generated": server.cert.generated,
                 "site": args.site, "site_port": server.site.port if server.site else None}
    logger.info("%s", json.dumps(effective))
    if not config.frame_fits_one_packet:
        logger.warning("a %d-byte frame does not fit one %d-byte QUIC packet: frames will "
                       "straddle packets", config.frame_payload_bytes + 20,
                       config.max_datagram_bytes)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(json.dumps(server.ready_line(args.host, bool(args.cert))) + "\n")
    sys.stdout.flush()
    renewer = asyncio.create_task(_renew_dev_cert_forever(server))
    await stop.wait()
    renewer.cancel()
    await server.shutdown()
    await asyncio.sleep(0.05)  # let CONNECTION_CLOSE packets leave
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m nuwa_server.server`` / ``nuwa-server``."""
    args = build_arg_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        return asyncio.run(_run(args))
    except (ValueError, OSError) as exc:
        logger.error("%s", exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
