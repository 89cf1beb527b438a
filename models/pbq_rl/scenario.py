"""PBQ's reward and trace split (docs/PBQ.md "Reward", "Training"); no gymnasium or torch, so
CI (the main .venv) tests them."""

from __future__ import annotations

from pathlib import Path

from nuwa_server.cc.pbq import PbqInterval

REPO_ROOT = Path(__file__).resolve().parents[2]
LOSS_WEIGHT = 5.0
"""U's loss coefficient (Orca's; docs/PBQ.md "Reward")."""
RTT_THRESHOLD = 1.25
"""The delay constraint: latest RTT ≤ this × min RTT (Orca's delay-aware factor)."""
RTT_PENALTY = 1.0
"""Penalty per unit of latest RTT / min RTT above the threshold."""
FAMILIES = ("3G", "4G", "5G")
"""The repository's trace families (the in-repo dev traces)."""
HELD_OUT_EVERY = 3
"""Every third dev trace (sorted by path, from the third) is held out of training."""


def reward(iv: PbqInterval, rtt_threshold: float = RTT_THRESHOLD) -> float:
    """The reward of one closed interval (docs/PBQ.md "Reward", the paper's linear utility
    under an RTT constraint): ``U = delivery_rate / max_delivery_rate − 5 · loss_rate``, less
    ``1 · (latest_RTT / min_RTT − rtt_threshold)`` when that is positive (``rtt_threshold``:
    default :data:`RTT_THRESHOLD`, 1.25). 0 while no delivery rate is known; U alone while no
    RTT is."""
    if iv.max_delivery_rate_bytes_per_s <= 0:
        return 0.0
    u = iv.delivery_rate_bytes_per_s / iv.max_delivery_rate_bytes_per_s - LOSS_WEIGHT * iv.loss_rate
    if iv.min_rtt_s <= 0:
        return u
    excess = iv.latest_rtt_s / iv.min_rtt_s - rtt_threshold
    return u - RTT_PENALTY * excess if excess > 0 else u


def split_traces(root: Path = REPO_ROOT) -> tuple[list[Path], list[Path]]:
    """(training, held-out) dev traces: sorted by path; index i % 3 == 2 held out."""
    every = sorted(p for f in FAMILIES for p in (root / "traces" / f).glob("*.mahi"))
    if not every:
        raise FileNotFoundError(f"no traces under {root / 'traces'}")
    held = [p for i, p in enumerate(every) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
    return [p for p in every if p not in held], held
