"""The product never imports the lab (issue 16 item 1): the import-linter contract in
``.importlinter`` (which ``./nuwa test`` checks on the tree with ``lint-imports``) holds on a
copy of the tree and breaks once a violating import is planted in the copy's product, so
that check can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = REPO_ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(src_root: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if src_root is not None:  # the copies shadow the editable installs (PYTHONPATH goes first)
        env["PYTHONPATH"] = str(src_root)
    return subprocess.run([str(LINT_IMPORTS), "--config", str(CONFIG), "--no-cache"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


PLANTED = [
    # (product module, planted text, what the contract must name): a lab import at module
    # level, and a heavy dependency imported lazily inside a function
    ("session.py", "from nuwa_lab.emulator.trace import load_trace  # noqa\n",
     "nuwa_lab.emulator.trace"),
    ("certs.py", "def _plot() -> None:\n    import matplotlib.pyplot  # noqa\n", "matplotlib"),
    ("send_loop.py", "def _spread() -> None:\n    import ray  # noqa\n", "ray"),  # lab only
]


def test_a_planted_violating_import_breaks_the_contract(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for part, package in (("server", "nuwa_server"), ("lab", "nuwa_lab")):
        shutil.copytree(REPO_ROOT / part / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    clean = _lint(src, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the copy alone is clean
    for module, planted, _ in PLANTED:
        target = src / "nuwa_server" / module
        target.write_text(target.read_text() + "\n\n" + planted)
    r = _lint(src, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 kept, 1 broken" in r.stdout, r.stdout
    for module, _, culprit in PLANTED:
        assert f"nuwa_server.{module.removesuffix('.py')} -> {culprit}" in r.stdout, r.stdout
