"""Issue 7 item 9: production certificates (PEM paths, ordinary CA validation, no hash,
no dev certificate) and dev certificates (≤ 14 days, hash, renewed before expiry, also
while the server runs; issue 16 item 5: made once when servers start at once)."""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aioquic.asyncio.client import connect
from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from wt_harness import WtClient, bulk_bytes, client_configuration, run, running_server, wt_client

from nuwa_server import certs
from nuwa_server.certs import DEV_CERT_FILE, load_cert_info
from nuwa_server.config import SessionConfig
from nuwa_server.server import start_server

NOW = dt.datetime.now(dt.UTC)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca_and_leaf(tmp: Path, *, days: int = 90, start: dt.datetime = NOW,
                     rsa_leaf: bool = True) -> tuple[Path, Path, Path]:
    """A test CA and a leaf for localhost/127.0.0.1/::1 it signed (RSA 2048 by default:
    production keys need not be ECDSA, and validity may exceed 14 days).
    Returns (CA PEM, leaf chain PEM (leaf + CA), leaf key PEM)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("nuwa test CA"))
          .issuer_name(_name("nuwa test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(NOW - dt.timedelta(days=1))
          .not_valid_after(NOW + dt.timedelta(days=400))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                         critical=True)
          .sign(ca_key, hashes.SHA256()))
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = (
        rsa.generate_private_key(65537, 2048) if rsa_leaf
        else ec.generate_private_key(ec.SECP256R1()))
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                       x509.IPAddress(ipaddress.ip_address("::1"))])
    leaf = (x509.CertificateBuilder().subject_name(_name("localhost")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start - dt.timedelta(hours=1))
            .not_valid_after(start + dt.timedelta(days=days))
            .add_extension(san, critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (tmp / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp / "chain.pem").write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    (tmp / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))
    return tmp / "ca.pem", tmp / "chain.pem", tmp / "key.pem"


def verifying_client(cafile: Path | None) -> QuicConfiguration:
    """A client that validates the server the ordinary way (CA chain + host name): what a
    browser does without serverCertificateHashes or flags."""
    return QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                             max_datagram_frame_size=65536, verify_mode=ssl.CERT_REQUIRED,
                             server_name="localhost", cafile=str(cafile) if cafile else None)


def test_production_certificate_validates_without_pinning(tmp_path: Path) -> None:
    """--cert/--key with a CA-issued 90-day RSA certificate: a client validating against
    the CA (no hash pinning) opens a session and downloads; one without the CA is refused
    by its own validation; the ready line has no hash and no dev certificate is written,
    even with a state directory given."""
    ca, chain, key = make_ca_and_leaf(tmp_path)
    state = tmp_path / "state"

    async def main() -> None:
        server = await start_server(SessionConfig(cc="cubic"), host="::", port=0,
                                    state_dir=str(state), cert_path=str(chain),
                                    key_path=str(key))
        try:
            ready = server.ready_line("::", production=True)
            assert ready["cert_sha256_hex"] is None
            assert server.renew_dev_cert(NOW + dt.timedelta(days=365)) is False
            async with connect("::1", server.port, configuration=verifying_client(ca),
                               create_protocol=WtClient) as client:
                assert isinstance(client, WtClient)
                assert await client.open_session() == 200
                r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 5000}))
                assert r.body == bulk_bytes(5000)
                peer = client._quic.tls._peer_certificate
                assert peer is not None and peer.subject == _name("localhost")
            with pytest.raises(ConnectionError):
                async with connect("::1", server.port, configuration=verifying_client(None),
                                   create_protocol=WtClient, wait_connected=True):
                    pass
        finally:
            server.close()

    run(main())
    assert not (state / DEV_CERT_FILE).exists()


def test_production_certificate_errors_are_clear(tmp_path: Path) -> None:
    """A key of another certificate, an expired or not-yet-valid certificate, an
    encrypted or garbage key: ValueError naming the problem; the CLI exits 2 with it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, chain, key = make_ca_and_leaf(tmp_path / "a")
    _, _, other_key = make_ca_and_leaf(tmp_path / "b", rsa_leaf=False)
    assert load_cert_info(chain, key).not_after > NOW + dt.timedelta(days=80)
    with pytest.raises(ValueError, match="does not match"):
        load_cert_info(chain, other_key)
    with pytest.raises(ValueError, match="not valid now"):
        load_cert_info(chain, key, now=NOW + dt.timedelta(days=91))
    with pytest.raises(ValueError, match="not valid now"):
        load_cert_info(chain, key, now=NOW - dt.timedelta(days=2))
    (tmp_path / "garbage.pem").write_text("not a key")
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        load_cert_info(chain, tmp_path / "garbage.pem")
    proc = subprocess.run(
        [sys.executable, "-m", "nuwa_server.server", "--port", "0", "--cert", str(chain),
         "--key", str(other_key)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "does not match" in proc.stderr
    assert proc.stdout == ""  # no ready line


def test_dev_certificate_is_renewed_while_the_server_runs(tmp_path: Path) -> None:
    """Dev mode: 8 days in, the running server still has 2 days: kept; 8 days and 1 hour
    in, it makes a new ≤ 14-day ECDSA certificate; new connections get it (its SHA-256 is
    the new hash), old and new connections both work."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server:
            first = server.cert.cert_sha256_hex
            assert server.state_dir is not None
            async with connect("::1", server.port, configuration=client_configuration(),
                               create_protocol=WtClient) as old:
                assert isinstance(old, WtClient)
                assert await old.open_session() == 200
                assert server.renew_dev_cert(NOW + dt.timedelta(days=7, hours=23)) is False
                assert server.renew_dev_cert(NOW + dt.timedelta(days=8, hours=1)) is True
                second = server.cert.cert_sha256_hex
                assert second != first
                cert = x509.load_pem_x509_certificate(server.cert.cert_path.read_bytes())
                assert cert.not_valid_after_utc - cert.not_valid_before_utc <= dt.timedelta(days=14)
                async with connect("::1", server.port, configuration=client_configuration(),
                                   create_protocol=WtClient) as new:
                    assert isinstance(new, WtClient)
                    assert await new.open_session() == 200
                    peer = new._quic.tls._peer_certificate
                    assert peer is not None
                    der = peer.public_bytes(serialization.Encoding.DER)
                    assert hashlib.sha256(der).hexdigest() == second
                    r = await new.wait(new.request({"v": 1, "op": "bulk", "size_bytes": 100}))
                    assert r.body == bulk_bytes(100)
                r = await old.wait(old.request({"v": 1, "op": "bulk", "size_bytes": 100}))
                assert r.body == bulk_bytes(100)
                peer_old = old._quic.tls._peer_certificate
                assert peer_old is not None
                assert hashlib.sha256(peer_old.public_bytes(
                    serialization.Encoding.DER)).hexdigest() == first

    run(main())


def test_dev_cert_shape_and_renewal(tmp_path: Path) -> None:
    """ECDSA P-256, 10-day validity (≤ 14 for Chromium), SANs, hash of the DER, kept
    across starts, renewed within 2 days of expiry or when unreadable."""
    import datetime as dt
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from nuwa_server.certs import ensure_dev_cert

    state = tmp_path / "state"
    first = ensure_dev_cert(state)
    assert first.generated
    cert = x509.load_pem_x509_certificate(first.cert_path.read_bytes())
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    validity = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert validity == dt.timedelta(days=10) <= dt.timedelta(days=14)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    der = cert.public_bytes(serialization.Encoding.DER)
    assert first.cert_sha256_hex == hashlib.sha256(der).hexdigest()
    assert oct(first.key_path.stat().st_mode & 0o777) == "0o600"

    again = ensure_dev_cert(state)
    assert not again.generated and again.cert_sha256_hex == first.cert_sha256_hex
    now = dt.datetime.now(dt.UTC)
    assert not ensure_dev_cert(state, now + dt.timedelta(days=7)).generated
    renewed = ensure_dev_cert(state, now + dt.timedelta(days=8, hours=1))
    assert renewed.generated and renewed.cert_sha256_hex != first.cert_sha256_hex
    first.cert_path.write_text("garbage")
    assert ensure_dev_cert(state).generated


def test_production_cert_mode(tmp_path: Path) -> None:
    """--cert/--key: served with that certificate; the ready line carries no hash."""
    import datetime as dt

    from nuwa_server.certs import generate_dev_cert

    cert_pem, key_pem = generate_dev_cert(dt.datetime.now(dt.UTC))
    (tmp_path / "c.pem").write_bytes(cert_pem)
    (tmp_path / "k.pem").write_bytes(key_pem)

    async def main() -> None:
        server = await start_server(SessionConfig(cc="cubic"), host="127.0.0.1", port=0,
                                    cert_path=str(tmp_path / "c.pem"),
                                    key_path=str(tmp_path / "k.pem"))
        try:
            ready = server.ready_line("127.0.0.1", production=True)
            assert ready["cert_sha256_hex"] is None and ready["port"] == server.port
            async with wt_client(server, host="127.0.0.1") as client:
                assert await client.open_session() == 200
                r = await client.wait(client.request({"v": 1, "op": "get", "path": "/x"}))
                assert r.error["status"] == 404  # no content root configured
        finally:
            server.close()

    run(main())


def test_servers_starting_at_once_agree_on_one_matching_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight servers ask for the dev certificate of an empty state directory at once, each
    slow to make one (0.2 s, so their checks overlap): exactly one makes the pair, all eight
    get its hash, and the files on disk are that certificate and its own key. Without a lock,
    every one of them generated and wrote its own pair over the others'."""
    real = certs.generate_dev_cert

    def slow(now):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        return real(now)

    monkeypatch.setattr(certs, "generate_dev_cert", slow)
    state = tmp_path / "state"
    infos: list[certs.CertInfo] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        infos.append(certs.ensure_dev_cert(state))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(infos) == 8
    assert sum(i.generated for i in infos) == 1
    on_disk = x509.load_pem_x509_certificate((state / certs.DEV_CERT_FILE).read_bytes())
    assert {i.cert_sha256_hex for i in infos} == {certs.cert_hashes(on_disk)[0]}
    key = serialization.load_pem_private_key((state / certs.DEV_KEY_FILE).read_bytes(), None)
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    assert key.public_key().public_bytes(der, spki) == on_disk.public_key().public_bytes(der, spki)
    assert oct((state / certs.DEV_KEY_FILE).stat().st_mode & 0o777) == "0o600"
    assert not list(state.glob("*.tmp-*"))  # no temporary file left behind
