"""The product installs alone (issue 16, "Done when"): ``pip install ./server`` into an empty
venv brings no numpy, matplotlib or torch (nor the lab), and the server started from that venv
serves a bulk run, with grants, through the emulator run from the lab's venv (``.venv``).

Slow-ish (a venv and a pip install from the package index, wheels from pip's cache: about
15 s here), marked ``install``; it runs in CI with the rest of ``lab/tests``. ``./nuwa test``
builds that venv in the background while the type checkers and unit tests run and hands it
over in ``NUWA_PRODUCT_VENV`` (the test checks it holds this tree's ``nuwa_server``); alone,
the test builds its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aioquic.asyncio.client import connect
from reliability_helpers import _stop
from wt_harness import WtClient, client_configuration, run

from nuwa_server.protocol import Grant

pytestmark = pytest.mark.install

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAVY = {"numpy", "matplotlib", "torch", "nuwa-lab", "nuwa-rl", "pandas", "scipy"}
"""Distributions a deployment of the product must not get."""
LINK_MBPS = 12
RUN_S = 3.0
WINDOW_BYTES = 150_000
"""The receiver's fixed grant: above the 12 Mbit/s × 50 ms BDP (75 kB), so the link limits."""


def _product_python(tmp_path: Path) -> Path:
    """The python of a venv holding ``pip install ./server`` and nothing else: the one
    ``./nuwa test`` built while the unit tests ran (``NUWA_PRODUCT_VENV``, checked to hold
    this tree's ``nuwa_server``), else one built here."""
    prebuilt = os.environ.get("NUWA_PRODUCT_VENV")
    if not prebuilt:
        return _install_product(tmp_path)
    venv = Path(prebuilt)
    log = Path(f"{prebuilt}.log")
    assert (venv / ".nuwa-built").exists(), (
        f"./nuwa test could not build {venv}: {log.read_text()[-3000:] if log.exists() else ''}")
    py = venv / "bin" / "python"
    installed = Path(subprocess.run(
        [str(py), "-c", "import nuwa_server; print(nuwa_server.__file__)"], check=True,
        capture_output=True, text=True, cwd=tmp_path).stdout.strip()).parent
    tree = REPO_ROOT / "server" / "nuwa_server"
    mine = {p.name: p.read_bytes() for p in tree.glob("*.py")}
    theirs = {p.name: p.read_bytes() for p in installed.glob("*.py")}
    assert mine == theirs, f"{venv} does not hold this tree's nuwa_server"
    return py


def _install_product(tmp_path: Path) -> Path:
    """``pip install ./server`` (a clean copy of the tracked sources) into a new empty venv;
    returns the venv's python."""
    src = tmp_path / "server"
    shutil.copytree(REPO_ROOT / "server", src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__", ".*_cache"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=60)
    py = venv / "bin" / "python"
    # this venv's pip installs into the empty one (--python): the new venv holds only
    # what the product's install brought
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--disable-pip-version-check", str(src)], check=True, timeout=300)
    return py


async def _start_ready(argv: list[str], stderr_path: Path) -> tuple[Any, dict[str, Any]]:
    """Start ``argv`` and wait for its ``{"event": "ready"}`` stdout line."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, cwd=stderr_path.parent,
        stderr=open(stderr_path, "w"))  # noqa: SIM115 (closed with the process)
    assert proc.stdout is not None
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line, f"{argv[:2]} exited before ready: {stderr_path.read_text()[-2000:]}"
        obj = json.loads(line)
        if obj.get("event") == "ready":
            return proc, obj




async def _bulk_through_emulator(product_py: Path, out: Path) -> int:
    """The installed server (its ``nuwa-server`` script) behind the lab's emulator on a
    constant ``LINK_MBPS`` trace, 25 ms each way; a receiver granting ``WINDOW_BYTES`` with
    honest cum at 1 kHz downloads for ``RUN_S``. Returns the bytes it received."""
    trace = out / "constant.mahi"
    trace.write_text("".join(f"{ms}\n" * (LINK_MBPS // 12) for ms in range(1, 1001)))
    server, ready = await _start_ready(
        [str(product_py.parent / "nuwa-server"), "--host", "127.0.0.1", "--port", "0",
         "--cc", "nuwa", "--state-dir", str(out / "state"), "--log-dir", str(out / "server")],
        out / "server.stderr")
    emu = None
    try:
        emu, emu_ready = await _start_ready(
            [sys.executable, "-m", "nuwa_lab.emulator", "--listen", "127.0.0.1:0",
             "--server", f"127.0.0.1:{ready['port']}", "--trace", str(trace),
             "--delay-ms", "25", "--uplink-delay-ms", "25", "--queue-packets", "100",
             "--log", str(out / "emulator.log"), "--summary-json", str(out / "emulator.json")],
            out / "emulator.stderr")
        async with connect("127.0.0.1", int(emu_ready["listen_ports"][0]),
                           configuration=client_configuration(),
                           create_protocol=WtClient) as client:
            assert isinstance(client, WtClient)
            assert await client.open_session() == 200
            client.request({"v": 1, "op": "bulk", "size_bytes": 1 << 40})
            loop = asyncio.get_running_loop()
            t0, seq = loop.time(), 1
            while loop.time() - t0 < RUN_S:
                echo = client.all_frames[-1][1].header.send_time_us if client.all_frames else 0
                client.send_grant(Grant(seq, seq, client.frame_bytes_received, WINDOW_BYTES,
                                        echo, 0))
                seq += 1
                await asyncio.sleep(0.001)
            return client.frame_bytes_received
    finally:
        if emu is not None:
            await _stop(emu)
        await _stop(server)


def test_the_product_installs_alone_and_serves_a_bulk_run_through_the_emulator(
        tmp_path: Path) -> None:
    py = _product_python(tmp_path)
    names = set(json.loads(subprocess.run(
        [str(py), "-c", "import importlib.metadata as m, json; "
         "print(json.dumps([d.metadata['Name'].lower() for d in m.distributions()]))"],
        check=True, capture_output=True, text=True, cwd=tmp_path).stdout))
    assert "nuwa-server" in names and "aioquic" in names, names
    assert not names & HEAVY, names & HEAVY
    where = subprocess.run([str(py), "-c", "import nuwa_server; print(nuwa_server.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    assert where.startswith(str(py.parent.parent)), where  # the installed copy, not the tree

    # An emulator that could not keep time voids the measurement (p99 lateness > 2 ms, its own
    # check): it is measured again, once, as the e2e suite does (e2e/src/valid-run.ts); the
    # validity of the run kept is still asserted below.
    for attempt in (1, 2):
        out = tmp_path / f"run-{attempt}"
        out.mkdir()
        received = run(_bulk_through_emulator(py, out))
        emu = json.loads((out / "emulator.json").read_text())
        if emu["valid"]:
            break
        print(f"emulator invalid ({emu.get('invalid_reasons')}): measuring again")
    (session_dir,) = (out / "server").iterdir()
    summary = json.loads((session_dir / "summary.json").read_text())
    assert summary["cc"] == "nuwa" and summary["grants_accepted"] > 100, summary
    assert summary["grant_violations"] == 0, summary
    assert summary["bytes_sent"] >= received > 0
    # the link, not the install, limits the run: most of its capacity was used
    assert received > 0.5 * LINK_MBPS * 1e6 / 8 * (RUN_S - 0.5), (received, emu)
    assert emu["valid"], emu
