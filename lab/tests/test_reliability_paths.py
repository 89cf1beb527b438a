"""Issue 7 item 3: no byte outside the content root is served, whatever the path.
"""

from __future__ import annotations

import os
from pathlib import Path

from wt_harness import (
    read_jsonl,
    run,
    running_server,
    session_logs,
    wt_client,
)

from nuwa_server.protocol import (
    FrameType,
)

# --------------------------------------------------------------------------- paths (item 3)


def test_no_byte_outside_the_root_is_served(tmp_path: Path) -> None:
    """A canary file outside the content root, asked for through every traversal variant
    (dot segments raw, percent-encoded, double- and triple-encoded, mixed case, overlong
    UTF-8, backslashes, absolute paths raw and encoded, NUL, symlinks to a file, a
    directory, the root's parent, an absolute target, a chain and a loop), with and
    without a byte range: every one is refused (400/403, or 404 where the name simply
    does not exist under the root), every 403 is logged as ``refused`` with its path and a
    warning, every refusal has an ``error_response`` event, and no response on the
    session carries the canary or any 16-byte piece of it."""
    canary = b"CANARY-" + os.urandom(24).hex().encode() + b"-END"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_bytes(canary)
    (tmp_path / "canary.txt").write_bytes(canary)
    content = tmp_path / "content"
    (content / "a" / "b").mkdir(parents=True)
    (content / "ok.txt").write_bytes(b"fine")
    os.symlink(outside / "canary.txt", content / "file_link")
    os.symlink(outside, content / "dir_link")
    os.symlink(tmp_path, content / "parent_link")
    os.symlink("../../../canary.txt", content / "a" / "b" / "rel_link")
    os.symlink(content / "file_link", content / "chain_link")
    os.symlink(content / "loop_b", content / "loop_a")
    os.symlink(content / "loop_a", content / "loop_b")
    abs_canary = str(outside / "canary.txt")
    enc_abs = abs_canary.replace("/", "%2f")
    variants = [
        "/../canary.txt", "/a/../../canary.txt", "/a/b/../../../canary.txt",
        "/%2e%2e/canary.txt", "/%2E%2E/canary.txt", "/.%2e/canary.txt", "/%2e./canary.txt",
        "/%2e%2e%2fcanary.txt", "/a%2f..%2f..%2fcanary.txt", "/..%2f..%2fcanary.txt",
        "/%252e%252e/canary.txt", "/%252e%252e%252fcanary.txt", "/%25252e%25252e/canary.txt",
        "/%c0%ae%c0%ae/canary.txt", "/%e0%80%ae%e0%80%ae/canary.txt", "/%uff0e%uff0e/canary.txt",
        "/..\\canary.txt", "/%5c..%5ccanary.txt", "/a\\..\\..\\canary.txt",
        "/" + abs_canary, "/" + enc_abs, "/%2f" + abs_canary.lstrip("/"),
        "/%2F" + abs_canary.lstrip("/"), "/./canary.txt", "/a/./../../canary.txt",
        "/%00/../canary.txt", "/canary.txt%00.m4s", "/C:/canary.txt", "/~/canary.txt",
        "/file_link", "/dir_link/canary.txt", "/parent_link/canary.txt",
        "/parent_link/outside/canary.txt", "/a/b/rel_link", "/chain_link", "/loop_a",
        "/dir_link/../canary.txt", "/../content/../canary.txt",
    ]
    not_url_paths = [abs_canary, "canary.txt", "../canary.txt", "", "%2e%2e/canary.txt"]

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            assert await client.open_session() == 200
            asked: dict[int, str] = {}
            for p in variants + not_url_paths:
                asked[client.request({"v": 1, "op": "get", "path": p})] = p
                asked[client.request({"v": 1, "op": "get", "path": p, "range": [0, 9]})] = p
            ok = client.request({"v": 1, "op": "get", "path": "/ok.txt"})
            statuses: dict[str, int] = {}
            by_sid: dict[int, int] = {}
            for sid, p in asked.items():
                r = await client.wait(sid)
                assert len(r.frames) == 1 and r.frames[0].header.frame_type == FrameType.ERROR, p
                by_sid[sid] = statuses[p] = r.error["status"]
                assert statuses[p] in (400, 403, 404), (p, r.error)
            assert (await client.wait(ok)).body == b"fine"
            everything = b"".join(f.payload for _, f, _ in client.all_frames)
            pieces = {canary[i:i + 16] for i in range(len(canary) - 15)}
            assert not any(piece in everything for piece in pieces)
            session = server.context.recent_sessions()[0]
        # 404 only where the name does not exist under the root (no file outside is probed)
        # (the absolute file path, sent as a URL path, names <root>/tmp/…, which is absent)
        assert [p for p, status in statuses.items() if status == 404] == [abs_canary]
        events = read_jsonl(session_logs(session) / "events.jsonl")
        refused = [e["path"] for e in events if e["event"] == "refused"]
        errors = [e for e in events if e["event"] == "error_response"]
        assert len(errors) == len(asked)
        n403 = sum(1 for status in by_sid.values() if status == 403)
        assert len(refused) == n403 and n403 >= 2 * 30, (len(refused), n403)
        assert {p for p in statuses if statuses[p] == 403} == set(refused)
        for p in ("/file_link", "/dir_link/canary.txt", "/parent_link/canary.txt",
                  "/a/b/rel_link", "/chain_link", "/%252e%252e/canary.txt", "/../canary.txt"):
            assert statuses[p] == 403, (p, statuses[p])

    run(main())
