"""Loading a bench directory: the index and its end-to-end runs (``bench.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schemes import PLAY_ALIASES


@dataclass
class Run:
    """One end-to-end run (``bench.json``) and its directory."""

    rec: dict[str, Any]
    dir: Path

    @property
    def valid(self) -> bool:
        return bool(self.rec.get("valid")) and self.rec.get("metrics") is not None

    @property
    def m(self) -> dict[str, Any]:
        return self.rec.get("metrics") or {}

    @property
    def key(self) -> tuple[str, str, str, int]:
        r = self.rec
        scheme = r["scheme"]
        if r["kind"] == "play":
            scheme = PLAY_ALIASES.get(scheme, scheme)
        return (r["kind"], r["trace"]["name"], scheme, int(r["queue_packets"]))


def load_bench(bench_dir: Path) -> tuple[dict[str, Any], list[Run]]:
    """Return the index and the runs it lists (a listed run without ``bench.json`` is skipped)."""
    index = json.loads((bench_dir / "bench-index.json").read_text())
    runs = []
    for rid in index.get("runs", []):
        f = bench_dir / "runs" / rid / "bench.json"
        if f.exists():
            runs.append(Run(json.loads(f.read_text()), f.parent))
    return index, runs
