"""The packet train (nuwa_server.packet_train) and the switch rule's veto on it
(nuwa_server.switch_policy, "A lone flow on a near-dark link"): scripted sends and grants."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from switch_inputs import replay_switch_inputs

from nuwa_server.packet_train import PacketTrain, TrainConfig
from nuwa_server.switch_policy import SENDER, RuleConfig

pytestmark = pytest.mark.cpu

MS = 1000
FRAME = 1220


def _send(train: PacketTrain, t0: int, own_ahead: int = 0) -> list[int]:
    """Arm and write a whole train from t0 (frames 100 µs apart); returns the stamps."""
    assert train.arm()
    stamps = [t0 + 100 * i for i in range(train.config.frames)]
    for i, s in enumerate(stamps):
        if i:
            assert train.bypass(s)
        train.on_written(s, own_ahead + i * FRAME, FRAME)
    assert not train.bypass(stamps[-1] + 1)
    return stamps


def test_a_lone_near_dark_link_shows_its_own_queue() -> None:
    """Alone on a link serving a frame per ~200 ms: the first frame waited 250 ms (one
    service time and a bit), the train's frames were read 200 ms apart: about one packet
    ahead, none of them someone else's."""
    tr = PacketTrain()
    s = _send(tr, 1_000_000)
    rx = 5_000_000  # the receiver's clock: any offset
    assert tr.on_grant(1_400_000, s[0], rx + 3 * MS, 3 * MS, 250 * MS) is None
    assert tr.on_grant(1_600_000, s[1], rx + 200 * MS, 0, 450 * MS) is None
    sample = tr.on_grant(1_800_000, s[2], rx + 401 * MS, 1 * MS, 650 * MS)
    assert sample is not None
    assert sample.dispersion_per_frame_us == pytest.approx(200 * MS)
    assert sample.others_packets == pytest.approx(1.25)
    assert (tr.answered, tr.dropped, tr.pending) == (1, 0, False)


def test_a_competitors_standing_queue_shows_hundreds_of_packets() -> None:
    """Next to a buffer filler on a 5 Mbit/s link: the train waited 600 ms behind the
    queue, its frames read 2 ms apart: about 300 packets ahead, less our one outstanding."""
    tr = PacketTrain()
    s = _send(tr, 0, own_ahead=FRAME)
    assert tr.on_grant(700 * MS, s[0], 10_000 * MS, 0, 600 * MS) is None
    sample = tr.on_grant(703 * MS, s[2], 10_004 * MS, 0, 604 * MS)  # frame 1 not echoed alone
    assert sample is not None and sample.others_packets == pytest.approx(300 - 1, rel=0.01)


def test_frames_read_together_count_as_a_fast_link_lost_or_spread_ones_as_nothing() -> None:
    """A fast link delivers the train inside one grant interval: only the last frame is
    echoed, so there is no dispersion to read, and the answer is an infinite count (someone
    else's queue, not ours). A train whose frames never come back is dropped at the timeout;
    one the sender could not write back to back is dropped at once."""
    tr = PacketTrain()
    s = _send(tr, 0)
    assert tr.on_grant(100 * MS, s[0] - 5, 0, 0, 60 * MS) is None  # an older frame: still waiting
    sample = tr.on_grant(101 * MS, s[2], 1 * MS, 0, 61 * MS)
    assert sample is not None and sample.read_together and sample.others_packets == float("inf")
    assert (tr.answered, tr.dropped, tr.pending) == (1, 0, False)
    s = _send(tr, 1_000 * MS)
    assert tr.on_grant(1_000 * MS + tr.config.timeout_us + 1, s[0] - 1, 0, 0, None) is None
    assert (tr.dropped, tr.pending) == (1, False)
    assert tr.arm()
    tr.on_written(5_000 * MS, 0, FRAME)
    assert not tr.bypass(5_000 * MS + tr.config.max_send_gap_us + 1)  # the data came too late
    assert (tr.dropped, tr.pending) == (2, False)
    with pytest.raises(ValueError, match="frames"):
        TrainConfig(frames=1).validate()


def _replay(path: Path, config: RuleConfig | None,
            answer: Callable[[int], tuple[int, float]]) -> tuple[list[tuple[int, str]], int]:
    """Replay recorded rule inputs with trains (switch_inputs.replay_switch_inputs): when the
    rule asks for one, ``answer(t)`` gives (answer time, others_packets). Returns the
    switches and the trains asked for."""
    return replay_switch_inputs(path, config, answer)


DATA = Path(__file__).parent / "data"


def test_a_lone_umts_video_is_not_switched_when_its_trains_find_its_own_queue() -> None:
    """The recorded inputs of a lone Nuwa video on UMTS that the rule switched at 73.5 s
    (docs/BENCHMARKS.md, forty-sixth session): the rule asks for trains once three samples
    in a row are above X, and answers a second later that find the queue our own (1.5
    packets of others: about the service time of our own frame) keep it receiver-driven to
    the end. Without trains, or with answers that find a competitor's queue, it switches as
    before."""
    path = DATA / "switch-inputs-umts-lone-video.txt"
    off, asked = _replay(path, RuleConfig(train_own_packets=None), lambda t: (t, 0.0))
    assert [m for _, m in off] == [SENDER] and 73_000 * MS <= off[0][0] <= 74_000 * MS
    assert asked == 0
    own, asked = _replay(path, None, lambda t: (t + 1_000_000, 1.5))
    assert own == [] and asked >= 3
    others, _ = _replay(path, None, lambda t: (t + 300 * MS, 200.0))
    assert others == off


def test_a_competitors_detection_keeps_its_time_when_trains_find_its_queue() -> None:
    """Next to Cubic (the Verizon recording of test_monitor, where the count of 20 samples
    waits to 21.8 s): trains that find hundreds of packets ahead change nothing, and an answer
    that comes after the condition first holds is waited for (at most Y), then acted on."""
    path = DATA / "switch-inputs-verizon-cubic.txt"
    off, _ = _replay(path, RuleConfig(train_own_packets=None), lambda t: (t, 0.0))
    assert [m for _, m in off][:1] == [SENDER] and 21_000 * MS <= off[0][0] <= 22_500 * MS
    on, asked = _replay(path, None, lambda t: (t + 300 * MS, 150.0))
    assert asked >= 1 and on == off


def test_with_no_answer_the_condition_waits_at_most_y() -> None:
    """The same recording with answers that never come (100 s after each ask): the
    condition holds at 21.8 s with no answer of the last 2 × Y, waits Y for one, and then acts
    as without trains, at about 24.8 s: a train the transport split or a receiver that read
    nothing costs a competitor's detection at most Y."""
    path = DATA / "switch-inputs-verizon-cubic.txt"
    late, _ = _replay(path, None, lambda t: (t + 100_000 * MS, 150.0))
    assert [m for _, m in late][:1] == [SENDER] and 24_700 * MS <= late[0][0] <= 25_000 * MS


def test_a_lying_receivers_echoes_give_no_answer_or_one_that_only_binds_itself() -> None:
    """Echo fields are the receiver's word. Read times that run backwards give no dispersion,
    and a hold larger than the time since the frame left gives no RTT sample (the grant
    state drops it: GrantState.rtt_sample_us), so no queuing delay: no answer either way
    (counted dropped). What a receiver can fake is its own train looking like its own
    queue, which keeps only its own flow receiver-driven (delay-based, yielding to others),
    or read together, which is the rule as it was without trains: no lever on anyone else."""
    tr = PacketTrain()
    s = _send(tr, 0)
    assert tr.on_grant(500 * MS, s[0], 9_000 * MS, 0, 400 * MS) is None
    assert tr.on_grant(600 * MS, s[2], 8_000 * MS, 0, 500 * MS) is None  # read before the first
    assert (tr.answered, tr.dropped) == (0, 1)
    s = _send(tr, 1_000 * MS)
    assert tr.on_grant(1_500 * MS, s[0], 1 * MS, 2**32 - 1, None) is None  # hold > elapsed
    assert tr.on_grant(1_600 * MS, s[2], 2 * MS, 0, 500 * MS) is None
    assert (tr.answered, tr.dropped) == (0, 2)
