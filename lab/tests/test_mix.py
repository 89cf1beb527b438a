"""./nuwa mix (lab/nuwa_lab/mix): the analysis of the emulator's per-flow log, the switch
count from the servers' logs, the command line. New module: these fail before it (import)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.emulator import constant_rate_trace
from nuwa_lab.mix.cli import main
from nuwa_lab.mix.run import SCHEME_SERVER_ARGS, analyze, switch_counts


def flow(port: int, upstream: int, rate_bps: float, start_ms: float, end_ms: float,
         qd_ms: float) -> dict:
    """A flow log entry: 1350-byte packets at ``rate_bps`` from start to end."""
    gap = 1350 * 8 / rate_bps * 1000
    n = int((end_ms - start_ms) / gap)
    return {"route": 0, "listen_port": 1, "server": "s", "client": f"127.0.0.1:{port}",
            "delivered_bytes": 1350 * n, "dropped_bytes": 2700, "upstream_port": upstream,
            "depart_ms": [start_ms + k * gap for k in range(n)], "size_bytes": [1350] * n,
            "queue_delay_ms": [qd_ms] * n}


def test_analyze_reads_each_flow_from_the_emulators_log() -> None:
    """Flow i is matched by its client port; its start is its connect time on the log's
    clock; shares, Jain over the last 20 s, starvation and p95 queuing delay follow the
    simulator's definitions."""
    base_ms = 1_000_000
    log = {"flows": [flow(5001, 7001, 9e6, 100, 40_000, 300),
                     flow(5000, 7000, 0.5e6, 0, 40_000, 310)]}
    worker = {"flows": [{"i": 0, "scheme": "nuwa", "local_port": 5000, "errors": [],
                         "connected_us": base_ms * 1000},
                        {"i": 1, "scheme": "cubic", "local_port": 5001, "errors": [],
                         "connected_us": (base_ms + 100) * 1000}]}
    out = analyze(["nuwa", "cubic"], worker, log, {"base_timestamp_ms": base_ms},
                  constant_rate_trace(10e6), 40_000)
    nuwa, cubic = out["flows"]
    assert nuwa["goodput_bps"] == pytest.approx(0.5e6, rel=0.02)
    assert cubic["goodput_bps"] == pytest.approx(9e6, rel=0.02)
    assert nuwa["share"] == pytest.approx(0.5 / 9.5, rel=0.02)
    assert nuwa["queuing_delay_ms"]["p95"] == 310 and cubic["start_s"] == pytest.approx(0.1)
    assert nuwa["starved_s"] > 30 and cubic["starved_s"] == 0
    assert out["jain_index"] == pytest.approx(9.5**2 / (2 * (81 + 0.25)), rel=0.02)
    with pytest.raises(KeyError, match="never reached"):
        analyze(["nuwa"], {"flows": [{"i": 0, "scheme": "nuwa", "errors": ["x"]}]}, log,
                {"base_timestamp_ms": 0}, constant_rate_trace(10e6), 1000)


def test_switches_are_counted_per_peer_port(tmp_path: Path) -> None:
    (tmp_path / "server-nuwa.stderr").write_text(
        "INFO controller switch peer_port=7000 session=a to=sender\n"
        "INFO something else peer_port=7000\n"
        "INFO controller switch peer_port=7000 session=a to=receiver\n"
        "INFO controller switch peer_port=7002 session=b to=sender\n")
    assert switch_counts(tmp_path, ["nuwa", "cubic"], {"flows": []}) == {7000: 2, 7002: 1}


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    j = str(tmp_path / "x.json")
    for argv, msg in ((["--flows", "nuwa,vegas", "--link-mbps", "10"], "unknown scheme"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--start-gap-s", "30"],
                       "start-gap"),
                      (["--flows", "nuwa", "--link-mbps", "50"], "over 20")):
        with pytest.raises(SystemExit) as e:
            main([*argv, "--duration", "20", "--json", j])
        assert e.value.code == 2 and msg in capsys.readouterr().err
    assert SCHEME_SERVER_ARGS["pbq"] == ["--cc", "pbq"]  # Cubic vs PBQ (issue 18's shares)


def test_sim_writes_the_same_report(tmp_path: Path) -> None:
    """--sim: the sender-side simulator's report, with switches per flow."""
    j = tmp_path / "sim.json"
    assert main(["--sim", "--flows", "cubic,reno", "--link-mbps", "10", "--duration", "8",
                 "--start-gap-s", "1", "--json", str(j)]) == 0
    r = json.loads(j.read_text())
    assert r["mode"] == "sim" and [f["scheme"] for f in r["flows"]] == ["cubic", "reno"]
    for k in ("goodput_bps", "share", "queuing_delay_ms", "switches", "starved_s"):
        assert all(k in f for f in r["flows"])
    assert 0 < r["jain_index"] <= 1 and r["utilization"] > 0.8


def test_the_worker_runs_a_nuwa_and_a_plain_flow(tmp_path: Path) -> None:
    """The mix's receivers against two in-process servers (no emulator): the Nuwa flow is
    driven by the real controller through the bridge (its server accepts grants), the Cubic
    flow only reads; each reports its local port, connect time and no errors."""
    import argparse
    import asyncio
    import time

    from wt_harness import running_server

    from nuwa_lab.mix.worker import MixWorker

    async def main() -> tuple[dict, list, list]:
        async with running_server(tmp_path / "a", cc="nuwa") as nuwa, \
                running_server(tmp_path / "b", cc="cubic") as cubic:
            a = argparse.Namespace(
                cc="{}", flow_schemes="nuwa,cubic", flow_ports=f"{nuwa.port},{cubic.port}",
                flow_starts="0,0.3", start_at=time.monotonic() + 0.5, duration=2.0)
            res = await MixWorker(a).run()
            return res, nuwa.context.recent_sessions(), cubic.context.recent_sessions()

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    res, nuwa_sessions, cubic_sessions = asyncio.run(main())
    assert res["errors"] == []
    f0, f1 = res["flows"]
    assert (f0["scheme"], f1["scheme"]) == ("nuwa", "cubic")
    assert f0["errors"] == [] and f1["errors"] == []
    assert f0["receiver_bytes"] > 50_000 and f1["receiver_bytes"] > 50_000
    assert f1["connected_us"] - f0["connected_us"] > 200_000  # the start gap
    assert f0["local_port"] != f1["local_port"]
    assert nuwa_sessions[0].grants.grants_accepted > 10
    assert cubic_sessions[0].grants.grants_accepted == 0
