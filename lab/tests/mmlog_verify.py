"""An independent check of a Mahimahi-format link log against its trace.

Written apart from ``nuwa_lab.emulator`` (it imports nothing of it), from
mahimahi's ``link_queue.cc`` semantics: a trace line is a millisecond offset of
one 1504-byte delivery opportunity and the schedule repeats with a period equal
to the last offset; packets leave only at opportunities, first in first out; a
packet larger than what is left of an opportunity uses it up and carries its
remaining bytes into later ones; unused bytes of an opportunity are lost.

Checks (each failure is one line of ``problems``):

1. the ``#`` lines are exactly the trace's opportunities, from log time 0 up to
   the millisecond of the last logged event (a missing or extra one is an error);
2. every departure (``-``) happens at a time with an opportunity;
3. cumulative bytes departed by time t never exceed 1504 × opportunities up to t;
4. departures are the non-dropped arrivals in FIFO order, each with its logged
   delay equal to departure time − arrival time;
5. every ``d`` line follows a ``+`` line of the same time and size;
6. lines are in time order.

Usage: ``python mmlog_verify.py TRACE LOG`` prints a JSON object
{ok, problems, drops, departures, utilization, queuing_delay_ms {p50, p95}}
and exits 1 on a problem. Utilization is departed bytes ÷ opportunity bytes over
the whole log (idle opportunities count).
"""

from __future__ import annotations

import json
import sys
from collections import deque
from pathlib import Path
from typing import Any

OPPORTUNITY_BYTES = 1504


def _trace_offsets_ms(path: Path) -> list[int]:
    offsets = [int(line) for line in path.read_text().split() if line.strip()]
    if not offsets or offsets[-1] <= 0:
        raise ValueError(f"{path}: empty trace or zero period")
    return offsets


def _opportunities_until(offsets: list[int], end_ms: int) -> dict[int, int]:
    """Opportunity count per ms for t in [0, end_ms] (the schedule repeats every period)."""
    period = offsets[-1]
    counts: dict[int, int] = {}
    base = 0
    while base <= end_ms:
        for o in offsets:
            t = base + o
            if t > end_ms:
                break
            counts[t] = counts.get(t, 0) + 1
        base += period
    return counts


def _pct(xs: list[int], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return float(s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))])


def verify(trace: Path, log: Path) -> dict[str, Any]:
    """Check ``log`` against ``trace``; returns the summary described in the module docstring."""
    offsets = _trace_offsets_ms(trace)
    events: list[tuple[int, str, int, int | None]] = []
    for n, raw in enumerate(log.read_text().splitlines(), 1):
        if not raw or raw.startswith("#"):
            continue
        parts = raw.split()
        if len(parts) not in (3, 4) or parts[1] not in "+-#d":
            raise ValueError(f"{log}:{n}: not a log line: {raw!r}")
        events.append((int(parts[0]), parts[1], int(parts[2]),
                       int(parts[3]) if len(parts) == 4 else None))
    problems: list[str] = []
    if not events:
        return {"ok": False, "problems": ["no events"], "drops": 0, "departures": 0,
                "utilization": None, "queuing_delay_ms": {"p50": None, "p95": None}}
    end_ms = events[-1][0]
    expected = _opportunities_until(offsets, end_ms)
    logged: dict[int, int] = {}
    queue: deque[tuple[int, int]] = deque()  # (arrival ms, size) of packets not yet departed
    last: tuple[int, str, int, int | None] | None = None
    departed_bytes = 0
    drops = 0
    delays: list[int] = []
    opp_cum = 0
    opp_times = sorted(expected)
    oi = 0
    prev_t = 0
    for t, kind, size, extra in events:
        if t < prev_t:
            problems.append(f"t={t}: line out of time order (after t={prev_t})")
        prev_t = max(prev_t, t)
        while oi < len(opp_times) and opp_times[oi] <= t:
            opp_cum += expected[opp_times[oi]]
            oi += 1
        if kind == "#":
            logged[t] = logged.get(t, 0) + 1
        elif kind == "+":
            queue.append((t, size))
        elif kind == "d":
            if last is None or last[1] != "+" or last[0] != t or last[2] != size or not queue:
                problems.append(f"t={t}: drop without its arrival line")
            else:
                queue.pop()
                drops += 1
        else:  # departure
            if t not in expected:
                problems.append(f"t={t}: departure at a time with no opportunity")
            if not queue:
                problems.append(f"t={t}: departure of a packet that never arrived")
            else:
                arrival_ms, arrival_size = queue.popleft()
                if arrival_size != size:
                    problems.append(
                        f"t={t}: FIFO order broken ({size} B left, {arrival_size} B was first)")
                if extra != t - arrival_ms:
                    problems.append(
                        f"t={t}: logged delay {extra} ms, FIFO says {t - arrival_ms} ms")
                delays.append(t - arrival_ms)
            departed_bytes += size
            if departed_bytes > OPPORTUNITY_BYTES * opp_cum:
                problems.append(f"t={t}: {departed_bytes} B departed > {opp_cum} opportunities")
        last = (t, kind, size, extra)
    for t in sorted(set(expected) | set(logged)):
        if t >= end_ms:
            break  # the log may end part-way through its last millisecond
        if expected.get(t, 0) != logged.get(t, 0):
            problems.append(f"t={t}: {logged.get(t, 0)} opportunities logged, "
                            f"trace says {expected.get(t, 0)}")
    total_opp = sum(expected.values())
    return {
        "ok": not problems,
        "problems": problems[:50],
        "drops": drops,
        "departures": len(delays),
        "utilization": departed_bytes / (OPPORTUNITY_BYTES * total_opp) if total_opp else None,
        "queuing_delay_ms": {"p50": _pct(delays, 50), "p95": _pct(delays, 95)},
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: mmlog_verify.py TRACE LOG", file=sys.stderr)
        return 2
    r = verify(Path(argv[1]), Path(argv[2]))
    print(json.dumps(r))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
