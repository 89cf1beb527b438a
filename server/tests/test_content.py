"""Path resolution under the content root (nuwa_server.content) and byte ranges."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nuwa_server.content import (
    ContentError,
    ContentRoot,
    content_type_for,
    safe_relative_path,
    satisfiable_range,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[ContentRoot, Path]:
    root = tmp_path / "root"
    (root / "video" / "sub").mkdir(parents=True)
    (root / "video" / "manifest.mpd").write_text("<MPD/>")
    (root / "video" / "seg 1.m4s").write_bytes(b"x" * 10)
    (root / "100%.txt").write_text("percent")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (tmp_path / "rootsibling").mkdir()
    (tmp_path / "rootsibling" / "f").write_text("s")
    os.symlink(outside / "secret", root / "link_out")
    os.symlink(outside, root / "dirlink")
    os.symlink("../rootsibling/f", root / "rel_link_out")
    os.symlink("video/manifest.mpd", root / "link_in")
    os.mkfifo(root / "fifo")
    return ContentRoot(root), tmp_path


def test_resolves_regular_files(tree: tuple[ContentRoot, Path]) -> None:
    """Plain, percent-encoded, query-suffixed paths and in-root symlinks resolve."""
    root, _ = tree
    f = root.resolve("/video/manifest.mpd")
    assert f.size_bytes == 6 and f.content_type == "application/dash+xml"
    assert root.resolve("/video/seg%201.m4s").size_bytes == 10
    assert root.resolve("/video/seg 1.m4s?t=1#frag").content_type == "video/iso.segment"
    assert root.resolve("/link_in").path == root.resolve("/video/manifest.mpd").path


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/../outside/secret", 403),
        ("/video/../../outside/secret", 403),
        ("/video/..", 403),
        ("/./video/manifest.mpd", 403),
        ("/%2e%2e/outside/secret", 403),
        ("/%2E%2E/outside/secret", 403),
        ("/%2e%2e%2foutside%2fsecret", 403),
        ("/..%2Foutside%2Fsecret", 403),
        ("/%252e%252e/outside/secret", 403),
        ("/%25252e%25252e/outside/secret", 403),
        ("/100%25.txt", 403),  # a literal % in a name is refused too (double-encoding rule)
        ("//etc/passwd", 403),
        ("/video//manifest.mpd", 403),
        ("/\\..\\outside\\secret", 403),
        ("/video\\manifest.mpd", 403),
        ("/%5c..%5coutside", 403),
        ("/C:/Windows", 403),
        ("/~root/.ssh", 403),
        ("/%00", 403),
        ("/a%0a", 403),
        ("/link_out", 403),
        ("/dirlink/secret", 403),
        ("/rel_link_out", 403),
        ("video/manifest.mpd", 400),
        ("", 400),
        ("../secret", 400),
        ("/%ff%fe", 400),
        ("/nothing.m4s", 404),
        ("/video", 404),
        ("/video/sub", 404),
        ("/fifo", 404),
        ("/video/manifest.mpd/x", 404),
        ("/etc/passwd", 404),
    ],
)
def test_refused(tree: tuple[ContentRoot, Path], path: str, status: int) -> None:
    """Traversal and encoding tricks are refused with 400/403; missing files 404."""
    root, _ = tree
    with pytest.raises(ContentError) as info:
        root.resolve(path)
    assert info.value.status == status, info.value


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    """A missing or non-directory root is a ValueError at start, not at request time."""
    with pytest.raises(ValueError):
        ContentRoot(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError):
        ContentRoot(tmp_path / "file")


def test_root_that_is_a_symlink(tmp_path: Path) -> None:
    """A root given through a symlink is resolved once; files under it are served."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("a")
    os.symlink(real, tmp_path / "alias")
    assert ContentRoot(tmp_path / "alias").resolve("/a.txt").size_bytes == 1


@pytest.mark.parametrize(
    ("rng", "size", "expected"),
    [(None, 10, None), ((0, 0), 10, (0, 0)), ((0, 9), 10, (0, 9)), ((5, 100), 10, (5, 9)),
     ((9, 2**64 - 1), 10, (9, 9))],
)
def test_satisfiable_range(rng: tuple[int, int] | None, size: int,
                           expected: tuple[int, int] | None) -> None:
    """Inclusive ranges; last clamped to the end (RFC 9110 §14.1.2)."""
    assert satisfiable_range(rng, size) == expected


@pytest.mark.parametrize(("rng", "size"), [((10, 10), 10), ((0, 0), 0), ((2**63, 2**64), 5)])
def test_unsatisfiable_range(rng: tuple[int, int], size: int) -> None:
    """first ≥ size → 416."""
    with pytest.raises(ContentError) as info:
        satisfiable_range(rng, size)
    assert info.value.status == 416


def test_content_types() -> None:
    """DASH types are fixed; unknown extensions are octet-stream."""
    assert content_type_for("a.mpd") == "application/dash+xml"
    assert content_type_for("a.M4S") == "video/iso.segment"
    assert content_type_for("init.mp4") == "video/mp4"
    assert content_type_for("blob.zzz9") == "application/octet-stream"


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "%2e", "%2E", "%25", "%2f", "%5c", "/", "\\",
                                 "outside", "secret", "root", "video", "manifest.mpd", "%00",
                                 "link_out", "dirlink", "~", ":", "a"]), max_size=10))
def test_fuzz_never_outside_root_500(tree: tuple[ContentRoot, Path], parts: list[str]) -> None:
    """500 random paths built from traversal pieces: either refused (ContentError) or a
    regular file whose real path lies inside the root."""
    root, _ = tree
    path = "/" + "".join(parts)
    try:
        resolved = root.resolve(path)
    except ContentError as exc:
        assert exc.status in (400, 403, 404)
        return
    assert os.path.commonpath([root.root, resolved.path]) == root.root
    assert os.path.isfile(resolved.path)


def test_safe_relative_path_examples() -> None:
    """The URL path becomes a relative path with one round of percent-decoding."""
    assert safe_relative_path("/video/seg%201.m4s") == "video/seg 1.m4s"
    assert safe_relative_path("/a/b?x=../../") == "a/b"
    assert safe_relative_path("/caf%C3%A9") == "café"
