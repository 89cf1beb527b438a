"""The lab's tests drive the product with the product tests' aioquic WebTransport client
(``server/tests/wt_harness.py``: ``WtClient``, ``running_server``, ...), so that folder is
importable from here whichever folders pytest is given."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PRODUCT_TESTS = Path(__file__).resolve().parents[2] / "server" / "tests"
if str(PRODUCT_TESTS) not in sys.path:
    sys.path.append(str(PRODUCT_TESTS))


def pytest_configure(config: pytest.Config) -> None:
    """Register the lab's markers."""
    config.addinivalue_line(
        "markers", "install: builds a fresh venv with pip from the package index (wheel cache); "
        "runs in CI (about 20 s)")
    config.addinivalue_line(
        "markers",
        "cpu: computation only (no emulator, no server on a socket, no bound on wall-clock "
        "time): ./nuwa test runs these on both cores (pytest-xdist, -n 2) at the idle "
        "scheduling policy, beside the functional end-to-end tests")
    config.addinivalue_line(
        "markers",
        "quiet: measures timing or shares (emulator lateness, pacing rates, a receiver against "
        "Cubic alone): ./nuwa test runs these after the computation lane has ended, on quiet "
        "cores; the other tests that are not `cpu` run beside the DASH content's encoding")
