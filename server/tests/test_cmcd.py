"""CMCD payload parsing (nuwa_server.cmcd, CTA-5004 §3.3) and its place in a get request."""

from __future__ import annotations

import pytest

from nuwa_server.cmcd import parse_cmcd
from nuwa_server.protocol import GetRequest
from nuwa_server.protocol.requests import encode_request, parse_request

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def test_parse_cmcd_types() -> None:
    """Integers, decimals, quoted strings (commas and escapes inside), tokens, booleans."""
    got = parse_cmcd('bl=21300,br=3200,mtp=25400,pr=1.08,ot=v,sf=d,'
                     'cid="a,b \\"q\\"",bs,nor="..%2Fseg2.m4s"')
    assert got == {"bl": 21300, "br": 3200, "mtp": 25400, "pr": 1.08, "ot": "v", "sf": "d",
                   "cid": 'a,b "q"', "bs": True, "nor": "..%2Fseg2.m4s"}


def test_parse_cmcd_is_lenient() -> None:
    """Garbage pairs are skipped, never an error; empty input is no keys."""
    assert parse_cmcd("") == {}
    assert parse_cmcd(",,=5,bl=100,not a key=1,br=7") == {"bl": 100, "br": 7}
    assert parse_cmcd("bl=1" + ",x" * 5000)["bl"] == 1  # longer than MAX_CMCD_CHARS: cut, parsed


def test_get_request_carries_cmcd() -> None:
    """``cmcd`` round-trips through the request codec; a non-string one is ignored like an
    unknown field (the request is still served)."""
    r = parse_request(b'{"v":1,"op":"get","path":"/a","cmcd":"bl=100,br=300"}')
    assert r == GetRequest("/a", None, None, "bl=100,br=300")
    assert parse_request(encode_request(r)) == r
    assert parse_request(b'{"v":1,"op":"get","path":"/a","cmcd":{"bl":1}}') == GetRequest("/a")
