"""Markers of the product's tests (the lab's conftest registers the same)."""

from __future__ import annotations

import pytest

CPU_MARKER = (
    "cpu: computation only (no emulator, no server on a socket, no bound on wall-clock time): "
    "./nuwa test runs these on both cores (pytest-xdist, -n 2) at the idle scheduling policy, "
    "beside the functional end-to-end tests")


QUIET_MARKER = (
    "quiet: measures timing or shares (emulator lateness, pacing rates, a receiver against Cubic "
    "alone): ./nuwa test runs these after the computation lane has ended, on quiet cores; the "
    "other tests that are not `cpu` run beside the DASH content's encoding")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``cpu`` and ``quiet`` markers."""
    config.addinivalue_line("markers", CPU_MARKER)
    config.addinivalue_line("markers", QUIET_MARKER)
