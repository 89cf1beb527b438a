"""Schemes by name: any congestion controller in aioquic's registry runs as a QUIC flow, and
``nuwa`` runs the receiver-driven flow (:mod:`.nuwa`).

aioquic's registry (``aioquic.quic.congestion.base.register_congestion_control``) is filled by
imports: aioquic's ``reno`` and ``cubic`` by ``aioquic.quic.recovery``; the server's ceiling
(``nuwa_ceiling``) by ``nuwa_server.ceiling``; the server's own controllers (``bbr``, later
``pbq``) by ``nuwa_server.cc`` when that package exists (branch s8-bbr). A controller that sets
its own pacing rate gets the server's pacer seam (``nuwa_server.cc.pacing.
install_controller_pacer``) exactly as a server connection does, when that module exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from aioquic.quic import recovery as _recovery  # noqa: F401 - registers reno and cubic
from aioquic.quic.congestion import base as cc_base
from aioquic.quic.recovery import QuicPacketRecovery

PLUGIN_MODULES = ("nuwa_server.ceiling", "nuwa_server.cc")
"""Modules whose import registers more controllers with aioquic (skipped while absent)."""
NUWA_SCHEME = "nuwa"
"""The receiver-driven scheme: grants from the TypeScript controller, the server's ceiling."""


def load_plugins() -> None:
    """Import every module of :data:`PLUGIN_MODULES` that exists (each registers by name)."""
    for name in PLUGIN_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise  # the module exists but something it imports is missing


def cc_names() -> list[str]:
    """Every congestion controller aioquic can create by name now, sorted."""
    load_plugins()
    return sorted(cc_base._factories)  # aioquic keeps its registry in this module dict


def schemes() -> list[str]:
    """Every scheme a flow may run: the controllers of :func:`cc_names` and ``nuwa``."""
    return sorted({*cc_names(), NUWA_SCHEME})


def pacer_hook() -> Callable[[QuicPacketRecovery], object] | None:
    """The server's seam that lets a controller drive aioquic's pacer, or None while absent."""
    try:
        mod = importlib.import_module("nuwa_server.cc.pacing")
    except ModuleNotFoundError:
        return None
    hook: Callable[[QuicPacketRecovery], object] = mod.install_controller_pacer
    return hook


def check_schemes(names: list[str]) -> None:
    """Raise ValueError naming the schemes that are not known (with the list of known ones)."""
    known = schemes()
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"unknown scheme(s) {', '.join(bad)}; known: {', '.join(known)}")
