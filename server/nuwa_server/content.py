"""Safe resolution of request paths under a content root, and byte ranges.

A ``get`` request names a URL path (PROTOCOL.md "Requests"). This module
turns it into a regular file under the content root or refuses it; it never
serves a byte from outside the root. Rules, in order:

1. Query (``?``) and fragment (``#``) parts are dropped; the path must start
   with ``/`` (else 400).
2. Percent-decoding is applied exactly once (RFC 3986 §2.1, as a browser
   encodes a URL); invalid UTF-8 after decoding is 400. A ``%`` that is
   still there after decoding means double encoding and is refused (403).
3. Refused (403): empty segments (``//``, which would make an absolute path),
   ``.`` or ``..`` segments, backslashes, NUL or other control characters,
   ``:`` (drive letters, ``C:``), a leading ``~``.
4. The joined path is resolved with all symlinks followed
   (``os.path.realpath``); it must lie inside the resolved root (403 if not,
   which covers symlinks that lead outside), exist (404) and be a regular
   file (404 for directories and special files).

Errors are :class:`ContentError` with an HTTP status; pure apart from
reading the file system.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

_CONTENT_TYPES = {
    ".mpd": "application/dash+xml",
    ".m4s": "video/iso.segment",
    ".mp4": "video/mp4",
    ".m4a": "audio/mp4",
    ".m4v": "video/mp4",
    ".json": "application/json",
    ".txt": "text/plain",
}


class ContentError(Exception):
    """A path or range that cannot be served.

    Attributes:
        status: 400 (malformed path), 403 (refused: traversal, outside the
            root), 404 (no such regular file) or 416 (range not satisfiable).
        reason: short machine-readable reason, e.g. ``"dot_segment"``.
    """

    def __init__(self, status: int, reason: str, detail: str = "") -> None:
        super().__init__(f"{status} {reason}" + (f": {detail}" if detail else ""))
        self.status = status
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ResolvedFile:
    """A regular file under the root: its real ``path``, ``size_bytes``, ``content_type``."""

    path: str
    size_bytes: int
    content_type: str


def content_type_for(path: str) -> str:
    """MIME type from the file extension; ``application/octet-stream`` if unknown."""
    ext = os.path.splitext(path)[1].lower()
    if ext in _CONTENT_TYPES:
        return _CONTENT_TYPES[ext]
    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def safe_relative_path(url_path: str) -> str:
    """Check a URL path and return it as a relative path (``a/b.m4s``).

    Raises:
        ContentError: 400 or 403 per rules 1–3 of the module doc.
    """
    path = url_path.split("#", 1)[0].split("?", 1)[0]
    if not path.startswith("/"):
        raise ContentError(400, "not_absolute_url_path", repr(url_path))
    try:
        decoded = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError(400, "bad_utf8", repr(url_path)) from None
    if "%" in decoded:
        raise ContentError(403, "double_encoded", repr(url_path))
    if "\\" in decoded:
        raise ContentError(403, "backslash", repr(url_path))
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded):
        raise ContentError(403, "control_character", repr(url_path))
    if ":" in decoded:
        raise ContentError(403, "colon", repr(url_path))
    segments = decoded[1:].split("/")
    for segment in segments:
        if segment == "":
            raise ContentError(403, "empty_segment", repr(url_path))
        if segment in (".", ".."):
            raise ContentError(403, "dot_segment", repr(url_path))
    if segments[0].startswith("~"):
        raise ContentError(403, "home_reference", repr(url_path))
    return "/".join(segments)


class ContentRoot:
    """A directory whose regular files may be served; resolved once at creation.

    Raises:
        ValueError: the root does not exist or is not a directory.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValueError(f"content root {root!r} is not a directory")
        self.root = real

    def resolve(self, url_path: str) -> ResolvedFile:
        """Map ``url_path`` to a regular file under the root (module doc rules 1–4).

        Raises:
            ContentError: 400, 403 or 404.
        """
        relative = safe_relative_path(url_path)
        real = os.path.realpath(os.path.join(self.root, relative))
        if os.path.commonpath([self.root, real]) != self.root:
            raise ContentError(403, "outside_root", repr(url_path))
        try:
            st = os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            raise ContentError(404, "not_found", repr(url_path)) from None
        except OSError as exc:
            raise ContentError(403, "stat_failed", f"{url_path!r}: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ContentError(404, "not_a_file", repr(url_path))
        return ResolvedFile(real, st.st_size, content_type_for(real))


def satisfiable_range(
    byte_range: tuple[int, int] | None, size_bytes: int
) -> tuple[int, int] | None:
    """Clamp an inclusive ``(first, last)`` range to a resource of ``size_bytes``.

    ``last`` beyond the end is clamped to ``size_bytes − 1`` (RFC 9110 §14.1.2).
    Returns None for no range (whole resource).

    Raises:
        ContentError: 416 when ``first ≥ size_bytes`` (RFC 9110 §15.5.17).
    """
    if byte_range is None:
        return None
    first, last = byte_range
    if first >= size_bytes:
        raise ContentError(416, "range_not_satisfiable", f"first {first} >= size {size_bytes}")
    return first, min(last, size_bytes - 1)
