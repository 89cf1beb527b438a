"""A short packet train sent on purpose, and what its dispersion says about whose queue the
flow sees (issue 18's lone-flow defect; docs/DESIGN.md §4 "Switching").

Why: the switch rule (:mod:`.switch_policy`) reads a queue that never drains below X as a
buffer-filling competitor. On a near-dark link a lone flow's own single frame waits longer
than X for the link's next delivery opportunity, and by Little's law the flow's window, rate
and RTT look the same in both cases (the rule's module doc). What differs is the link's
own rate: next to a competitor's standing queue the link serves a packet in a few ms while
our frame waits hundreds; alone on a near-dark link the wait *is* about one packet's
service time. A train of frames written back to back leaves the bottleneck one service
time apart per frame (packet-pair/train dispersion: Keshav, "A control-theoretic approach
to flow control", SIGCOMM 1991, §3; Dovrolis, Ramanathan & Moore, "What do packet
dispersion techniques measure?", INFOCOM 2001, §2: consecutive packets of a train leave a
FIFO bottleneck at its rate when nothing is interleaved between them). So the first
echoed frame's queuing delay divided by the train's dispersion per frame is the queue ahead
of it counted in packets at the link's rate, less the flow's own bytes that were
outstanding when the train left: a few packets alone on a slow link, hundreds next to a
buffer filler. A pair would do on a link that serves packets evenly; cellular links serve
them in clumps (UMTS driving's near-dark seconds: gaps p10 0–1 ms, median 26–46 ms), and
the natural pairs of recorded lone runs read 8–296 ms apart for the same link
(docs/BENCHMARKS.md, forty-sixth session), so the train averages ``frames − 1`` gaps.

The measurement needs each frame's read time, which the grants carry: a grant echoes the
send stamp of the latest frame read and how long the receiver held it (``echo_send_time_us``,
``echo_hold_us``; PROTOCOL.md "Grants"), so that frame was read at ``receiver_time_us −
echo_hold_us`` on the receiver's clock; differences of those need no clock offset. Frames
read within one grant interval of each other share a grant and only the later one is echoed:
the train's dispersion is then taken between the first and last frames that were echoed,
and when fewer than two were, the frames were read together (a link far faster than the
wait: the answer is an infinite count, evidence of someone else's queue).

Sans-I/O: the caller passes every time (µs, the server's CLOCK_MONOTONIC for sends and grant
arrivals, the receiver's clock for reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """A train's shape and validity (module doc).

    Attributes:
        frames: frames per train (≥ 2).
        max_send_gap_us: the train's frames must leave within this of the first, µs; a train
            the transport's pacer or a lack of data spread out is dropped (its dispersion
            would be the sender's, not the link's).
        timeout_us: a train not answered within this after its first frame left is dropped,
            µs (lost frames, a session that ended, an outage).
    """

    frames: int = 3
    max_send_gap_us: int = 2_000
    timeout_us: int = 10_000_000

    def validate(self) -> TrainConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.frames < 2:
            raise ValueError(f"frames must be >= 2, got {self.frames}")
        if self.max_send_gap_us <= 0 or self.timeout_us <= 0:
            raise ValueError(f"max_send_gap_us and timeout_us must be > 0, got "
                             f"{self.max_send_gap_us}, {self.timeout_us}")
        return self


@dataclass(frozen=True, slots=True)
class TrainSample:
    """One answered train: when it was answered (µs, server clock), the queuing delay of its
    first echoed frame (µs), the dispersion per frame between its first and last echoed
    frames (µs, receiver clock), the flow's own bytes outstanding when the train left, and
    the frame size (bytes)."""

    t_us: int
    queuing_delay_us: int
    dispersion_per_frame_us: float
    own_ahead_bytes: int
    frame_bytes: int
    read_together: bool = False
    """Fewer than two of the train's frames were echoed: the receiver read them within one
    grant interval (a fast link); ``dispersion_per_frame_us`` is then 0."""

    @property
    def others_packets(self) -> float:
        """Packets ahead of the train that are not ours: queuing delay ÷ dispersion per
        frame − our outstanding frames (module doc). Small alone (our own frame waited
        about one service time), large next to a standing queue; infinite when the train
        was read together."""
        if self.read_together:
            return float("inf")
        own = self.own_ahead_bytes / max(1, self.frame_bytes)
        return self.queuing_delay_us / max(1.0, self.dispersion_per_frame_us) - own


@dataclass(slots=True)
class PacketTrain:
    """One session's train: armed by the switcher, written by the send loop, answered by the
    grants (module doc). ``sent``/``answered``/``dropped`` count trains."""

    config: TrainConfig = field(default_factory=TrainConfig)
    armed: bool = False
    sent: int = 0
    answered: int = 0
    dropped: int = 0
    _stamps: list[int] = field(default_factory=list)
    """Send stamps of the train's frames written so far, µs."""
    _own_ahead_bytes: int = 0
    _frame_bytes: int = 0
    _reads: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    """Frame index → (read time on the receiver's clock µs, queuing delay µs or None)."""

    def __post_init__(self) -> None:
        self.config.validate()

    @property
    def pending(self) -> bool:
        """A train is armed, being written, or waiting for its answer."""
        return self.armed or bool(self._stamps)

    def arm(self) -> bool:
        """Ask for a train with the session's next frames; False (nothing done) while one is
        pending."""
        if self.pending:
            return False
        self.armed = True
        return True

    def bypass(self, now_us: int) -> bool:
        """Whether the send loop should write the next frame now past the grant's window and
        pacer: the train's first frame is out, more are due, and the first left within
        ``max_send_gap_us``. A train that overran it is dropped here."""
        if not self._stamps or len(self._stamps) >= self.config.frames:
            return False
        if now_us - self._stamps[0] > self.config.max_send_gap_us:
            self._drop()
            return False
        return True

    def on_written(self, send_time_us: int, outstanding_before_bytes: int,
                   frame_bytes: int) -> None:
        """A frame of the session was written with ``send_time_us``; ``outstanding_before_bytes``:
        the session's bytes outstanding just before it. The first frame after :meth:`arm`
        starts the train; the next ones join it until it has ``frames``."""
        if self.armed:
            self.armed = False
            self._stamps = [send_time_us]
            self._own_ahead_bytes = max(0, outstanding_before_bytes)
            self._frame_bytes = frame_bytes
            self._reads = {}
            return
        if self._stamps and len(self._stamps) < self.config.frames:
            # the send loop writes a train's later frame only when :meth:`bypass` let it
            # (which drops a train that overran ``max_send_gap_us``)
            self._stamps.append(send_time_us)
            if len(self._stamps) == self.config.frames:
                self.sent += 1

    def on_grant(self, now_us: int, echo_send_time_us: int, receiver_time_us: int,
                 echo_hold_us: int, queuing_delay_us: int | None) -> TrainSample | None:
        """An accepted grant: its echo, the receiver's time and hold (PROTOCOL.md "Grants") and
        the queuing delay its echo shows (µs; None without a sample). Returns the train's
        sample once a grant echoes its last frame or a later one, else None."""
        stamps = self._stamps
        if not stamps:
            return None
        if now_us - stamps[0] > self.config.timeout_us:
            self._drop()
            return None
        if len(stamps) < self.config.frames:
            return None
        if echo_send_time_us in stamps:
            i = stamps.index(echo_send_time_us)
            self._reads.setdefault(i, (receiver_time_us - echo_hold_us, queuing_delay_us))
        if echo_send_time_us < stamps[-1]:
            return None
        reads = sorted(self._reads.items())
        sample = None
        if len(reads) >= 2:
            (i0, (r0, qd0)), (i1, (r1, _)) = reads[0], reads[-1]
            if qd0 is not None and r1 > r0:
                sample = TrainSample(now_us, qd0, (r1 - r0) / (i1 - i0),
                                     self._own_ahead_bytes + i0 * self._frame_bytes,
                                     self._frame_bytes)
        elif queuing_delay_us is not None:
            # read inside one grant interval: a link far faster than the wait (module doc)
            sample = TrainSample(now_us, queuing_delay_us, 0.0, self._own_ahead_bytes,
                                 self._frame_bytes, read_together=True)
        self._stamps = []
        self._reads = {}
        if sample is None:
            self.dropped += 1
        else:
            self.answered += 1
        return sample

    def _drop(self) -> None:
        self.dropped += 1
        self.armed = False
        self._stamps = []
        self._reads = {}
