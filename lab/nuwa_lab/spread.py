"""Runs that spread (issue 16 item 5): independent runs ("cells") as Ray tasks.

A benchmark matrix, a sweep or an RL evaluation is a set of independent runs. Each cell is
one command (``argv``) that writes one JSON value to the path given by the ``--result PATH``
this module appends; each declares the CPUs it needs (``num_cpus``), and Ray runs as many
cells at once as the declared CPUs allow (https://docs.ray.io/en/latest/ray-core/scheduling/
resources.html). An end-to-end cell (emulator + server + Chromium) declares 2, all of this
2-core machine, so two never share its cores and the emulator's timing self-check stays valid;
a simulator cell declares 1. On a 16-core machine 8 end-to-end cells run at once.

Ray starts locally by default (``address="local"``: always a fresh instance, never one that
another process on this host started), light: no dashboard, a small object store, the
machine's CPU count, no usage-stats report; it shuts down at the end. ``--ray-address ADDR``
joins a running cluster instead: every node must then hold the repository, set up
(``./nuwa setup``), at the same path as here, and the benchmark's ``--out`` should lie on a
shared file system (each cell's logs stay where it ran; its record comes back through Ray).

Protocol (``python -m nuwa_lab.spread``): a JSON object ``{"cells": [{"id": str, "argv":
[str, ...], "num_cpus": int}, ...], "cwd": str}`` on stdin (read only after Ray is up, so a
caller can use Ray's start-up time for work of its own and hand the cells over when that is
done) or in ``--cells FILE``. For every finished cell, in the order they finish, one JSON line
on stdout: ``{"index", "id", "ok", "result", "error", "start_s", "end_s", "wall_s", "node"}``
(``start_s``/``end_s``: wall-clock time.time() at the task's start and end, s; ``result``: the
JSON value the cell wrote, null when ``ok`` is false); ``--out FILE`` also writes all of them,
in the cells' order, as one JSON array. A caller that has read one line per cell has every
result and need not wait for Ray's shutdown (about a second). Exit status 0 when every cell
ran (a cell's own failure is reported in its line, not in the status), 2 on bad input.

The lab only: the product (``nuwa_server``) never imports this module nor Ray
(``.importlinter``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""Ray's object store for a local start: cells return small JSON records, 100 MB is plenty."""
STDERR_TAIL_BYTES = 4000
"""How much of a failed cell's stderr comes back in its ``error``."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One independent run: ``argv`` (run in ``cwd`` with ``--result PATH`` appended; it
    writes one JSON value to PATH) and the CPUs it needs (``num_cpus`` ≥ 1)."""

    id: str
    argv: list[str]
    num_cpus: int = 1


@dataclass(frozen=True, slots=True)
class CellResult:
    """What one cell gave: ``result`` the JSON value it wrote (None if not ``ok``), ``error``
    why not, ``start_s``/``end_s`` wall-clock time.time() around the command, s, ``node`` the
    host it ran on."""

    index: int
    id: str
    ok: bool
    result: Any
    error: str | None
    start_s: float
    end_s: float
    wall_s: float
    node: str


def run_cell_here(argv: Sequence[str], cwd: str) -> dict[str, Any]:
    """Run one cell's command in this process's host and return a CellResult's fields
    (without ``index``/``id``). Never raises for the command's own failure: a non-zero exit,
    or no readable JSON in the result file, gives ``ok`` false and the stderr's tail."""
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="nuwa-cell-") as tmp:
        result_path = Path(tmp) / "result.json"
        err_path = Path(tmp) / "stderr.log"
        with open(err_path, "wb") as err:
            proc = subprocess.run(
                [*argv, "--result", str(result_path)], cwd=cwd, stdin=subprocess.DEVNULL,
                stdout=err, stderr=subprocess.STDOUT, check=False)
        end = time.time()
        tail = err_path.read_bytes()[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
        result: Any = None
        error: str | None = None
        if proc.returncode != 0:
            error = f"exit status {proc.returncode}: {tail}"
        else:
            try:
                result = json.loads(result_path.read_text())
            except (OSError, ValueError) as exc:
                error = f"no JSON result ({exc}): {tail}"
    return {"ok": error is None, "result": result, "error": error, "start_s": start,
            "end_s": end, "wall_s": end - start, "node": socket.gethostname()}


def init_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a light local Ray (``address`` None: no dashboard, a 100 MB object store,
    ``num_cpus`` or the machine's CPU count) or join the cluster at ``address``.

    Raises:
        ConnectionError: ``address`` does not answer (Ray's own error).
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report leaves the machine
    # Ray starts its workers at niceness 15 (RayConfig worker_niceness) to keep its own daemons
    # responsive; an end-to-end cell's server and page driver inherit it, while Chromium runs at 0
    # (its GPU process at -8) and Ray's daemons at 0, so at 40 Mbit/s the server was starved: 5G
    # low-band 0.649 and Lumos LTE 0.690 utilization for Nuwa, 0.903 and 0.788 for Cubic, in the
    # twentieth session's bench; 0.820 and 0.741 for Nuwa rerun at the caller's priority. A local
    # Ray here runs its tasks at the caller's priority; a cluster joined with ``address`` keeps
    # its own setting.
    os.environ.setdefault("RAY_worker_niceness", "0")
    import ray

    if address:
        ray.init(address=address, log_to_driver=False)
        return
    ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1,
             include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
             log_to_driver=False)


def max_node_cpus() -> int:
    """The most CPUs any live node of the Ray cluster has (a cell asking more never runs)."""
    import ray

    cpus = [int(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]
    return max(cpus, default=0)


def run_cells(cells: Sequence[Cell], cwd: str | os.PathLike[str] = REPO_ROOT,
              address: str | None = None, num_cpus: int | None = None,
              on_done: Callable[[CellResult], None] | None = None) -> list[CellResult]:
    """Run ``cells`` as Ray tasks, each reserving its ``num_cpus``; return their results in
    the cells' order. ``on_done`` sees each as it finishes. Uses the Ray already initialised
    in this process if there is one (and leaves it running), else starts one with
    :func:`init_ray` and shuts it down at the end.

    A cell asking more CPUs than the largest node has is run with that node's count (all of
    it) instead of waiting forever, and a line on stderr says so.

    Raises:
        ValueError: a cell asks fewer than 1 CPU.
    """
    import ray

    for c in cells:
        if c.num_cpus < 1:
            raise ValueError(f"cell {c.id}: num_cpus must be ≥ 1 (got {c.num_cpus})")
    started_here = not ray.is_initialized()
    if started_here:
        init_ray(address, num_cpus)
    try:
        cap = max_node_cpus()
        task = ray.remote(run_cell_here)
        refs: dict[Any, int] = {}
        for i, c in enumerate(cells):
            need = c.num_cpus
            if need > cap:
                print(f"[spread] {c.id}: asks {need} CPUs, the largest node has {cap}; "
                      f"runs on all {cap}", file=sys.stderr)
                need = cap
            refs[task.options(num_cpus=need, max_retries=0).remote(list(c.argv), str(cwd))] = i
        out: list[CellResult | None] = [None] * len(cells)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            i = refs[done[0]]
            r = CellResult(index=i, id=cells[i].id, **ray.get(done[0]))
            out[i] = r
            if on_done:
                on_done(r)
        return [r for r in out if r is not None]
    finally:
        if started_here:
            ray.shutdown()


def parse_cells(doc: Any) -> tuple[list[Cell], str]:
    """Cells and working directory from the protocol's JSON object (module docstring).

    Raises:
        ValueError: not of that shape.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError('expected {"cells": [...], "cwd": "..."}')
    cells = []
    for i, c in enumerate(doc["cells"]):
        if not (isinstance(c, dict) and isinstance(c.get("id"), str)
                and isinstance(c.get("argv"), list) and c["argv"]
                and all(isinstance(a, str) for a in c["argv"])):
            raise ValueError(f"cell {i}: needs id (string) and argv (non-empty list of strings)")
        n = c.get("num_cpus", 1)
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"cell {c['id']}: num_cpus must be an integer ≥ 1 (got {n!r})")
        cells.append(Cell(c["id"], list(c["argv"]), n))
    return cells, str(doc.get("cwd") or REPO_ROOT)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: see the module docstring."""
    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.spread", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", help="JSON file of cells (default: read from stdin once Ray is up)")
    ap.add_argument("--out", help="also write all results, in the cells' order, to this file")
    ap.add_argument("--ray-address", help="join this Ray cluster (default: a local Ray)")
    ap.add_argument("--num-cpus", type=int, help="CPUs of a local Ray (default: all)")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    init_ray(a.ray_address, a.num_cpus)
    print(f"[spread] Ray up in {time.monotonic() - t0:.1f} s "
          f"({a.ray_address or 'local'}, {max_node_cpus()} CPUs on the largest node)",
          file=sys.stderr)
    try:
        text = Path(a.cells).read_text() if a.cells else sys.stdin.read()
        try:
            cells, cwd = parse_cells(json.loads(text))
        except ValueError as exc:
            print(f"[spread] bad cells: {exc}", file=sys.stderr)
            return 2

        def emit(r: CellResult) -> None:
            sys.stdout.write(json.dumps(asdict(r)) + "\n")
            sys.stdout.flush()

        results = run_cells(cells, cwd, on_done=emit)
        if a.out:
            Path(a.out).write_text(json.dumps([asdict(r) for r in results]))
        return 0
    finally:
        import ray

        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
