"""./nuwa mix (lab/nuwa_lab/mix): the analysis of the emulator's per-flow log, the switch
count from the servers' logs, the command line. New module: these fail before it (import)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.emulator import constant_rate_trace
from nuwa_lab.mix.cli import main
from nuwa_lab.mix.run import (
    SCHEME_SERVER_ARGS,
    after_leave,
    analyze,
    switch_logs,
)

pytestmark = pytest.mark.quiet  # measures timing or shares: after the computation lane (conftest)


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


def test_after_leave_gives_the_others_delay_in_the_5_s_after_and_from_then() -> None:
    """--stop-s: flow 1 leaves at 20 s (log clock); flow 0's packets before 20 s are not
    counted, those of 20–25 s make ``p95_ms_first_5s``, the rest ``p95_ms_after_5s``."""
    base_ms = 1_000_000
    f0 = flow(5000, 7000, 5e6, 0, 40_000, 0)
    f0["queue_delay_ms"] = [900.0 if t < 22_000 else 20.0 for t in f0["depart_ms"]]
    log = {"flows": [f0, flow(5001, 7001, 5e6, 0, 20_000, 900)]}
    worker = {"flows": [{"i": 0, "scheme": "nuwa", "local_port": 5000},
                        {"i": 1, "scheme": "cubic", "local_port": 5001,
                         "stopped_us": (base_ms + 20_000) * 1000}]}
    (left,) = after_leave(worker, log, base_ms, 40_000)
    assert (left["i"], left["scheme"], left["leave_s"]) == (1, "cubic", 20.0)
    (o,) = left["flows"]
    assert o["i"] == 0 and o["p95_ms_first_5s"] == 900 and o["p95_ms_after_5s"] == 20
    assert o["after_5s_s"] == 15.0
    # the figures count a flow's life: the leaver does not starve after it left, the
    # fairness window is the 20 s before the leave (equal rates there: Jain 1)
    for f in worker["flows"]:
        f.update({"errors": [], "connected_us": base_ms * 1000})
    out = analyze(["nuwa", "cubic"], worker, log, {"base_timestamp_ms": base_ms},
                  constant_rate_trace(10e6), 40_000)
    nuwa, cubic = out["flows"]
    assert cubic["end_s"] == 20.0 and nuwa["end_s"] == 40.0
    assert cubic["starved_s"] == 0 and nuwa["starved_s"] == 0
    assert cubic["goodput_bps"] == pytest.approx(5e6, rel=0.02)
    assert out["jain_index"] == pytest.approx(1.0, abs=0.01)
    worker["flows"][1].pop("stopped_us")
    assert after_leave(worker, log, base_ms, 40_000) == []
    cubic = analyze(["nuwa", "cubic"], worker, log, {"base_timestamp_ms": base_ms},
                    constant_rate_trace(10e6), 40_000)["flows"][1]
    assert cubic["starved_s"] >= 19  # the same log read as a flow that stayed: it starved


def test_jain_over_time_counts_the_flows_present_and_the_figure_is_written(
        tmp_path: Path) -> None:
    """Windows of 5 whole seconds: before the second flow's start only one flow (no point);
    equal rates 1.0; after flow 1 left (``after_leave``), no point again."""
    from nuwa_lab.mix.plot import jain_over_time, plot_mix

    result = {"flows": [
        {"scheme": "nuwa", "start_s": 0.0, "share": 0.5, "switches": 2,
         "switch_log": [[12.0, "sender"], [31.5, "receiver"], [None, "sender"]],
         "throughput_bps_1s": [5e6] * 40},
        {"scheme": "cubic", "start_s": 5.0, "share": 0.5, "switches": 0,
         "throughput_bps_1s": [0] * 5 + [5e6] * 10 + [1e6] * 15 + [0] * 10}],
        "after_leave": [{"i": 1, "scheme": "cubic", "leave_s": 30.0, "flows": []}]}
    jt = jain_over_time(result)
    assert [t for t, _ in jt] == [float(t) for t in range(10, 31)]
    assert jt[0][1] == pytest.approx(1.0)
    assert jt[-1][1] == pytest.approx(36 / (2 * 26))  # 5 and 1 Mbit/s
    with pytest.raises(ValueError):
        jain_over_time(result, 0)
    png = plot_mix(result, tmp_path / "f" / "mix.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_switches_are_counted_per_peer_port(tmp_path: Path) -> None:
    (tmp_path / "server-nuwa.stderr").write_text(
        "INFO controller switch peer_port=7000 session=a to=sender t_us=5000000 "
        "from_cc=nuwa_ceiling evidence={'samples': 60, 'min_ms': 51.0}\n"
        "INFO something else peer_port=7000\n"
        "INFO controller switch peer_port=7000 session=a to=receiver\n"
        "INFO controller switch peer_port=7002 session=b to=sender\n")
    counts = {port: len(log) for port, log in switch_logs(tmp_path, ["nuwa", "cubic"]).items()}
    assert counts == {7000: 2, 7002: 1}
    assert switch_logs(tmp_path, ["nuwa"])[7000] == [(5_000_000, "sender"), (None, "receiver")]


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    j = str(tmp_path / "x.json")
    for argv, msg in ((["--flows", "nuwa,vegas", "--link-mbps", "10"], "unknown scheme"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--start-gap-s", "30"],
                       "start-gap"),
                      (["--flows", "nuwa", "--link-mbps", "50"], "over 20"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--stop-s", "0"],
                       "1 values for 2 flows"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--start-gap-s", "5",
                        "--stop-s", "0,4"], "flow 1 must stop after its start"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--stop-s", "0,x"],
                       "not numbers"),
                      (["--sim", "--flows", "nuwa,cubic", "--link-mbps", "10", "--stop-s",
                        "0,10"], "end to end only"),
                      (["--sim", "--flows", "nuwa,cubic", "--link-mbps", "10",
                        "--switch-mode", "limited"], "--switch-mode: end to end only"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--switch-rule",
                        '{"min_samples": 5}'], "--switch-rule needs --switch"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--switch", "rule",
                        "--switch-rule", '{"min_sample": 5}'], "unknown field(s) ['min_sample']"),
                      (["--flows", "nuwa,cubic", "--link-mbps", "10", "--switch", "rule",
                        "--switch-rule", "[1]"], "must be a JSON object"),
                      (["--flows", "pbq,pbq", "--link-mbps", "10", "--loss", "0.6"],
                       "--loss must be in [0, 0.5]"),
                      (["--flows", "pbq,pbq", "--link-mbps", "10", "--loss", "-0.01"],
                       "--loss must be in [0, 0.5]")):
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


def test_random_loss_reaches_the_emulator_and_the_simulator(tmp_path: Path) -> None:
    """--loss (PBQ's Fig. 9-10 setting): the emulator gets it with the seed, none at 0; the
    simulator drops packets at that rate, so Cubic carries less than without loss."""
    from argparse import Namespace

    from nuwa_lab.mix.run import loss_args

    assert loss_args(Namespace(loss=0.025, seed=3)) == ["--loss", "0.025", "--seed", "3"]
    assert loss_args(Namespace(loss=0.0, seed=3)) == [] == loss_args(Namespace())
    got = {}
    for loss in (0.0, 0.02):
        j = tmp_path / f"sim-{loss}.json"
        assert main(["--sim", "--flows", "cubic", "--link-mbps", "10", "--queue-packets", "100",
                     "--duration", "10", "--loss", str(loss), "--json", str(j)]) == 0
        r = json.loads(j.read_text())
        assert r["loss"] == loss
        got[loss] = r["flows"][0]["goodput_bps"]
    assert got[0.02] < 0.8 * got[0.0]


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
                flow_starts="0,0.3", flow_stops="0,1.5", start_at=time.monotonic() + 0.5,
                duration=2.5)
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
    # --stop-s: the Cubic flow left at 1.5 s of the run's 2.5, the Nuwa flow ran to the end
    assert "stopped_us" not in f0
    assert f1["stopped_us"] - res["start_us"] == pytest.approx(1.5e6, abs=0.2e6)
    assert f0["local_port"] != f1["local_port"]
    assert nuwa_sessions[0].grants.grants_accepted > 10
    assert cubic_sessions[0].grants.grants_accepted == 0


def test_replay_finds_the_leave_in_recorded_grants(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """python -m nuwa_lab.mix.replay: grants as the server logs them, the run's switch lines;
    sender-driven from 1 s at 5 Mbit/s behind a 1 s queue, then 10 Mbit/s at 450 ms from 12 s:
    the shipped rule's evidence comes at 14 s (the last three whole bins, two of them at the
    new rate, average 1.67× the median); with the early probe off, none; bad input exits 2."""
    from nuwa_lab.mix.replay import first_evidence, main, read_run
    from nuwa_server.switch_policy import RuleConfig

    base_ms = 1000.0
    t0 = int(base_ms * 1000)
    rows, cum = [], 0
    for k in range(400):  # 20 s of grants, every 50 ms
        t = t0 + k * 50_000
        fast = t >= t0 + 12_000_000
        cum += 62_500 if fast else 31_250
        rtt = 50_000 if k == 0 else (500_000 if fast else 1_050_000)
        rows.append({"recv_time_us": t, "accepted": True, "rtt_us": rtt,
                     "echo_send_time_us": t - rtt, "window_in_force_bytes": 60_000,
                     "cum_in_force_bytes": cum})
    (tmp_path / "logs-nuwa" / "s1").mkdir(parents=True)
    (tmp_path / "logs-nuwa" / "s1" / "grants.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "server-nuwa.stderr").write_text(
        f"INFO controller switch peer_port=7000 session=s1 to=sender t_us={t0 + 1_000_000} "
        "from_cc=x\n")
    (tmp_path / "emulator-summary.json").write_text(json.dumps({"base_timestamp_ms": base_ms}))
    grants, switches, base = read_run(tmp_path)
    assert switches == [(t0 + 1_000_000, "sender")] and base == base_ms
    ((start, first),) = first_evidence(grants, switches, RuleConfig())
    assert start == t0 + 1_000_000
    assert first is not None and t0 + 13_900_000 <= first <= t0 + 14_100_000
    assert first_evidence(grants, switches, RuleConfig(leave_rate_factor=None)) == [
        (t0 + 1_000_000, None)]
    assert main([str(tmp_path)]) == 0
    assert "stint from 1.0 s: evidence 14.0 s" in capsys.readouterr().out
    assert main([str(tmp_path), "--config", '{"leave_rate_factor": 1}']) == 2
    assert main([str(tmp_path / "nothing")]) == 2



def test_replay_first_detection_of_a_standing_queue(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """python -m nuwa_lab.mix.replay --first: grants every 50 ms, each echoing a newer frame,
    at a 50 ms RTT (no queue) for 2 s, then 150 ms (a 100 ms standing queue): the rule's first
    detection comes once the queue has stood for Y (3 s) after 2 s, whatever min_samples
    between 4 and 20 (the samples are 20 a second); with the queue floor above the queue,
    never."""
    from nuwa_lab.mix.replay import first_detection, main, read_run
    from nuwa_server.switch_policy import RuleConfig

    base_ms = 1000.0
    t0 = int(base_ms * 1000)
    rows = []
    for k in range(200):  # 10 s
        t = t0 + k * 50_000
        rtt = 50_000 if t < t0 + 2_000_000 else 150_000
        rows.append({"recv_time_us": t, "accepted": True, "rtt_us": rtt,
                     "echo_send_time_us": t - rtt, "window_in_force_bytes": 60_000,
                     "cum_in_force_bytes": 1200 * k})
    (tmp_path / "logs-nuwa" / "s1").mkdir(parents=True)
    (tmp_path / "logs-nuwa" / "s1" / "grants.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "server-nuwa.stderr").write_text("")
    (tmp_path / "emulator-summary.json").write_text(json.dumps({"base_timestamp_ms": base_ms}))
    grants, switches, _ = read_run(tmp_path)
    assert switches == []
    for n in (4, 20):
        at, evidence = first_detection(grants, RuleConfig(min_samples=n))
        assert at is not None and t0 + 5_000_000 <= at <= t0 + 5_200_000, n
        assert evidence["min_ms"] == pytest.approx(100, abs=1)
    assert first_detection(grants, RuleConfig(queue_floor_ms=200)) == (None, {})
    assert main([str(tmp_path), "--first"]) == 0
    assert "first detection: this rule at 5." in capsys.readouterr().out
    # The same grants as a `./nuwa play --competitor ... --switch rule` run keeps them (server/,
    # the switches in events.jsonl): times from the first grant, the run's switch at 6 s.
    play = tmp_path / "play"
    (play / "server" / "s1").mkdir(parents=True)
    (play / "server" / "s1" / "grants.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    (play / "server" / "s1" / "events.jsonl").write_text(
        json.dumps({"event": "switch", "t_us": t0 + 6_000_000, "to_mode": "sender"}) + "\n")
    assert main([str(play), "--first"]) == 0
    out = capsys.readouterr().out
    assert "first detection: this rule at 5." in out and "the run at 6.0 s" in out, out


def test_replay_probes_of_a_play_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """python -m nuwa_lab.mix.replay --probes: a play run's session logs (server/), its
    switches from events.jsonl. Sender-driven from 1 s next to a 700 ms queue, a probe at 21 s
    that reads a frame every 0.6 s at 430 ms and rising (the recorded HSDPA pattern), back at
    41 s in the run: the shipped rule ends it 3 s in (its verdict); without the verdict, not
    before the run did; no logs exits 2."""
    from nuwa_lab.mix.replay import main, probe_ends, read_sessions
    from nuwa_server.switch_policy import RuleConfig

    t0 = 5_000_000_000
    rows: list[dict[str, object]] = []
    cum = 0

    def grant(t: int, qd_us: int, sent_us: int) -> None:
        nonlocal cum
        cum += 1200
        rtt = 50_000 + qd_us
        rows.append({"recv_time_us": t, "accepted": True, "rtt_us": rtt,
                     "echo_send_time_us": sent_us, "window_in_force_bytes": 60_000,
                     "cum_in_force_bytes": cum, "window_bytes": 1200})

    grant(t0, 0, t0 - 50_000)  # the min RTT
    for k in range(1, 420):  # 21 s, every 50 ms: 700 ms of queue
        t = t0 + k * 50_000
        grant(t, 700_000, t - 750_000)
    for j in range(1, 33):  # the probe: a frame every 0.6 s
        t = t0 + 21_000_000 + j * 600_000
        qd = 430_000 + j * 100_000
        grant(t, qd, t - qd - 50_000)
    sess = tmp_path / "server" / "s1"
    sess.mkdir(parents=True)
    (sess / "grants.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (sess / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (
        {"event": "config"},
        {"event": "switch", "t_us": t0 + 1_000_000, "to_mode": "sender"},
        {"event": "switch", "t_us": t0 + 21_000_000, "to_mode": "receiver"},
        {"event": "switch", "t_us": t0 + 41_000_000, "to_mode": "sender"})))
    grants, switches = read_sessions(tmp_path)
    assert [m for _, m in switches] == ["sender", "receiver", "sender"] and len(grants) == 452
    ((start, end, replayed),) = probe_ends(grants, switches, RuleConfig())
    assert (start, end) == (t0 + 21_000_000, t0 + 41_000_000)
    assert replayed is not None and abs(replayed - (t0 + 24_000_000)) <= 100_000
    assert probe_ends(grants, switches, RuleConfig(probe_fail_min_samples=None)) == [
        (t0 + 21_000_000, t0 + 41_000_000, None)]
    assert main(["--probes", str(tmp_path)]) == 0
    assert "probe from 21.0 s: the run went back at 41.0 s, this rule at 24.0 s" in (
        capsys.readouterr().out)
    assert main(["--probes", str(tmp_path / "nothing")]) == 2
