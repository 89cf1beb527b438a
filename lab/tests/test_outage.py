"""outage.py: recovery figures from a hand-written emulator log (known answers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.outage import main, outage_recovery

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def _log(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "emulator.log"
    p.write_text("# base timestamp: 1000\n" + "".join(f"{ln}\n" for ln in lines))
    return p


def _link(opps: range, served: set[int], drops: tuple[int, ...] = ()) -> list[str]:
    """One opportunity per ms in ``opps``; a 1504-byte packet arrives and leaves at each
    ``served`` ms (delay 0); a refused packet at each ``drops`` ms."""
    out = []
    for t in opps:
        if t in served:
            out.append(f"{t} + 1504")
        if t in drops:
            out += [f"{t} + 1504", f"{t} d 1504"]
        out.append(f"{t} # 1504")
        if t in served:
            out.append(f"{t} - 1504 0")
    return out


def test_time_to_80pct_counts_from_the_first_opportunity_after_the_gap(tmp_path: Path) -> None:
    before = range(0, 1000)
    after = range(7000, 10000)  # 6 s outage: last opportunity 999, next 7000
    # after the outage: idle for the first 500 ms, 50 % in the next 250 ms, then full
    served = set(before) | {t for t in range(7500, 7750) if t % 2 == 0} | set(range(7750, 10000))
    r = outage_recovery(_log(tmp_path, _link(before, served) + _link(after, served, (7800,))),
                        bin_ms=250, min_gap_ms=5000, after_s=3)
    assert (r["outage_start_ms"], r["outage_end_ms"]) == (999, 7000)
    assert r["outage_s"] == pytest.approx(6.001)
    utils = [b["utilization"] for b in r["bins"]]
    assert utils[:4] == [0.0, 0.0, 0.5, 1.0]
    assert r["time_to_80pct_s"] == pytest.approx(1.0)  # end of the 4th bin
    assert r["utilization_first_3s"] == pytest.approx((125 + 2250) / 3000)
    assert r["drops_after"] == 1 and r["drops_during"] == 0
    assert r["queuing_delay_max_ms_after"] == 0


def test_never_reaching_80pct_is_none(tmp_path: Path) -> None:
    served = set(range(0, 1000)) | {t for t in range(7000, 9000) if t % 2 == 0}
    r = outage_recovery(_log(tmp_path, _link(range(0, 1000), served) + _link(range(7000, 9000),
                                                                            served)), after_s=2)
    assert r["time_to_80pct_s"] is None


def test_no_outage_and_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    log = _log(tmp_path, _link(range(0, 3000), set(range(0, 3000))))
    with pytest.raises(ValueError, match="no outage: longest gap"):
        outage_recovery(log)
    with pytest.raises(ValueError, match="must be > 0"):
        outage_recovery(log, bin_ms=0)
    assert main(["--log", str(log)]) == 2
    assert main(["--log", str(tmp_path / "missing.log")]) == 2
