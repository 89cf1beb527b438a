"""Live switching of a connection's congestion controller (issue 18 item 1).

A QUIC connection's controller (aioquic's ``QuicPacketRecovery._cc``) is replaced by a
new instance of another registered controller, mid-connection, in one of the two modes
the seed paper on DRL-based CCA switching defines (issue 18's fourth seed, §4 "CCA
switching": "Unrestricted switching
allows the new CCA to inherit all CCA-related variables, encompassing connection-level
variables (such as congestion window/sending rate and RTT-related values), and private
state variables of the CCA (e.g., minimum RTT, CWND increment, etc.). Limited switching,
on the other hand, only inherits connection-level variables."):

* both modes keep the connection-level state: bytes in flight (the accounting of packets
  already sent, which aioquic keeps inside the controller), the
  congestion window and ssthresh (Linux ``tcp_set_congestion_control`` keeps both in
  ``tcp_sock``), and the RTT estimator (smoothed RTT, variance, min RTT), which aioquic
  keeps in the recovery object and which the swap does not touch;
* **limited** starts the new controller's private state from its defaults (Linux zeroes
  ``icsk_ca_priv``; a new BBR starts in Startup with no min RTT or bandwidth sample);
* **unrestricted** also carries private state: attributes the two controllers share by
  name (Cubic → the Nuwa ceiling, a Cubic subclass: W_max, K, epoch, cwnd increment;
  BBR → BBR: everything), the delivery-rate state (BBR's per-packet delivery snapshots
  and counters, ``rate_sample.DeliveryRateSampler``), and into a fresh BBR the min RTT
  (Linux ``bbr_init`` seeds it from ``tcp_min_rtt()``) with the bandwidth in use
  (cwnd ÷ smoothed RTT) as its first max-bandwidth sample, leaving Startup as a full pipe.

Sans-I/O: the caller passes ``now_s`` (aioquic's loop time, s); nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from aioquic.quic.congestion.base import QuicCongestionControl, create_congestion_control
from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.recovery import QuicPacketRecovery

from .bbr_model import BbrState
from .pacing import install_controller_pacer

SwitchMode = Literal["unrestricted", "limited"]
SWITCH_MODES: tuple[SwitchMode, ...] = ("unrestricted", "limited")

CONNECTION_LEVEL = ("bytes_in_flight", "congestion_window", "ssthresh")
"""Controller attributes both modes carry (module doc)."""

NEVER_COPIED = frozenset({"_max_datagram_size", "_mss", "_mss_bytes", "_rng", "_rtt_monitor",
                          "additive_increase_factor", "_initial_cwnd"})
"""Attributes an unrestricted switch does not copy by name: configuration of the new
instance (its MSS, its random source), not state."""


@dataclass(frozen=True, slots=True)
class SwitchRecord:
    """What one switch did, for logs and tests.

    Attributes:
        now_s: when, s (the caller's clock).
        from_cc / to_cc: registered controller names (``type(cc).__name__`` when the old
            one has no registered name).
        mode: ``unrestricted`` or ``limited``.
        carried: attribute names copied into the new controller, sorted.
        congestion_window_bytes: the new controller's window right after the switch.
        bytes_in_flight: bytes in flight carried over.
    """

    now_s: float
    from_cc: str
    to_cc: str
    mode: SwitchMode
    carried: tuple[str, ...]
    congestion_window_bytes: int
    bytes_in_flight: int
    seeded: dict[str, float] = field(default_factory=dict)


def _names(cc: object) -> dict[str, Any]:
    """Instance attributes, slots included."""
    out = dict(getattr(cc, "__dict__", {}))
    for klass in type(cc).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if hasattr(cc, name):
                out[name] = getattr(cc, name)
    return out


def switch_controller(loss: QuicPacketRecovery, to_cc: str, mode: SwitchMode, now_s: float,
                      *, max_datagram_size: int | None = None,
                      from_name: str | None = None) -> SwitchRecord:
    """Replace ``loss._cc`` by a new ``to_cc`` controller, carrying state by ``mode``.

    Args:
        loss: the connection's recovery (``QuicConnection._loss``).
        to_cc: a name registered with aioquic (``cubic``, ``reno``, ``bbr``,
            ``nuwa_ceiling``, ...).
        mode: ``unrestricted`` or ``limited`` (module doc).
        now_s: the caller's time, s.
        max_datagram_size: the new controller's MSS, bytes (default: the pacer's).
        from_name: the old controller's name for the record (default: its class name).

    Returns:
        The :class:`SwitchRecord`.

    Raises:
        ValueError: an unknown mode or controller name.
    """
    if mode not in SWITCH_MODES:
        raise ValueError(f"mode must be one of {SWITCH_MODES}, got {mode!r}")
    mss = max_datagram_size or loss._pacer._max_datagram_size
    try:
        new = create_congestion_control(to_cc, max_datagram_size=mss)
    except Exception as exc:  # aioquic raises a bare Exception for an unknown name
        raise ValueError(str(exc)) from None
    old: QuicCongestionControl = loss._cc
    carried: list[str] = []
    seeded: dict[str, float] = {}
    old_state = _names(old)
    if mode == "unrestricted":
        new_state = _names(new)
        for name, value in old_state.items():
            if name in new_state and name not in NEVER_COPIED and name not in CONNECTION_LEVEL:
                setattr(new, name, value)
                carried.append(name)
        if hasattr(new, "_sampler") and "_sampler" not in carried:
            seeded.update(_seed_bbr(new, loss, old, now_s))
    for name in CONNECTION_LEVEL:
        if name in old_state and hasattr(new, name):
            setattr(new, name, old_state[name])
            carried.append(name)
    if getattr(new, "ssthresh", 0) is None and hasattr(new, "_W_max") and mode == "unrestricted" \
            and getattr(old, "full_bw_reached", False):
        # BBR → Cubic past Startup: no slow start from the inherited window (Cubic's
        # congestion avoidance from W_max = cwnd, RFC 9438 §4.2 with no loss yet)
        new.ssthresh = new.congestion_window
        new._W_max = new.congestion_window  # type: ignore[attr-defined]
        seeded["ssthresh"] = new.congestion_window
    loss._cc = new
    # the pacer follows the controller: BBR's own rate, else aioquic's cwnd / sRTT pacer
    if not install_controller_pacer(loss):
        from aioquic.quic.recovery import QuicPacketPacer

        if type(loss._pacer) is not QuicPacketPacer:
            loss._pacer = QuicPacketPacer(max_datagram_size=mss)
    return SwitchRecord(now_s, from_name or type(old).__name__, to_cc, mode,
                        tuple(sorted(carried)), int(new.congestion_window),
                        int(new.bytes_in_flight), seeded)


def _seed_bbr(new: Any, loss: QuicPacketRecovery, old: object, now_s: float) -> dict[str, float]:
    """Unrestricted switch into BBR from another family: its min RTT from the connection's
    (Linux ``bbr_init``: ``bbr->min_rtt_us = tcp_min_rtt(tp)``) and, when the old
    controller had left slow start, the bandwidth in use (cwnd ÷ smoothed RTT, bytes/s) as
    the first max-bandwidth sample with the pipe marked full (BBRCheckFullBWReached), so
    the new BBR enters Drain → ProbeBW instead of doubling its rate again. A window that was
    not in use is not bandwidth in use: from the Nuwa ceiling, whose window only caps the
    grants' (after a probe back to receiver-driven it still held the Cubic stint's 695 kB
    while the grants allowed a tenth of it), the window counted is at most its pipeACK, the
    most bytes acknowledged in one round of the last max(3 RTT, 1 s) (RFC 7661 §4.2); with
    the stint's window as the seed, the new BBR took 0.74–0.88 of the link from a BBR
    download end to end (docs/BENCHMARKS.md, fifty-second session)."""
    out: dict[str, float] = {}
    rtt_min = float(loss._rtt_min) if loss._rtt_initialized else 0.0
    if rtt_min > 0:
        new.min_rtt_s = rtt_min
        new._min_rtt_stamp_s = now_s
        new._probe_rtt_min_delay_s = rtt_min
        new._probe_rtt_min_stamp_s = now_s
        out["min_rtt_s"] = rtt_min
    ssthresh = getattr(old, "ssthresh", None)
    srtt = float(loss._rtt_smoothed) if loss._rtt_initialized else 0.0
    if ssthresh is not None and srtt > 0:
        window = float(getattr(old, "congestion_window", 0))
        pipeack = getattr(old, "pipeack_bytes", None)  # the Nuwa ceiling's (RFC 7661 §4.2)
        if callable(pipeack) and (in_use := float(pipeack(now_s))) > 0:
            window = min(window, in_use)
            out["pipeack_bytes"] = in_use
        bw = window / srtt
        new._max_bw.update(bw)
        new.max_bw_bytes_per_s = new._max_bw.best_bytes_per_s
        new.bw_bytes_per_s = new.max_bw_bytes_per_s
        new.full_bw_reached = True
        new._full_bw = bw
        new._first_rtt_seen = True
        new._set_state(BbrState.DRAIN)  # BBREnterDrain: the pipe is full
        new._set_pacing_rate(new.pacing_gain)
        out["max_bw_bytes_per_s"] = bw
    return out


CUBIC_RESTORED = ("congestion_window", "ssthresh", "_W_max", "_W_est", "_cwnd_epoch", "K",
                  "_first_slow_start", "_starting_congestion_avoidance")
"""The Cubic state :func:`restore_after_probe` brings back (aioquic's
``CubicCongestionControl`` names; ``_t_epoch`` is shifted, not copied)."""


def restore_after_probe(loss: QuicPacketRecovery, saved: QuicCongestionControl,
                        saved_at_s: float, now_s: float) -> dict[str, float]:
    """After a failed probe, give the sender-driven controller back the window the probe set
    aside.

    A probe (receiver-driven again after a sender-driven stint, :mod:`..switch_policy`) is an
    experiment: "has the competitor left?". While it runs the receiver's grants bind, and
    next to a buffer filler they shrink to a few packets; the Cubic ceiling under them
    follows the flight in use down (:mod:`..ceiling`, RFC 7661 §4.3). When the probe fails
    the switch back hands Cubic that small window, and next to a Cubic holding a full deep
    queue (RTT 0.6 s) two Cubics converge over tens of seconds: end to end the flow regrew
    from 0.1 to 3–5 Mbit/s of a 15 Mbit/s link over the 25 s after the probe (docs/
    BENCHMARKS.md, forty-first session). The probe measured nothing about the share the
    stint had reached, so, as BBR restores the window it saved before ProbeRTT
    (draft-ietf-ccwg-bbr's BBRSaveCwnd and BBRRestoreCwnd: cwnd = max(cwnd,
    prior_cwnd)), the window and Cubic's private state come back from ``saved`` (the
    controller the probe replaced) when its window is the larger; Cubic's epoch moves forward
    by the time the probe took (``now_s − saved_at_s``), since Cubic's t does not count time
    the window was not in use (RFC 9438 §5.8). ``bytes_in_flight`` and the recovery period
    stay the current controller's (the connection's accounting, :data:`CONNECTION_LEVEL`).

    Args:
        loss: the connection's recovery, whose ``_cc`` is the sender-driven controller just
            installed by :func:`switch_controller`.
        saved: the sender-driven controller the probe replaced.
        saved_at_s / now_s: when the probe began and now, s (the caller's clock).

    Returns:
        What was restored (name → value); empty when nothing was: ``saved`` is not of the
        current controller's Cubic type, or its window was not the larger.

    Raises:
        ValueError: ``now_s`` before ``saved_at_s``.
    """
    if now_s < saved_at_s:
        raise ValueError(f"now_s {now_s} is before saved_at_s {saved_at_s}")
    cc = loss._cc
    if type(cc) is not type(saved) or not isinstance(cc, CubicCongestionControl) \
            or not isinstance(saved, CubicCongestionControl):
        return {}
    if saved.congestion_window <= cc.congestion_window:
        return {}
    out: dict[str, float] = {}
    for name in CUBIC_RESTORED:
        value = getattr(saved, name)
        setattr(cc, name, value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    cc._t_epoch = saved._t_epoch + (now_s - saved_at_s)  # RFC 9438 §5.8: t skips the probe
    out["_t_epoch"] = cc._t_epoch
    return out
