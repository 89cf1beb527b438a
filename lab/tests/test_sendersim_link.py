"""The link the sender-side simulator uses (the emulator's TraceLink) against the shared
vectors spec/link_vectors.json, which packages/cc/src/sim/link.test.ts checks against the
TypeScript simulator's link: both are held to the same hand-worked Mahimahi cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nuwa_lab.emulator import QueueLimit, TraceLink, parse_trace

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "spec" / "link_vectors.json").read_text())


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Drive a link by the vectors' rule; return what the vectors' "expected" holds."""
    trace = parse_trace([f"{t}\n" for t in case["trace_ms"]])
    link: TraceLink[str] = TraceLink(trace, QueueLimit(case["queue_packets"], case["queue_bytes"]))
    departures: list[list[Any]] = []
    drops: list[str] = []
    for t_ms, size_bytes, name in case["arrivals"]:
        departures += [[d.item, d.departure_ms] for d in link.service(t_ms)]
        if not link.enqueue(t_ms, size_bytes, name):
            drops.append(name)
    departures += [[d.item, d.departure_ms] for d in link.service(case["until_ms"])]
    return {"departures": departures, "drops": drops,
            "opportunities": link.counters.opportunities}


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_link_matches_shared_vectors(case: dict[str, Any]) -> None:
    assert run_case(case) == case["expected"]
