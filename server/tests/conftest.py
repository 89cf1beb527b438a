"""Markers of the product's tests (the lab's conftest registers the same)."""

from __future__ import annotations

import pytest

CPU_MARKER = (
    "cpu: computation only (no emulator, no server on a socket, no bound on wall-clock time): "
    "./nuwa test runs these on both cores (pytest-xdist, -n 2) at the idle scheduling policy, "
    "beside the rest, which run one at a time at normal priority")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``cpu`` marker."""
    config.addinivalue_line("markers", CPU_MARKER)
