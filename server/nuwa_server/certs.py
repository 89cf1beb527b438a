"""Development certificate for WebTransport with ``serverCertificateHashes``.

Chromium accepts a self-signed certificate by hash only if it is ECDSA
P-256 and valid for at most 14 days (W3C WebTransport §"Custom certificate
requirements"; checked here, see docs/DESIGN.md §8 "Chromium and WebTransport"). We
make one valid for 10 days with SANs localhost, 127.0.0.1 and ::1, keep it in
the state directory, and make a new one when it is missing, unreadable, not
of that shape, or within 2 days of expiry. Its hash is SHA-256 of the DER
certificate, hex; the SPKI hash (base64) serves Chromium's
``--ignore-certificate-errors-spki-list``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import fcntl
import hashlib
import ipaddress
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

DEV_CERT_VALIDITY = dt.timedelta(days=10)
"""Lifetime of a dev certificate (Chromium's limit is 14 days)."""

CHROMIUM_MAX_VALIDITY = dt.timedelta(days=14)
RENEW_BEFORE_EXPIRY = dt.timedelta(days=2)
"""A dev certificate closer than this to notAfter is replaced."""

DEV_CERT_FILE = "dev-cert.pem"
DEV_KEY_FILE = "dev-key.pem"
DEV_LOCK_FILE = ".dev-cert.lock"
"""Held (flock) while a server checks or replaces the pair, so servers starting at once agree."""
DEV_SAN_DNS = ("localhost",)
DEV_SAN_IP = ("127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class CertInfo:
    """Paths of a PEM certificate and key, and the certificate's hashes.

    ``cert_sha256_hex``: SHA-256 of the DER certificate (for
    ``serverCertificateHashes``); ``spki_sha256_b64``: base64 SHA-256 of the
    DER SubjectPublicKeyInfo; ``not_after``: expiry, UTC.
    """

    cert_path: Path
    key_path: Path
    cert_sha256_hex: str
    spki_sha256_b64: str
    not_after: dt.datetime
    generated: bool


def cert_hashes(cert: x509.Certificate) -> tuple[str, str]:
    """Return (SHA-256 of the DER certificate as hex, SHA-256 of its SPKI as base64)."""
    der = cert.public_bytes(serialization.Encoding.DER)
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest(), base64.b64encode(hashlib.sha256(spki).digest()).decode()


def _dev_cert_usable(cert: x509.Certificate, now: dt.datetime) -> bool:
    key = cert.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        return False
    not_before, not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
    if not_after - not_before > CHROMIUM_MAX_VALIDITY or not_before > now:
        return False
    if not_after - now < RENEW_BEFORE_EXPIRY:
        return False
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    dns = set(san.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    return set(DEV_SAN_DNS) <= dns and set(DEV_SAN_IP) <= ips


def generate_dev_cert(now: dt.datetime) -> tuple[bytes, bytes]:
    """Make a self-signed ECDSA P-256 certificate valid 10 days from ``now − 1 h``.

    Returns (certificate PEM, unencrypted PKCS#8 key PEM).
    """
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nuwa-dev")])
    not_before = now - dt.timedelta(hours=1)
    san = x509.SubjectAlternativeName(
        [x509.DNSName(d) for d in DEV_SAN_DNS]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in DEV_SAN_IP]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_before + DEV_CERT_VALIDITY)
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock(2) on ``path`` (created if missing) for the block."""
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place (rename(2))."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def ensure_dev_cert(state_dir: str | os.PathLike[str], now: dt.datetime | None = None) -> CertInfo:
    """Return the dev certificate in ``state_dir``, generating it if needed.

    The directory is created if missing; the key is written with mode 0600. Safe to call
    from several processes at once on one directory: they take turns (flock on
    ``.dev-cert.lock``), so all return the same pair and the files always match.

    Raises:
        OSError: the state directory cannot be created or written.
    """
    now = now or dt.datetime.now(dt.UTC)
    directory = Path(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / DEV_CERT_FILE, directory / DEV_KEY_FILE
    # Servers started at once on one state directory (benchmark runs spread over a machine)
    # decide one at a time: the first makes the pair, the others find it. Each file is written
    # to a temporary name and renamed into place (atomic), so no reader sees half a pair.
    with _locked(directory / DEV_LOCK_FILE):
        cert: x509.Certificate | None = None
        try:
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            serialization.load_pem_private_key(key_path.read_bytes(), password=None)
            if not _dev_cert_usable(cert, now):
                cert = None
        except (OSError, ValueError, TypeError):
            cert = None
        generated = cert is None
        if cert is None:
            cert_pem, key_pem = generate_dev_cert(now)
            _write_atomic(key_path, key_pem, 0o600)
            _write_atomic(cert_path, cert_pem, 0o644)
            cert = x509.load_pem_x509_certificate(cert_pem)
    sha_hex, spki_b64 = cert_hashes(cert)
    return CertInfo(cert_path, key_path, sha_hex, spki_b64, cert.not_valid_after_utc, generated)


def load_cert_info(
    cert_path: str | os.PathLike[str],
    key_path: str | os.PathLike[str],
    now: dt.datetime | None = None,
) -> CertInfo:
    """Describe a production certificate given as PEM files (first cert in the file: the
    leaf, then its chain) and check it can serve: the key is an unencrypted PEM private
    key whose public key is the certificate's, and ``now`` lies within the validity.

    Production certificates are validated by browsers the ordinary way (a CA chain, no
    ``serverCertificateHashes``, no flags), so neither the 14-day limit nor the
    ECDSA-only rule of dev certificates applies.

    Raises:
        OSError: a file cannot be read. ValueError: not a PEM certificate or key, key
        and certificate do not match, or the certificate is expired or not yet valid.
    """
    now = now or dt.datetime.now(dt.UTC)
    cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    try:
        key = serialization.load_pem_private_key(Path(key_path).read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--key {key_path}: not an unencrypted PEM private key ({exc})") from None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, spki) != cert.public_key(
    ).public_bytes(serialization.Encoding.DER, spki):
        raise ValueError(f"--key {key_path} does not match the certificate in {cert_path}")
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise ValueError(
            f"certificate {cert_path} is not valid now ({now.isoformat()}): valid "
            f"{cert.not_valid_before_utc.isoformat()} .. {cert.not_valid_after_utc.isoformat()}"
        )
    sha_hex, spki_b64 = cert_hashes(cert)
    return CertInfo(
        Path(cert_path), Path(key_path), sha_hex, spki_b64, cert.not_valid_after_utc, False
    )
