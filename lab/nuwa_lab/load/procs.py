"""Starting, stopping and reading the load test's processes: readiness, CPU and memory,
UDP drops, the server's session summaries, the profile (:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from .common import (
    REPO_ROOT,
)


class StartError(RuntimeError):
    """A part (server, emulator, worker) failed to start."""


def _start_ready(
    cmd: list[str], stderr_path: Path, timeout_s: float = 30.0
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start ``cmd``, wait for its ``{"event":"ready"}`` stdout line. Raises :class:`StartError`."""
    errf = stderr_path.open("w")
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=errf, text=True)
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("event") == "ready":
                return proc, msg
    _stop(proc)
    raise StartError(
        f"{' '.join(cmd[:4])}: no ready line; stderr tail:\n{stderr_path.read_text()[-2000:]}"
    )


def _stop(proc: subprocess.Popen[Any], pid: int | None = None) -> None:
    """SIGTERM (to ``pid`` if given, else the process), wait, SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid or proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS/VmHWM in kB from /proc/PID/status (empty if gone)."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` (/proc/PID/stat fields 14, 15)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def udp_counters() -> dict[str, int]:
    """The kernel's UDP counters (/proc/net/snmp ``Udp:``); RcvbufErrors are loopback drops."""
    try:
        lines = [
            ln.split()
            for ln in Path("/proc/net/snmp").read_text().splitlines()
            if ln.startswith("Udp:")
        ]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:], strict=False)}


def udp_socket_drops() -> dict[int, int]:
    """Per local UDP port, the kernel's drop count (last column of /proc/net/udp{,6})."""
    drops: dict[int, int] = collections.Counter()
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        with contextlib.suppress(OSError):
            for line in Path(name).read_text().splitlines()[1:]:
                f = line.split()
                if len(f) >= 13:
                    drops[int(f[1].rsplit(":", 1)[1], 16)] += int(f[-1])
    return dict(drops)


def server_session_summaries(stderr_path: Path) -> dict[str, Any]:
    """Totals over the ``session … closed (…): {summary}`` lines the server logs at close."""
    keys = ("grant_violations", "fallback_entries", "grants_accepted", "frames", "bytes_sent")
    totals: dict[str, Any] = {k: 0 for k in keys}
    totals["sessions"] = 0
    totals["close_reasons"] = collections.Counter()
    totals["grants_dropped"] = collections.Counter()
    totals["transmits_with_unsent_new_bytes"] = 0
    if not stderr_path.exists():
        return totals
    for line in stderr_path.read_text(errors="replace").splitlines():
        if " closed (" not in line or "): {" not in line:
            continue
        with contextlib.suppress(ValueError):
            summ = json.loads(line.split("): ", 1)[1])
            totals["sessions"] += 1
            for k in keys:
                totals[k] += int(summ.get(k) or 0)
            totals["close_reasons"][str(summ.get("close_reason"))] += 1
            totals["grants_dropped"].update(summ.get("grants_dropped") or {})
            dep = summ.get("departure") or {}
            totals["transmits_with_unsent_new_bytes"] += int(
                dep.get("transmits_with_unsent_new_bytes") or 0
            )
    return totals


def _child_pid(pid: int, timeout_s: float = 10.0) -> int:
    """The first child of ``pid`` (the server under py-spy)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = (task / "children").read_text().split()
                if kids:
                    return int(kids[0])
        time.sleep(0.05)
    raise StartError(f"no child of {pid}")


def summarize_profile(raw_path: Path, top: int = 15) -> dict[str, Any]:
    """Where the CPU went, from a py-spy raw (collapsed stacks) file.

    Returns ``samples``, ``self`` (top functions by own samples, share of all)
    and ``by_area`` (own samples grouped by package: aioquic crypto, aioquic
    QUIC, aioquic H3, nuwa_server, asyncio, other).
    """
    self_counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw_path.read_text().splitlines():
        stack, _, n_s = line.rpartition(" ")
        if not stack or not n_s.isdigit():
            continue
        n = int(n_s)
        total += n
        self_counts[stack.split(";")[-1]] += n
    areas: collections.Counter[str] = collections.Counter()
    for frame, n in self_counts.items():
        if "crypto" in frame or "aead" in frame.lower():
            area = "aioquic crypto"
        elif "aioquic/h3" in frame:
            area = "aioquic h3"
        elif "aioquic" in frame:
            area = "aioquic quic"
        elif "nuwa_server" in frame:
            area = "nuwa_server"
        elif "asyncio" in frame or "selectors" in frame or "socket" in frame:
            area = "asyncio/sockets"
        else:
            area = "other"
        areas[area] += n
    share = (lambda n: round(n / total, 4)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "self": [{"frame": f, "share": share(n)} for f, n in self_counts.most_common(top)],
        "by_area": {k: share(v) for k, v in areas.most_common()},
    }
