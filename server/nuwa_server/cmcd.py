"""CMCD (CTA-5004, Common Media Client Data) as the player sends it with a request (issue 19
item 7): the server only records it in the session log (``request`` events, ``cmcd``); it
changes nothing else. Format (CTA-5004 §3.1–3.3): comma-separated ``key=value`` pairs, keys in
any order; a key without ``=`` is boolean true; strings in double quotes (``\\"``, ``\\\\``
escaped); tokens bare; numbers integers or decimals. ``bl`` (buffer length, ms), ``mtp``
(measured throughput, kbit/s) and ``br`` (encoded bitrate, kbit/s) are the keys the issue asks
for; every key sent is kept."""

from __future__ import annotations

import re

#: Longest CMCD payload recorded, characters (a request is at most 4096 bytes anyway).
MAX_CMCD_CHARS = 2048

CmcdValue = int | float | str | bool

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_KEY = re.compile(r"[a-z0-9-]{1,32}(\.[a-z0-9-]{1,32})?", re.IGNORECASE)


def _split(text: str) -> list[str]:
    """Split on commas outside double-quoted strings."""
    parts: list[str] = []
    cur: list[str] = []
    quoted = escaped = False
    for ch in text:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\" and quoted:
            cur.append(ch)
            escaped = True
        elif ch == '"':
            cur.append(ch)
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_cmcd(text: str) -> dict[str, CmcdValue]:
    """Parse a CMCD payload (the decoded ``CMCD=`` query value, or the ``CMCD-*`` header
    values joined by commas) into key → value (CTA-5004 §3.3): integers and decimals as
    numbers, quoted strings unquoted and unescaped, bare tokens as strings, a key alone as
    True. Lenient: a pair that is not ``key[=value]`` with a valid key is skipped, never an
    error (CMCD is advisory; a request is never refused for it).

    Returns:
        the keys in the order sent (a repeated key: the last one); empty for empty input.
    """
    out: dict[str, CmcdValue] = {}
    for part in _split(text[:MAX_CMCD_CHARS]):
        part = part.strip()
        if not part:
            continue
        key, eq, raw = part.partition("=")
        key = key.strip()
        if not _KEY.fullmatch(key):
            continue
        if not eq:
            out[key] = True
            continue
        raw = raw.strip()
        value: CmcdValue
        if len(raw) >= 2 and raw[0] == raw[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", raw[1:-1])
        elif _NUMBER.fullmatch(raw):
            value = float(raw) if "." in raw else int(raw)
        else:
            value = raw
        out[key] = value
    return out
