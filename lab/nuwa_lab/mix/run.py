"""The end-to-end mix: servers, emulator and the receivers' worker started, the emulator's
per-flow log analysed (:mod:`nuwa_lab.mix`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..emulator.trace import Trace, constant_rate_trace, load_trace
from ..load.common import REPO_ROOT
from ..load.procs import StartError, _start_ready, _stop, server_session_summaries
from ..sendersim.core import FlowTruth
from ..sendersim.metrics import percentile, summarize

SCHEME_SERVER_ARGS: dict[str, list[str]] = {
    "nuwa": ["--cc", "nuwa"],
    "nuwa_bbr": ["--cc", "nuwa", "--ceiling", "bbr"],
    "cubic": ["--cc", "cubic"],
    "reno": ["--cc", "reno"],
    "bbr": ["--cc", "bbr"],
    "pbq": ["--cc", "pbq"],
}
"""Each scheme's server (one server per scheme in a run, all behind the one bottleneck).
A new server-side scheme is one line here."""

SWITCHING_SCHEMES = ("nuwa", "nuwa_bbr")
"""Schemes whose server takes ``--switch`` (the receiver-driven ones)."""


def link_trace(a: argparse.Namespace, out: Path) -> tuple[Trace, Path]:
    """The bottleneck's trace and its file (a constant ``--link-mbps`` one is written to
    ``out/link.mahi``)."""
    if a.trace:
        path = Path(a.trace).resolve()
        return load_trace(path), path
    tr = constant_rate_trace(a.link_mbps * 1e6, 1000)
    path = out / "link.mahi"
    path.write_text("".join(f"{t}\n" for t in tr.opportunities_ms))
    return tr, path


def analyze(schemes: list[str], worker: dict[str, Any], flow_log: dict[str, Any],
            emu_summary: dict[str, Any], trace: Trace, end_ms: float) -> dict[str, Any]:
    """The mix's figures from the emulator's per-flow log (``--flow-log``).

    Flow ``i`` is the emulator flow whose client port is the worker's local port for it;
    its start is its connect time on the log's clock (ms since the emulator's
    ``base_timestamp_ms``). Goodput is the flow's bytes through the bottleneck (UDP
    payload: QUIC headers and retransmissions included), so shares and Jain's index are
    the link's split; the definitions are :mod:`nuwa_lab.sendersim.metrics`'s (the same
    report as ``--sim``). Raises ``KeyError`` if a flow never reached the emulator.
    """
    base_ms = emu_summary["base_timestamp_ms"]
    by_port = {int(f["client"].rsplit(":", 1)[1]): f for f in flow_log["flows"]}
    starts_ms: list[float] = []
    truth: list[FlowTruth] = []
    for info in worker["flows"]:
        f = by_port.get(info.get("local_port", -1))
        if f is None:
            raise KeyError(f"flow {info['i']} ({info['scheme']}) never reached the emulator: "
                           f"{info['errors']}")
        starts_ms.append(info["connected_us"] / 1000 - base_ms)
        truth.append(FlowTruth(f["depart_ms"], f["size_bytes"], f["queue_delay_ms"],
                               round(f["dropped_bytes"] / 1350), len(f["depart_ms"])))
    delivered = [(t.depart_ms, t.size_bytes) for t in truth]
    ends_ms = [info["stopped_us"] / 1000 - base_ms if info.get("stopped_us") else None
               for info in worker["flows"]]
    out = summarize(schemes, starts_ms, delivered, truth, trace, int(end_ms), ends_ms=ends_ms)
    for info, f in zip(worker["flows"], out["flows"], strict=True):
        f["errors"] = info["errors"]
        f["receiver_bytes"] = info.get("receiver_bytes", 0)
    return out


def loss_args(a: argparse.Namespace) -> list[str]:
    """The emulator's random-loss options for ``--loss`` (seeded with ``--seed``); none at 0 or
    when the namespace has no ``loss``."""
    loss = getattr(a, "loss", 0.0)
    return ["--loss", repr(loss), "--seed", str(getattr(a, "seed", 1))] if loss > 0 else []


def orchestrate(a: argparse.Namespace) -> dict[str, Any]:
    """Start one server per scheme, the emulator (one route per server, ``--flow-log``)
    and the worker; wait; stop everything (by PID); analyse. Raises :class:`StartError`
    when a part fails to start or the worker fails."""
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    trace, trace_path = link_trace(a, out)
    schemes: list[str] = a.flow_list
    kinds = list(dict.fromkeys(schemes))
    procs: list[subprocess.Popen[Any]] = []
    try:
        ports: dict[str, int] = {}

        def start_server(k: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
            cmd = [py, "-m", "nuwa_server.server", "--host", "127.0.0.1", "--port", "0",
                   *SCHEME_SERVER_ARGS[k], "--state-dir", str(REPO_ROOT / ".cache" / "dev-cert"),
                   "--log-dir", str(out / f"logs-{k}")]  # per session: grants, frames, events
            if k in SWITCHING_SCHEMES and a.switch != "none":
                cmd += ["--switch", a.switch]
                if getattr(a, "switch_model", None):
                    cmd += ["--switch-model", a.switch_model]
                cmd += ["--switch-mode", getattr(a, "switch_mode", "unrestricted")]
                if getattr(a, "switch_rule", None):
                    cmd += ["--switch-rule", a.switch_rule]
                if getattr(a, "sender_cc", None):
                    cmd += ["--sender-cc", a.sender_cc]
            return _start_ready(cmd, out / f"server-{k}.stderr")

        with ThreadPoolExecutor(len(kinds)) as pool:  # the servers start side by side
            futures = {k: pool.submit(start_server, k) for k in kinds}
            errors = []
            for k, fut in futures.items():
                try:
                    srv, ready = fut.result()
                except StartError as e:
                    errors.append(e)
                    continue
                procs.append(srv)
                ports[k] = int(ready["port"])
            if errors:
                raise errors[0]
        routes = [x for k in kinds[1:] for x in ("--route", f"127.0.0.1:0=127.0.0.1:{ports[k]}")]
        emu, emu_ready = _start_ready(
            [py, "-m", "nuwa_lab.emulator", "--listen", "127.0.0.1:0",
             "--server", f"127.0.0.1:{ports[kinds[0]]}", *routes, "--trace", str(trace_path),
             "--delay-ms", str(a.delay_ms), "--uplink-delay-ms", str(a.delay_ms),
             "--queue-packets", str(a.queue_packets), "--log", str(out / "emulator.log"),
             *loss_args(a),
             "--summary-json", str(out / "emulator-summary.json"),
             "--flow-log", str(out / "flows.json")],
            out / "emulator.stderr")
        procs.append(emu)
        listen = dict(zip(kinds, emu_ready["listen_ports"], strict=True))
        (out / "worker.json").unlink(missing_ok=True)  # a previous run's
        start_at = time.monotonic() + 2.0
        wcmd = [py, "-m", "nuwa_lab.mix", "--worker", "--start-at", str(start_at),
                "--duration", str(a.duration), "--cc", a.cc, "--flows", a.flows,
                "--flow-schemes", ",".join(schemes),
                "--flow-ports", ",".join(str(listen[s]) for s in schemes),
                "--flow-starts", ",".join(str(i * a.start_gap_s) for i in range(len(schemes))),
                "--flow-stops", ",".join(str(x) for x in getattr(a, "stop_list", None)
                                         or [0.0] * len(schemes)),
                "--json", str(out / "worker.json")]
        wp = subprocess.Popen(wcmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                              stderr=(out / "worker.stderr").open("w"))
        procs.append(wp)
        # the worker's JSON is its result; its exit may wait for QUIC draining periods
        deadline = time.monotonic() + a.duration + 90
        while wp.poll() is None and not (out / "worker.json").exists():
            if time.monotonic() > deadline:
                raise StartError("the worker did not finish in time")
            time.sleep(0.2)
        if wp.poll() not in (None, 0):
            raise StartError(f"the worker failed:\n{(out / 'worker.stderr').read_text()[-2000:]}")
        worker = json.loads((out / "worker.json").read_text())
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                _stop(p)
    emu_summary = json.loads((out / "emulator-summary.json").read_text())
    flow_log = json.loads((out / "flows.json").read_text())
    end_ms = worker["stop_us"] / 1000 - emu_summary["base_timestamp_ms"]
    result = analyze(schemes, worker, flow_log, emu_summary, trace, end_ms)
    result["after_leave"] = after_leave(worker, flow_log, emu_summary["base_timestamp_ms"],
                                        end_ms)
    servers = {k: server_session_summaries(out / f"server-{k}.stderr") for k in kinds}
    logs = switch_logs(out, kinds)
    base_ms = emu_summary["base_timestamp_ms"]
    for f, info in zip(result["flows"], worker["flows"], strict=True):
        log = logs.get(_upstream_of(flow_log, info), [])
        f["switches"] = len(log)
        # as the simulator's: [t_s on the run's clock (the emulator log's), mode]
        f["switch_log"] = [[None if t is None else round((t / 1000 - base_ms) / 1000, 3), m]
                           for t, m in log]
    result.update({
        "mode": "emulator",
        "switch": a.switch,
        "switch_mode": getattr(a, "switch_mode", "unrestricted"),
        "switch_rule": getattr(a, "switch_rule", None),
        "sender_cc": getattr(a, "sender_cc", None),
        "duration_s": a.duration,
        "start_gap_s": a.start_gap_s,
        "queue_packets": a.queue_packets,
        "loss": getattr(a, "loss", 0.0),
        "trace": str(a.trace) if a.trace else f"constant {a.link_mbps} Mbps",
        "errors": worker["errors"] + [e for f in result["flows"] for e in f["errors"]],
        "emulator": {k: emu_summary.get(k) for k in (
            "valid", "invalid_reasons", "lateness_ms", "cpu_s", "loss_rate", "utilization",
            "queuing_delay_ms")},
        "servers": servers,
        "worker_cpu_s": worker["cpu_s"],
        "worker_late_s": worker["late_s"],
    })
    return result


RECOVER_S = 5.0
"""Issue 18: a flow's queuing delay is back down within this long after a competitor left."""


def after_leave(worker: dict[str, Any], flow_log: dict[str, Any], base_ms: float,
                end_ms: float) -> list[dict[str, Any]]:
    """For each flow that left before the end (``--stop-s``), the others' queuing delay at
    the bottleneck (their packets', ms) in the :data:`RECOVER_S` after it left
    (``p95_ms_first_5s``) and from then to the end or their own leave (``p95_ms_after_5s``,
    issue 18's "back under max(50 ms, 1.2× the oracle's) within 5 s"; the oracle's is about
    0 on a constant link). Times on the emulator log's clock (ms); [] when no flow left."""
    by_port = {int(f["client"].rsplit(":", 1)[1]): f for f in flow_log["flows"]}
    stopped = {i["i"]: i["stopped_us"] / 1000 - base_ms for i in worker["flows"]
               if i.get("stopped_us")}
    out = []
    for j, leave_ms in sorted(stopped.items()):
        others = []
        for info in worker["flows"]:
            f = by_port.get(info.get("local_port", -1))
            if info["i"] == j or f is None:
                continue
            until = min(end_ms, stopped.get(info["i"], end_ms))
            mid = leave_ms + RECOVER_S * 1000

            def p95(a: float, b: float, f: dict[str, Any] = f) -> float | None:
                qd = [q for t, q in zip(f["depart_ms"], f["queue_delay_ms"], strict=True)
                      if a <= t < b]
                return round(percentile(qd, 95), 1) if qd else None

            others.append({"i": info["i"], "scheme": info["scheme"],
                           "p95_ms_first_5s": p95(leave_ms, mid),
                           "p95_ms_after_5s": p95(mid, until),
                           "after_5s_s": round(max(0.0, until - mid) / 1000, 1)})
        out.append({"i": j, "scheme": worker["flows"][j]["scheme"],
                    "leave_s": round(leave_ms / 1000, 2), "flows": others})
    return out


def _upstream_of(flow_log: dict[str, Any], info: dict[str, Any]) -> int:
    for f in flow_log["flows"]:
        if int(f["client"].rsplit(":", 1)[1]) == info.get("local_port"):
            return int(f["upstream_port"])
    return -1


def switch_logs(out: Path, kinds: list[str]) -> dict[int, list[tuple[int | None, str]]]:
    """Each flow's switches, keyed by its peer port at the server: (``t_us`` on the server's
    monotonic clock, or None from a line without it; the mode switched to), from the
    servers' ``controller switch peer_port=P session=S to=MODE t_us=T ...`` lines (a flow's
    switch count is the length of its list)."""
    logs: dict[int, list[tuple[int | None, str]]] = {}
    for k in kinds:
        path = out / f"server-{k}.stderr"
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            if "controller switch" in line and "peer_port=" in line:
                words = line.split("controller switch", 1)[1].split()
                fields = dict(w.split("=", 1) for w in words if "=" in w)
                t = fields.get("t_us", "")
                logs.setdefault(int(fields["peer_port"]), []).append(
                    (int(t) if t.isdigit() else None, fields.get("to", "?")))
    return logs
