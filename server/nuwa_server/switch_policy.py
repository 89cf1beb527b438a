"""The rule-based switching policy for a Nuwa flow (issue 18 item 3's fallback rule): when
to move between receiver-driven control (the receiver's grants bind) and sender-driven
control (grants advisory, a loss-based controller governs), with hysteresis.

Why: Nuwa is delay-convergent. Next to a buffer-filling (loss-based) flow, its receiver sees
a queue it cannot drain and shrinks its window to the floor; the competitor keeps the
queue full, so Nuwa starves (Arun, Alizadeh & Balakrishnan, SIGCOMM 2022, §2: a
delay-convergent CCA starves when the delay it sees is not of its own making). The signal
is one only a receiver-driven server has: **the queuing delay its grants show (each
grant's echo RTT − the connection's min RTT) never drains below X for Y seconds.** Alone,
Nuwa holds its queue near Td (25 ms) and drains it whenever its window is small; but on a
slow stretch of a cellular trace its own few packets can hold a queue above X, and then the
rule fired on a lone flow (5 of the 18 dev traces in the simulator, docs/BENCHMARKS.md).
**Why it fired alone (session 10):** on all five the trigger was an outage, not a queue.
The page keeps granting through an outage (its controller ticks every 5 ms and shrinks the
window), and every grant echoes the stamp of the *last frame read*, so each one yields the
same RTT sample again (the stale sample of one frame, 70–4,400 ms above the min RTT), 20+
of them in 3 s: "every sample of the last Y above X" held with no new evidence at all
(e.g. UMTS driving at 29.8–32.6 s: 0 bit/s delivered, 40 grants, one frame's qd). Only a
sample that echoes a frame newer than the last one counted is evidence now (``echo_us`` in
:meth:`RuleSwitchPolicy.observe`): an outage gives none, a trickle of one frame a second
gives 3 in Y (< ``min_samples``), a competitor's standing queue gives one per frame read.
Two of the five (Lumos LTE driving at 11–14 s, NYC 3G subway at 32–35 s) also had fresh
samples: the link slowed, Nuwa's own window drained through a queue above X for 0.8 s
(30–40 frames), then the outage gave no sample for 1.4–2.2 s, and those 0.8 s stood for
the whole of Y. So the evidence must also **cover Y**: no span without a fresh sample
longer than max(``max_gap_us``, ``gap_qd_factor`` × the queuing delay of the sample before
it), counting from Y's start and up to now. Next to a buffer filler a frame is read at
least once per RTT (one frame is always outstanding; RTT = base + qd ≤ 2 × qd when
qd ≥ X ≥ the base RTT, and ≤ 1 s otherwise): in the simulator, Nuwa's probe next to Cubic
at 10 Mbit/s (qd ≈ 620 ms) saw gaps of at most 0.69 s.
**Why it still fired alone (session 12, end to end):** over the 16 single-flow dev traces
that ``./nuwa mix`` runs end to end, the rule moved a lone flow to sender-driven on two (NYC
3G subway-cross, AT&T LTE driving; Cubic then filled the queue: p95 819 and 710 ms). The
AT&T inputs, recorded (``server/tests/data/switch-inputs-att-lte-outage.txt``): a 10 s
outage let one frame a second trickle out (each a fresh echo, queuing delay growing a second
per second, so the gap allowance of 2 × qd let them cover Y), then the link returned and the
rest of the frames that had waited arrived at once, 7–10 s late: 23 fresh samples, all far
above X. All those frames had left the sender within 0.2 s, before the outage, and were read
over 3 s. A standing queue is different: frames enter and leave it at one pace, so the
frames read over Y left the sender over about Y too (next to Cubic, whose queue grows slowly,
a little less). So the evidence must also come from a **standing** queue: the send span of
the measured frames (last echo − first echo) at least ``min_send_span_share`` of their read
span, counted pair by pair: Σ min(Δsend, Δread) ÷ Σ Δread over consecutive samples
(:meth:`RuleSwitchPolicy.standing`; a plain first-to-last span was fooled in a second NYC 3G
run, where the last two samples before the decision were frames sent after the link came
back). In the two recorded outages the share was 0.015–0.018 when the old rule switched;
Cubic's own standing queue in the same runs gave 0.57–0.66; the threshold is 0.25. Nothing
else in the rule changed; every earlier test holds.

An optional second condition, the receiver's window sitting at its floor
(``floor_window_bytes``), cut that to 3 of 18 but missed the competitor whenever Nuwa's
receiver kept its window above the floor next to it (it takes part of a standing queue for
base delay): in the simulator at 20 Mbit/s and in 2+2, and end to end at 10 Mbit/s once the
receivers' frame reports were fixed (Nuwa at 0.17 of the link, window off the floor, no
switch). It is off by default; on a probe (receiver-driven again after sender-driven) it
never applies. By Little's law a flow's own window, rate and RTT look alike in both cases:
what differs is who else is in the queue; loss is the next signal to try.

Rule (times µs; :class:`RuleConfig` holds the values):

* receiver → sender: in receiver-driven mode for at least ``hold_us`` (Y) and
  ``min_dwell_us``, with at least ``min_samples`` queuing-delay samples in the last Y, every
  one of them ≥ ``queue_floor_ms`` (X: the queue never drained; a sample counts only
  when it echoes a frame newer than the last sample's, and the samples cover Y without a
  gap longer than max(``max_gap_us``, ``gap_qd_factor`` × qd), and from a standing queue:
  the frames they measured left the sender over at least ``min_send_span_share`` of the time
  they took to be read: module doc), and, when
  ``floor_window_bytes`` is set and the flow is not on a probe, at least ``floor_share`` of
  the window observations in the last Y at or below it. No samples (an outage) is no
  evidence: no switch.
* sender → receiver (the competitor may have left; a loss-based controller fills the queue
  itself, so the queue's level alone cannot tell): a probe back to receiver-driven after
  ``probe_us`` in sender-driven mode, or sooner on the evidence that the competitor left
  (below). If the condition holds again within ``2 × hold_us`` of the probe, the probe
  failed (so it does when the probe's own verdicts hold: a standing queue on fewer samples,
  or, opt-in, its rate below ``probe_rate_floor`` × the stint's; module doc) and the next wait
  doubles (up to ``probe_max_us``); a probe that lasts longer
  resets the wait to ``probe_us``. This is the hysteresis: at most one switch per
  ``min_dwell_us``, and a competitor that stays costs one timed probe of about Y per
  ``probe_max_us`` at most, and early probes (below) back off on their own: after a failed
  one, none for ``leave_backoff_us`` (10 s), doubling with each failure up to
  ``probe_max_us``, reset by a probe that held.

**The competitor left (session 15).** With only the timed probe, a flow that switched next to
a download stayed sender-driven, filling the queue itself, for 20–80 s after the download
ended (issue 18 asks for its delay back down within 5 s). A flow's window bounds the bytes it
holds in the queue; by Little's law its delivery rate × RTT is those bytes. When the other
flow's bytes leave the queue, our RTT falls and our rate rises at the same window (at 10
Mbit/s next to Cubic: about 2× the rate at under half the queuing delay, within a second or
two of the other flow's end). When our own window grows (Cubic regaining its share), the rate
rises at the same queue. So the early probe wants both: the receiver's delivery rate (the
rise of its grants' cumulative count) over the last three 1 s bins at least 1.5× the median
bin of the stint before them (at least 8 bins), and the median queuing delay at most 0.75× the
stint's (:meth:`RuleSwitchPolicy.competitor_left`). A capacity jump on a cellular link with the
competitor still there looks the same: by the same law it cannot look different, since both
give us more of the link at the same window; only the probe tells (alone, Nuwa drains the
queue; next to a buffer filler the standing queue is back within Y). So early probes have their
own backoff, and not the timed probe's: measured end to end (10 Mbit/s, Cubic leaving at 35 s
of 60), a timed probe that had failed at 20 s doubled the wait, and gating the early probe on
that wait put the leave out of reach for the rest of the run (p95 1,004 ms after it; on Verizon
LTE a capacity jump had set off an early probe at 13 s, same outcome, 1,809 ms). The reference
needs 8 bins: with 3, capacity swings on Verizon LTE set off early probes next to a Cubic that
stayed, 6 s into a stint, and each failed probe handed Cubic the queue (Nuwa's share 0.23
against 0.62 without early probes); a replay of the rule on recorded grants found none with 6
to 10 bins there, the leave on the constant link still seen 2.6 s after it. On T-Mobile LTE
short (not used to choose these) a rise over two bins still fired twice next to a Cubic that
stayed (share 0.38 against 0.56); over three, the replay found neither and the constant
link's leave at the same 2.6 s, and the run that followed had one (share 0.42, Jain 0.972).
On the LTE traces the leave itself is not seen (docs/BENCHMARKS.md, fifteenth session).

**A probe next to a deep queue (session 17).** A probe back to receiver-driven next to a
competitor that stayed should fail within about Y. The first detection's condition needs
``min_samples`` (20) fresh samples in Y, and a probing flow's receiver, seeing a queue it did
not make, shrinks its window to one frame, so it reads one frame per RTT; where the
competitor's queue is seconds deep (1,000 packets on 3G), that is a sample every 0.5–8 s and
the condition cannot hold. Recorded end to end (``./nuwa play --competitor cubic --switch
rule``, a video next to a Cubic download): on Norway HSDPA bus (session 16) the probe at
28.3 s got 6 fresh samples in 5 s, 430 ms rising to 1,552 ms, then the queue reached 7.7 s;
the probe ended only at 48.8 s, when Cubic's losses let the queue fall to 200–300 ms and frames
flowed again; the flow got 14 kB in those 20 s and the player stalled 12 s. On HSDPA train 13
(session 17) the probe at 28.2 s saw the queue fall to 27 ms once (Cubic's loss), then a frame
every 0.3–3 s at 103 ms rising to 3.7 s, and ended at 48.0 s (the player stalled 36.0–48.8 s).
So a probe has its own verdict (:meth:`RuleSwitchPolicy.probe_failed`): the first
detection's condition over the last Y (every fresh sample at least X, covering Y, a standing
queue) with ``probe_fail_min_samples`` (4) samples instead of 20, once the probe has lasted
max(Y, ``probe_drain_factor`` × the deepest fresh queuing delay of the last Y before it). A
probe is made after the rule saw a competitor, so it needs less evidence that one is still
there than a flow that never saw one. Alone, the queue a probe starts from is our own: at a
window of one frame it leaves in about that deepest delay (hence the allowance), and from then
Nuwa holds its queue near Td, under X; next to a competitor the queue stays over X. Replayed on
the two recordings (``python -m nuwa_lab.mix.replay --probes RUN``; times from the first
grant), the probes fail at 31.3 s and 33.7 s instead of 48.7 s and 47.6 s, and count as
failed (the next waits double), where the old ones, lasting longer than the probe span,
counted as held. The simulator's bulk flows read enough frames on a probe for the first
detection: the verdict changes none of their runs (docs/BENCHMARKS.md, seventeenth session).

**A probe next to BBR (session 51).** BBR holds a queue of its own making too, but not a
standing one: at 10 Mbit/s next to a probing Nuwa flow it sat at 20–80 ms, under X every
second or so (ProbeBW's cycle, and ProbeRTT every 5 s drains it), so neither verdict above
held and a probe that should have failed held: Nuwa's delay-based receiver gave way, its
rate fell from the stint's 6.5 Mbit/s to 1–2 and stayed there (end to end, one run in three
at share 0.15; on NYC LTE Times Square the queue verdict came 24 s into the probe, after the
packet train had found the queue "ours" in a dip, and Nuwa starved 20 s). What tells is the
rate: the probe asks "has the competitor left?", and if it has, the flow alone gets at least
the share it had next to it (by Little's law its rate rises at the same window, as for the
early probe); if not, a delay-based receiver yields and the rate falls. So, opt-in, a probe
also fails (:meth:`RuleSwitchPolicy.probe_failed`, same span and allowance as the queue
verdict) when the receiver's delivery rate over its last three whole 1 s bins is below
``probe_rate_floor`` (e.g. 0.6) × the stint's reference rate, with at least
``probe_fail_min_samples`` fresh samples in Y from a standing queue (an outage's trickle is no
evidence, as above). Where it is wrong: a
competitor that left during a probe on a link whose capacity fell below 0.6 × our stint's
share at that moment (a 3× drop when the stint had half the link) fails the probe and costs
one more stint. Replayed on the fifty-first session's 18 recorded runs
(``python -m nuwa_lab.mix.replay --probes``), it failed the BBR probes that had held or
failed late (10 Mbit/s: 4–6 s into the probe, where the runs' probes held in two and failed at
20 s in one; Times Square at 4 s instead of 24 s)
and left the Cubic pairs' and the CI after-leave run's probes as they were. End to end it did
not make the pairs fairer (docs/BENCHMARKS.md, fifty-first session: six pairings × 3 runs,
runs meeting issue 18 7 of 18 without it, 5 of 18 with it; mean Jain 0.859 and 0.846): next to
BBR a failed probe hands the link back to Cubic, which in a 1,000-packet buffer outgrows BBR
(Nuwa's share 0.52–0.78 with it, 0.15–0.48 without), so the unfairness changes side. Hence
off by default. A Cubic window set from the stint's rate at the probe's RTT (Little's law) was
tried with it and dropped (NYC LTE walking next to Cubic: smaller windows than the one held,
share 0.11–0.23).

**A competitor whose queue drains (session 52; opt-in ``drained_sender_cc``).** Next to BBR
the fair sender-driven controller is BBR: end to end (docs/BENCHMARKS.md, fifty-second
session) ``--sender-cc bbr`` held 0.35–0.40 of a constant link next to a BBR download at a
third of the queue Cubic keeps, but next to Cubic it took 0.01–0.12 (a window of twice its
BDP estimate is a few packets of a queue Cubic keeps seconds deep). So the choice needs the
competitor's kind, and the first detection's evidence does not carry it: the Y before the
switch looks alike next to either. A probe does. With our sender-driven controller set aside,
a buffer filler's queue stands (the queue verdict, or the first detection's condition, ends
the probe) while BBR's drains every few seconds (ProbeBW's down phase, ProbeRTT every 5 s)
and only the rate verdict can end it. So a probe that fails on the rate verdict alone sets
:attr:`RuleSwitchPolicy.drained_competitor`, and :meth:`RuleSwitchPolicy.sender_cc` names
``drained_sender_cc`` for the stint that follows (the switcher installs it); a probe that
fails on a standing queue, or holds, clears it. The first detection always takes the
server's ``--sender-cc``: mistaking Cubic for BBR costs nearly the whole share, the other way
round only the fairness the rule had before. Hence a guard: the probe's fresh samples of its
last Y must include one under ``drained_below_ms`` (12.5 ms: the queue emptied, as BBR's
ProbeRTT empties it every 5 s); without it, on NYC LTE walking next to Cubic the rate verdict
after the trace's 4 s outage (the queue dipped to 33 and 76 ms, never empty) took Cubic for BBR
in 2 of 2 runs (share 0.01). Two more pieces make the read possible: ``first_queue_floor_ms``
(35) catches BBR's queue, about one base RTT, in the first detection while the probe keeps
X = 50 (at 35 everywhere the probe's queue verdict held on BBR's queue too), and BBR's first
bandwidth sample from the ceiling is its pipeACK, not its window (:mod:`.cc.switching`).
Measured end to end (docs/BENCHMARKS.md, fifty-second session): the kind was read in 5 of 12
probes next to BBR (the others ended on the queue verdict: the 1,000-packet queue the Cubic
stint left had not drained within the probe's Y), and a stint that read it started BBR from
the probe's rate and climbed one ProbeBW cycle at a time (shares 0.16–0.35); runs meeting
issue 18 were no more than with the shipped rule. Hence opt-in. Where it is still wrong: a
buffer filler whose queue empties during a probe (a shallow buffer) with our rate under the
floor is taken for BBR for one stint.

**A lone flow on a near-dark link (session 47).** The floor X assumes a link that serves a
frame well within X. On UMTS driving's near-dark stretch (12–84 kbit/s) one 1200-byte frame
waits 115–800 ms for the link's next delivery opportunity, so a lone flow at its one-frame
window holds every sample above X from a standing queue of its own, and only the count of 20
fresh samples in Y kept the rule quiet; a lone video, whose stalls carry it past 60 s into the
trace's longer dark stretch, reached 20 and was switched in 2 of 3 runs (docs/BENCHMARKS.md,
forty-sixth session). By Little's law nothing above tells its own queue from a competitor's;
the link's service time per packet does, and the flow can measure it: a packet train
(:mod:`.packet_train`: three frames written back to back, read one service time apart). The
first frame's queuing delay divided by the train's dispersion per frame counts the packets
ahead of it, less our own outstanding ones: about one alone on a slow link (our frame waited
for one opportunity), tens to hundreds next to a buffer filler (a 600 ms queue at 5 Mbit/s is
about 300 packets). So once three fresh samples in a row are at least X (``train_due``), the
rule asks for a train at most once per Y, and while an answer of the last 2 × Y found at most
``train_own_packets`` (4) packets of others, the queue is ours and the condition does not hold
(``own_queue``); when the condition holds with no answer yet, it waits up to Y for one. The
count of 20 fresh samples stays: an answer that finds someone else's queue is no proof of one
(below), so it does not stand in for the count. A train read inside one grant interval (a
fast link) answers "not our own". A pair would read a clumped cellular link's burst rate
instead of its rate (the natural pairs of the forty-sixth session: 8–296 ms apart on the same
dark link), hence three frames. The cost: two frames beyond the window once per Y while the
queue is above X. Where it is still wrong: a train whose first frame waited out a dark gap of
the link, or whose frames left in one clump of delivery opportunities, reads the gap as
someone else's queue (lone UMTS, end to end: 27 packets of others at 1.1 s of queuing delay
and 38 ms per frame; 1,622 at 1.2 s and under 1 ms), so the veto rests on at least one train
of 2 × Y landing while the link serves evenly, and letting an answer of many packets of
others lower the count to 10 switched a lone 120 s bulk flow at 34 s (docs/BENCHMARKS.md,
forty-seventh session).

Sans-I/O: :meth:`RuleSwitchPolicy.observe` takes ``now_us`` and the samples;
:meth:`RuleSwitchPolicy.decide` returns the mode to switch to, or None.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

ControlMode = Literal["receiver", "sender"]
RECEIVER: ControlMode = "receiver"
SENDER: ControlMode = "sender"

_TRAIN_AFTER_SAMPLES = 3
"""Fresh samples in a row at least X before the rule asks for a packet train."""

_MAX_BINS = 600
"""Delivery bins kept of a sender-driven stint (10 min at 1 s; older ones drop)."""


@dataclass(slots=True)
class _Bin:
    """One ``leave_bin_us`` of a sender-driven stint: its index from the switch, the bytes
    the receiver counted in it, and its fresh queuing-delay samples (µs)."""

    index: int
    delivered_bytes: int = 0
    qd_us: list[int] = field(default_factory=list)


def _reference(bins: list[_Bin], min_bins: int, quantile: float) -> tuple[float, float] | None:
    """(the ``quantile`` of the delivered bytes per bin, nearest rank; the median fresh
    queuing delay µs) of ``bins``, or None with fewer than ``min_bins`` of them or no
    queuing-delay sample."""
    qd = [q for b in bins for q in b.qd_us]
    if len(bins) < min_bins or not qd:
        return None
    rates = sorted(b.delivered_bytes for b in bins)
    rate = rates[min(len(rates) - 1, max(0, round(quantile * (len(rates) - 1))))]
    return float(rate), float(statistics.median(qd))


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """The rule's thresholds (module doc).

    Attributes:
        floor_window_bytes: when set (e.g. 4800, four 1200-byte frames; the controller's
            floor is one frame, ``min_window_bytes``), a granted window at or below this is
            at the floor and the first detection also needs the window to sit there; None
            (the default): the queue alone decides (module doc: why).
        floor_share: share of window observations at the floor that counts as "sits".
        min_send_span_share: the share of Y's read time that the send times of the frames
            measured explain, pair by pair (:meth:`RuleSwitchPolicy.standing`), for a
            standing queue; less is a link that delivered our old frames late (module doc:
            "Why it still fired alone").
        queue_floor_ms: X, ms: the queue "never drains" when every queuing-delay sample of
            the last Y is at least this (2 × Nuwa's default Td of 25 ms: alone, Nuwa holds
            its queue near Td and drains it when its window is small).
        first_queue_floor_ms: X for the first detection alone (and the packet trains it
            asks for), ms; None (the default): ``queue_floor_ms``. A probe's verdicts keep
            ``queue_floor_ms`` (module doc, "A competitor whose queue drains": next to BBR,
            whose own queue is about one base RTT, a lower X catches it sooner, and the probe
            must still see its queue dip under the higher one to tell it from a buffer filler).
        hold_us: Y, µs.
        min_samples: queuing-delay samples needed in the last Y (fewer: no evidence).
        max_gap_us / gap_qd_factor: the longest span of the last Y without a fresh sample
            that still counts as "observed throughout" is max(max_gap_us, gap_qd_factor ×
            the queuing delay of the sample before it), µs (module doc: a lone flow's
            outage after a slow stretch; a competitor's queue yields a frame per RTT).
        min_dwell_us: no switch sooner than this after the last one, µs.
        probe_us / probe_max_us: sender-driven time before a probe back, first and at most
            (each probe costs the flow about Y at a small window while a competitor stays;
            20 s gave Nuwa 40 % next to Cubic in the simulator where 10 s gave 31 %).
        leave_rate_factor / leave_qd_factor: the early probe (module doc, "The competitor
            left"): in sender-driven mode, the flow's delivery rate over the last
            ``leave_recent_bins`` whole bins at least ``leave_rate_factor`` × the median bin
            of the stint before them, while the median queuing delay fell to at most
            ``leave_qd_factor`` × the stint's. None for ``leave_rate_factor``: no early probe.
        leave_backoff_us: after an early probe failed, no early probe for this long, µs;
            doubled by each further failure (up to ``probe_max_us``), reset by a probe that
            held (module doc: why its own backoff).
        leave_bin_us: the bin of the delivery-rate series, µs.
        leave_recent_bins / leave_ref_bins: whole bins in the recent span; whole bins
            needed before it (the stint's first bin, the switch's transient, never counts).
        leave_ref_quantile: the reference rate is this quantile of those bins (0.5: the
            median). At least 8 bins, not 3: over 3 bins on a cellular link a capacity swing
            set off early probes next to a competitor that stayed; the 90th percentile of 5
            instead missed the leave on a constant link, where the receiver's count comes in
            bursts after Cubic's losses (module doc).
        probe_fail_min_samples / probe_drain_factor: the probe's own verdict (module doc,
            "A probe next to a deep queue"): a probe back to receiver-driven fails on the
            first detection's condition with ``probe_fail_min_samples`` fresh samples in the
            last Y instead of ``min_samples``, once it has lasted max(Y,
            ``probe_drain_factor`` × the deepest fresh queuing delay of the last Y before
            it: the time our own bytes of that queue take to leave). None: only the first
            detection's condition ends a probe.
        probe_rate_floor: the probe's rate verdict (module doc, "A probe next to BBR"): a
            probe back to receiver-driven also fails, once it has lasted max(Y, the drain
            allowance), when the receiver's delivery rate over its last
            ``leave_recent_bins`` whole bins is below this × the stint's reference rate
            (the ``leave_ref_quantile`` of the stint's bins). None (the default): no rate
            verdict; 0.6 was measured end to end and did not make the pairs fairer (module
            doc), so it is opt-in (``--switch-rule '{"probe_rate_floor": 0.6}'``).
        drained_sender_cc: the sender-driven controller after a probe failed on its rate
            verdict alone (module doc, "A competitor whose queue drains"): e.g. ``"bbr"``;
            the server's ``--sender-cc`` otherwise, and again after a probe that fails on the
            queue verdict or holds. None (the default): always ``--sender-cc``. Opt-in, and
            needs ``probe_rate_floor`` (without it no probe fails on its rate). The name must
            be one of the server's sender controllers (checked by ``SessionConfig.validate``).
        drained_below_ms: with ``drained_sender_cc``, the probe's fresh samples of its last Y
            must include one under this, ms: the competitor's queue did drain (BBR's
            ProbeRTT empties it every 5 s); a rate failure without it (a link coming back
            from an outage behind a buffer filler) keeps ``--sender-cc``.
        train_own_packets: the packet train's veto (module doc, "A lone flow on a near-dark
            link"): the queue is the flow's own while an answer of the last 2 × Y found at
            most this many packets ahead of it that are not ours
            (:attr:`.packet_train.TrainSample.others_packets`); trains are asked for at most
            once per Y, once three fresh samples in a row are at least X. None: no trains,
            no veto, no wait.
    """

    floor_window_bytes: int | None = None
    floor_share: float = 0.9
    min_send_span_share: float = 0.25
    max_gap_us: int = 1_000_000
    gap_qd_factor: float = 2.0
    queue_floor_ms: float = 50.0
    first_queue_floor_ms: float | None = None
    hold_us: int = 3_000_000
    min_samples: int = 20
    min_dwell_us: int = 2_000_000
    probe_us: int = 20_000_000
    probe_max_us: int = 80_000_000
    leave_rate_factor: float | None = 1.5
    leave_qd_factor: float = 0.75
    leave_backoff_us: int = 10_000_000
    leave_bin_us: int = 1_000_000
    leave_recent_bins: int = 3
    leave_ref_bins: int = 8
    leave_ref_quantile: float = 0.5
    probe_fail_min_samples: int | None = 4
    probe_drain_factor: float = 1.5
    probe_rate_floor: float | None = None
    drained_sender_cc: str | None = None
    drained_below_ms: float = 12.5
    train_own_packets: float | None = 4.0

    def validate(self) -> RuleConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.floor_window_bytes is not None and self.floor_window_bytes <= 0:
            raise ValueError(f"floor_window_bytes must be > 0, got {self.floor_window_bytes}")
        if not 0 < self.floor_share <= 1:
            raise ValueError(f"floor_share must be in (0, 1], got {self.floor_share}")
        if not self.queue_floor_ms > 0:
            raise ValueError(f"queue_floor_ms must be > 0, got {self.queue_floor_ms}")
        if self.first_queue_floor_ms is not None and not self.first_queue_floor_ms > 0:
            raise ValueError(f"first_queue_floor_ms must be > 0 or None, got "
                             f"{self.first_queue_floor_ms}")
        if self.max_gap_us <= 0 or not self.gap_qd_factor >= 0:
            raise ValueError(f"max_gap_us must be > 0 and gap_qd_factor >= 0, got "
                             f"{self.max_gap_us}, {self.gap_qd_factor}")
        if not 0 <= self.min_send_span_share <= 1:
            raise ValueError(f"min_send_span_share must be in [0, 1], got "
                             f"{self.min_send_span_share}")
        if self.hold_us <= 0 or self.min_dwell_us < 0 or self.min_samples < 1:
            raise ValueError("hold_us must be > 0, min_dwell_us >= 0, min_samples >= 1")
        if not 0 < self.probe_us <= self.probe_max_us:
            raise ValueError(f"need 0 < probe_us <= probe_max_us, got {self.probe_us}, "
                             f"{self.probe_max_us}")
        if self.leave_rate_factor is not None and not self.leave_rate_factor > 1:
            raise ValueError(f"leave_rate_factor must be > 1 or None, got "
                             f"{self.leave_rate_factor}")
        if not 0 < self.leave_qd_factor <= 1:
            raise ValueError(f"leave_qd_factor must be in (0, 1], got {self.leave_qd_factor}")
        if not 0 <= self.leave_ref_quantile <= 1:
            raise ValueError(f"leave_ref_quantile must be in [0, 1], got "
                             f"{self.leave_ref_quantile}")
        if self.leave_backoff_us <= 0:
            raise ValueError(f"leave_backoff_us must be > 0, got {self.leave_backoff_us}")
        if self.probe_fail_min_samples is not None and self.probe_fail_min_samples < 1:
            raise ValueError(f"probe_fail_min_samples must be >= 1 or None, got "
                             f"{self.probe_fail_min_samples}")
        if self.train_own_packets is not None and not self.train_own_packets > 0:
            raise ValueError(f"train_own_packets must be > 0 or None, got "
                             f"{self.train_own_packets}")
        if self.probe_rate_floor is not None and not 0 < self.probe_rate_floor < 1:
            raise ValueError(f"probe_rate_floor must be in (0, 1) or None, got "
                             f"{self.probe_rate_floor}")
        if self.drained_sender_cc is not None and (
                not isinstance(self.drained_sender_cc, str) or self.probe_rate_floor is None):
            raise ValueError(f"drained_sender_cc must be a controller name and needs "
                             f"probe_rate_floor, got {self.drained_sender_cc!r} with "
                             f"probe_rate_floor {self.probe_rate_floor!r}")
        if not self.drained_below_ms >= 0:
            raise ValueError(f"drained_below_ms must be >= 0, got {self.drained_below_ms}")
        if not self.probe_drain_factor >= 0:
            raise ValueError(f"probe_drain_factor must be >= 0, got {self.probe_drain_factor}")
        if self.leave_bin_us <= 0 or self.leave_recent_bins < 1 or self.leave_ref_bins < 1:
            raise ValueError("leave_bin_us must be > 0, leave_recent_bins and leave_ref_bins "
                             ">= 1")
        return self


class RuleSwitchPolicy:
    """One flow's rule (module doc). ``mode`` is the mode in force; call :meth:`switched`
    after acting on a decision (the caller may refuse one, e.g. for a connection that is
    closing)."""

    def __init__(self, now_us: int, config: RuleConfig | None = None,
                 mode: ControlMode = RECEIVER) -> None:
        self.config = (config or RuleConfig()).validate()
        self.mode: ControlMode = mode
        self.since_us = now_us
        self.switches = 0
        self._windows: deque[tuple[int, int]] = deque()
        self._qd: deque[tuple[int, int, int | None]] = deque()
        self._probe_wait_us = self.config.probe_us
        self._probing_since_us: int | None = None
        self._last_echo_us: int | None = None
        self.stale_samples = 0
        """Queuing-delay samples dropped because they echoed no newer frame (module doc)."""
        self._bins: deque[_Bin] = deque()
        """The sender-driven stint's delivery and fresh queuing delay per ``leave_bin_us``."""
        self.early_probes = 0
        """Probes back to receiver-driven taken on the competitor-left evidence."""
        self._early_wait_us = self.config.leave_backoff_us
        self._stint_reference: tuple[float, float] | None = None
        self._prev_reference: tuple[float, float] | None = None
        self._early_not_before_us: int | None = None
        self._deciding_early = False
        self._probe_is_early = False
        self._leave: dict[str, float] = {}
        self._left_eval: tuple[int, bool, dict[str, float]] | None = None
        """The last :meth:`competitor_left` (stint bin, result, ratios): it changes by bin."""
        self._probe_drain_us = 0
        """How long the probe lets our own bytes of the queue before it leave, µs."""
        self.failed_probes = 0
        """Probes ended by their own verdict (:meth:`probe_failed`)."""
        self.drained_competitor = False
        """The last probe failed on its rate verdict alone: a competitor is there (our rate
        fell) but its queue does not stand (module doc, "A competitor whose queue drains");
        False again after a probe that held or failed on the queue."""
        self.probe_failed_at_switch = False
        """The last :meth:`switched` ended a probe that failed (back to sender-driven
        within the probe's span): the caller may restore the sender-driven window the probe
        set aside (:func:`.cc.switching.restore_after_probe`)."""
        self._trains: deque[tuple[int, float]] = deque()
        """Packet trains' answers of the last 2 × Y: (t µs, packets ahead not ours)."""
        self._train_asked_us: int | None = None
        self._unverified_since_us: int | None = None
        """When the condition first held with no train answer to check it against."""
        self.takes_trains = False
        """The caller sends the trains :meth:`train_due` asks for and reports their answers
        (the server's switcher): only then does the condition wait for an answer
        (:meth:`_unverified`). A caller without trains (a replay, a test) gets the rule
        as it was without them."""
        self.train_vetoes = 0
        """Polls where the condition held but a train found the queue our own."""

    def observe(self, now_us: int, window_bytes: int | None = None,
                queuing_delay_us: int | None = None, echo_us: int | None = None,
                delivered_bytes: int | None = None) -> None:
        """A granted window (bytes) and/or a queuing-delay sample (µs) at ``now_us``.

        ``echo_us``: the send stamp of the frame the sample was measured on (the grant's
        ``echo_send_time_us``, PROTOCOL.md "Grants"). When given, a sample whose echo is not
        newer than the last counted sample's is the same frame measured again (the page
        grants on through an outage): it is dropped and counted in ``stale_samples``
        (module doc: why). None: every sample counts (a caller without echoes).
        ``delivered_bytes``: bytes the receiver counted since its previous grant (the rise
        of the grants' ``cum_received_bytes``, PROTOCOL.md "Grants"); in sender-driven mode
        they make the delivery-rate series of the early probe (module doc)."""
        if window_bytes is not None:
            self._windows.append((now_us, window_bytes))
        fresh_qd: int | None = None
        if queuing_delay_us is not None:
            if echo_us is not None and self._last_echo_us is not None and (
                    echo_us <= self._last_echo_us):
                self.stale_samples += 1
            else:
                self._qd.append((now_us, queuing_delay_us, echo_us))
                fresh_qd = queuing_delay_us
                if echo_us is not None:
                    self._last_echo_us = echo_us
        rate_probe = self._probing_since_us is not None and self.config.probe_rate_floor is not None
        if (self.mode == SENDER or rate_probe) and (delivered_bytes or fresh_qd is not None):
            # the stint's series (early probe) or, on a probe, the probe's (its opt-in rate verdict)
            index = (now_us - self.since_us) // self.config.leave_bin_us
            if not self._bins or self._bins[-1].index != index:
                self._bins.append(_Bin(index))
                while len(self._bins) > _MAX_BINS:
                    self._bins.popleft()
            b = self._bins[-1]
            b.delivered_bytes += max(0, delivered_bytes or 0)
            if fresh_qd is not None:
                b.qd_us.append(fresh_qd)
        edge = now_us - self.config.hold_us
        while self._windows and self._windows[0][0] < edge:
            self._windows.popleft()
        while self._qd and self._qd[0][0] < edge:
            self._qd.popleft()

    def observe_train(self, now_us: int, others_packets: float) -> None:
        """A packet train's answer at ``now_us``: the packets ahead of it that are not ours
        (:attr:`.packet_train.TrainSample.others_packets`, infinite for a train read inside
        one grant interval; module doc, "A lone flow on a near-dark link")."""
        self._trains.append((now_us, float(others_packets)))
        self._trim_trains(now_us)

    def _trim_trains(self, now_us: int) -> None:
        while self._trains and now_us - self._trains[0][0] > 2 * self.config.hold_us:
            self._trains.popleft()

    def train_due(self, now_us: int) -> bool:
        """Whether the caller should send a packet train now: receiver-driven, trains on
        (``train_own_packets``), none asked for in the last Y, and the last
        :data:`_TRAIN_AFTER_SAMPLES` fresh samples of the last Y all at least X (a queue that
        may be standing: the answer is then there when the condition first holds). True
        counts as asked."""
        c = self.config
        if c.train_own_packets is None or self.mode != RECEIVER:
            return False
        if self._train_asked_us is not None and now_us - self._train_asked_us < c.hold_us:
            return False
        self.observe(now_us)
        recent = [q for _, q, _ in list(self._qd)[-_TRAIN_AFTER_SAMPLES:]]
        if len(recent) < _TRAIN_AFTER_SAMPLES or min(recent) < self._floor_ms() * 1000:
            return False
        self._train_asked_us = now_us
        return True

    def own_queue(self, now_us: int) -> bool:
        """A packet train answered within 2 × Y found at most ``train_own_packets`` packets
        ahead of it that are not ours: the queue the samples show is the flow's own (a lone
        flow on a slow link), not a competitor's (module doc, "A lone flow on a near-dark
        link")."""
        c = self.config
        if c.train_own_packets is None:
            return False
        self._trim_trains(now_us)
        return any(others <= c.train_own_packets for _, others in self._trains)

    def _unverified(self, now_us: int) -> bool:
        """The condition holds with no train answered in the last 2 × Y, and it has held so
        for less than Y: wait for the train :meth:`train_due` asks for (a competitor's
        detection waits at most Y more; without answers, e.g. trains the transport's pacer
        split, the rule acts as without trains)."""
        c = self.config
        if c.train_own_packets is None or self._trains or not self.takes_trains:
            self._unverified_since_us = None
            return False
        if self._unverified_since_us is None:
            self._unverified_since_us = now_us
        return now_us - self._unverified_since_us < c.hold_us

    def competitor_evidence(self, now_us: int) -> bool:
        """The receiver-driven condition over the last Y (module doc)."""
        c = self.config
        if not self._queue_stood(now_us, c.min_samples):
            return False
        if c.floor_window_bytes is None or self._probing_since_us is not None:
            return True
        if not self._windows:
            return False
        at_floor = sum(1 for _, w in self._windows if w <= c.floor_window_bytes)
        return at_floor >= c.floor_share * len(self._windows)

    def standing(self, now_us: int) -> bool:
        """Whether the fresh samples of the last Y show a standing queue (module doc): between
        consecutive samples, the frames measured left the sender about as far apart as they
        were read. The share of Y's read time so explained, Σ min(Δsend, Δread) ÷ Σ Δread
        over consecutive samples (Δsend: echo to echo, Δread: sample to sample), is at least
        ``min_send_span_share``. A competitor's queue takes our frames in and lets them out
        at one pace (share ≈ 1; a queue that grows as Cubic's does, a little less); a link
        that went (nearly) dark delivers frames sent within a moment over seconds, each read
        later than the last by the time that passed (share ≈ 0), and a frame sent after the
        link came back adds only the short wait it read. True without echoes or read time."""
        return self._send_share() >= self.config.min_send_span_share

    def _send_share(self) -> float:
        """Σ min(Δsend, Δread) ÷ Σ Δread over consecutive fresh samples (:meth:`standing`);
        1.0 without echoes on every sample or without read time."""
        if any(e is None for _, _, e in self._qd):
            return 1.0
        read = explained = 0
        prev: tuple[int, int, int | None] | None = None
        for cur in self._qd:
            if prev is not None:
                d_read = cur[0] - prev[0]
                d_send = max(0, (cur[2] or 0) - (prev[2] or 0))
                read += d_read
                explained += min(d_send, d_read)
            prev = cur
        return 1.0 if read <= 0 else explained / read

    def evidence(self) -> dict[str, float | int]:
        """The rule's view of the last Y (as of the last call) for a log line: fresh samples,
        their least and largest queuing delay (ms), the share of their read time their send
        times explain (:meth:`standing`), the stale samples so far, and on a probe back
        whether it was early (``early_probe``) with the rate and queuing-delay ratios of
        :meth:`competitor_left` when they were computed."""
        qd = [q for _, q, _ in self._qd]
        train = {} if not self._trains else {
            "train_others_packets": [round(o, 1) if o != float("inf") else None
                                     for _, o in self._trains],
            "train_vetoes": self.train_vetoes}
        return {"samples": len(qd), "min_ms": min(qd, default=0) / 1000,
                "max_ms": max(qd, default=0) / 1000,
                "send_share": round(self._send_share(), 3),
                "stale_samples": self.stale_samples, **train, **self._leave}

    def competitor_left(self, now_us: int) -> bool:
        """The early probe's evidence (module doc, "The competitor left"): in sender-driven
        mode, over the last ``leave_recent_bins`` whole bins of the stint, the delivery rate
        is at least ``leave_rate_factor`` × the ``leave_ref_quantile`` (the median) of the
        whole bins before them (the stint's first bin excluded; at least ``leave_ref_bins`` of
        them; until there are that many in a stint that follows a failed probe, the stint
        before the probe is the reference) and the median fresh queuing delay at most
        ``leave_qd_factor`` × theirs. Our window bounds what we hold in the queue, so by
        Little's law (rate × RTT = bytes in flight) our rate rises at the same window only
        when the RTT falls: someone else's bytes left the queue, or the link got faster.
        Our own window growing (Cubic regaining a share) raises the rate at the same queue,
        which this does not take for a leave."""
        c = self.config
        self._leave = {}
        if self.mode != SENDER or c.leave_rate_factor is None:
            return False
        current = (now_us - self.since_us) // c.leave_bin_us
        # every input is a whole bin before ``current``: one evaluation per bin, not per poll
        if self._left_eval is not None and self._left_eval[0] == current:
            self._leave = dict(self._left_eval[2])
            return self._left_eval[1]
        left = self._competitor_left_before(current)
        self._left_eval = (current, left, dict(self._leave))
        return left

    def _competitor_left_before(self, current: int) -> bool:
        """:meth:`competitor_left` over the whole bins before bin ``current`` of the stint."""
        c = self.config
        assert c.leave_rate_factor is not None
        whole = [b for b in self._bins if 1 <= b.index < current]
        recent = [b for b in whole if b.index >= current - c.leave_recent_bins]
        if len(recent) < c.leave_recent_bins:
            return False
        reference = _reference([b for b in whole if b.index < current - c.leave_recent_bins],
                               c.leave_ref_bins, c.leave_ref_quantile)
        if reference is None:
            # too early in a stint that follows a failed probe: the stint before the probe is
            # the reference (a competitor that left during the probe fails it, and the new
            # stint is at the full rate from its first bin: session 15, end to end)
            reference = self._prev_reference
        recent_qd = [q for b in recent for q in b.qd_us]
        if reference is None or reference[0] <= 0 or not recent_qd:
            return False
        recent_rate = sum(b.delivered_bytes for b in recent) / len(recent)
        rate_ratio = recent_rate / reference[0]
        qd_ratio = statistics.median(recent_qd) / max(1.0, reference[1])
        self._leave = {"rate_ratio": round(rate_ratio, 3), "qd_ratio": round(qd_ratio, 3)}
        return rate_ratio >= c.leave_rate_factor and qd_ratio <= c.leave_qd_factor

    def probe_failed(self, now_us: int) -> bool:
        """The probe's own verdict (module doc, "A probe next to a deep queue"): on a probe
        back to receiver-driven that has lasted max(Y, the drain allowance), the first
        detection's condition over the last Y with ``probe_fail_min_samples`` fresh samples
        instead of ``min_samples``: every one at least X, covering Y, from a standing queue;
        or, opt-in, its rate verdict (:meth:`_probe_starved`)."""
        return self._failed_verdict(now_us) is not None

    def _failed_verdict(self, now_us: int) -> Literal["queue", "rate"] | None:
        """Which of :meth:`probe_failed`'s verdicts holds now (the queue's first), or None."""
        c = self.config
        since = self._probing_since_us
        if c.probe_fail_min_samples is None or self.mode != RECEIVER or since is None:
            return None
        if now_us - since < max(c.hold_us, self._probe_drain_us):
            return None
        if self._queue_stood(now_us, c.probe_fail_min_samples):
            return "queue"
        return "rate" if self._probe_starved(now_us) else None

    def _probe_starved(self, now_us: int) -> bool:
        """The probe's rate verdict (module doc, "A probe next to BBR"): the receiver's
        delivery rate over the probe's last ``leave_recent_bins`` whole bins (its first bin,
        the switch's transient, never counts) below ``probe_rate_floor`` × the stint's
        reference rate, with at least ``probe_fail_min_samples`` fresh samples in the last Y,
        from a standing queue (:meth:`standing`)."""
        c = self.config
        ref = self._stint_reference
        if c.probe_rate_floor is None or ref is None or ref[0] <= 0:
            return False
        current = (now_us - self.since_us) // c.leave_bin_us
        first = current - c.leave_recent_bins
        recent = [b for b in self._bins if first <= b.index < current]
        # a bin without a record delivered nothing; but with no fresh sample in the span, or
        # samples of frames sent together and read apart, the link is (nearly) dark: an
        # outage, which is no evidence of a competitor (module doc)
        if c.probe_fail_min_samples is not None and len(self._qd) < c.probe_fail_min_samples:
            return False  # as few samples as the queue verdict needs (module doc)
        if first < 1 or not any(b.qd_us for b in recent) or not self.standing(now_us):
            return False
        ratio = sum(b.delivered_bytes for b in recent) / c.leave_recent_bins / ref[0]
        self._leave["probe_rate_ratio"] = round(ratio, 3)
        return ratio < c.probe_rate_floor

    def _floor_ms(self) -> float:
        """X now, ms: ``first_queue_floor_ms`` when set and the flow is not on a probe,
        else ``queue_floor_ms``."""
        c = self.config
        if c.first_queue_floor_ms is not None and self._probing_since_us is None:
            return c.first_queue_floor_ms
        return c.queue_floor_ms

    def _queue_stood(self, now_us: int, min_samples: int) -> bool:
        """At least ``min_samples`` fresh samples in the last Y, every one at least X
        (:meth:`_floor_ms`),
        covering Y (:meth:`_covers_hold`), from a standing queue (:meth:`standing`), not found
        the flow's own by a packet train of the last 2 × Y (:meth:`own_queue`), and not
        waiting for a train's answer (:meth:`_unverified`)."""
        self.observe(now_us)
        qd = [q for _, q, _ in self._qd]
        if (len(qd) < min_samples or min(qd) < self._floor_ms() * 1000
                or not (self._covers_hold(now_us) and self.standing(now_us))):
            self._unverified_since_us = None
            return False
        if self.own_queue(now_us):
            self.train_vetoes += 1
            return False
        return not self._unverified(now_us)

    def _covers_hold(self, now_us: int) -> bool:
        """The fresh samples of the last Y leave no gap longer than max(``max_gap_us``,
        ``gap_qd_factor`` × the queuing delay before it), from Y's start to ``now_us``."""
        c = self.config
        prev_t, prev_qd = now_us - c.hold_us, 0
        for t, q in [*((t, q) for t, q, _ in self._qd), (now_us, 0)]:
            if t - prev_t > max(c.max_gap_us, c.gap_qd_factor * prev_qd):
                return False
            prev_t, prev_qd = t, q
        return True

    def decide(self, now_us: int) -> ControlMode | None:
        """The mode to switch to now, or None to stay (module doc)."""
        c = self.config
        in_mode = now_us - self.since_us
        if (self.mode == RECEIVER and self._probing_since_us is not None
                and now_us - self._probing_since_us > self._probe_span_us):
            # the probe held: the competitor left; back to the first detection's rule
            self._probing_since_us = None
            self._probe_wait_us = c.probe_us
            self._early_wait_us = c.leave_backoff_us
            self.drained_competitor = False
        if in_mode < c.min_dwell_us:
            return None
        if self.mode == RECEIVER:
            if in_mode >= c.hold_us and self.competitor_evidence(now_us):
                self.drained_competitor = False  # a standing queue: a buffer filler
                return SENDER
            if (verdict := self._failed_verdict(now_us)) is not None:
                self.failed_probes += 1
                self._leave["probe_failed"] = 1
                drained_us = c.drained_below_ms * 1000
                self.drained_competitor = verdict == "rate" and any(
                    q < drained_us for _, q, _ in self._qd)
                if self.drained_competitor:
                    self._leave["drained"] = 1
                return SENDER
            return None
        if in_mode >= self._probe_wait_us:
            self._leave = {"early_probe": 0}
            self._deciding_early = False
            return RECEIVER
        # the early probe, with its own backoff after a failed one (module doc)
        if (self._early_not_before_us is None or now_us >= self._early_not_before_us) and (
                self.competitor_left(now_us)):
            self.early_probes += 1
            self._leave["early_probe"] = 1
            self._deciding_early = True
            return RECEIVER
        return None

    def sender_cc(self, default: str) -> str:
        """The controller for the sender-driven mode :meth:`decide` just chose: the
        configured ``drained_sender_cc`` when the probe that ended failed on its rate verdict
        alone (a competitor whose queue drains, e.g. BBR: module doc), else ``default`` (the
        server's ``--sender-cc``)."""
        chosen = self.config.drained_sender_cc
        return chosen if self.drained_competitor and chosen is not None else default

    def switched(self, now_us: int, mode: ControlMode) -> None:
        """The caller moved the flow to ``mode`` at ``now_us``; updates the probe backoff."""
        c = self.config
        if mode == self.mode:
            return
        self._prev_reference = None
        self.probe_failed_at_switch = False
        if mode == SENDER and self._probing_since_us is not None:
            if now_us - self._probing_since_us <= self._probe_span_us:
                self.probe_failed_at_switch = True
                self._probe_wait_us = min(2 * self._probe_wait_us, c.probe_max_us)
                self._prev_reference = self._stint_reference  # the probe failed
                if self._probe_is_early:  # the "leave" was the link, not the competitor
                    self._early_not_before_us = now_us + self._early_wait_us
                    self._early_wait_us = min(2 * self._early_wait_us, c.probe_max_us)
            else:
                self._probe_wait_us = c.probe_us
                self._early_wait_us = c.leave_backoff_us
            self._probing_since_us = None
        elif mode == RECEIVER:
            self._probing_since_us = now_us
            self._probe_is_early = self._deciding_early
            self.observe(now_us)  # the last Y before the probe: our own queue's depth
            deepest_us = max((q for _, q, _ in self._qd), default=0)
            self._probe_drain_us = int(c.probe_drain_factor * deepest_us)
            current = (now_us - self.since_us) // c.leave_bin_us
            self._stint_reference = _reference(
                [b for b in self._bins if 1 <= b.index < current], 1, c.leave_ref_quantile)
        self._deciding_early = False
        self._trains.clear()
        self._train_asked_us = None
        self._unverified_since_us = None
        self.mode = mode
        self.since_us = now_us
        self.switches += 1
        self._windows.clear()
        self._qd.clear()
        self._bins.clear()
        self._leave = {}
        self._left_eval = None

    @property
    def _probe_span_us(self) -> int:
        """A probe that lasts longer than this without a switch back has held, µs (at
        least Y after its drain allowance, when that is longer)."""
        c = self.config
        return max(2 * c.hold_us + c.min_dwell_us, self._probe_drain_us + c.hold_us)

    @property
    def qd_samples(self) -> tuple[tuple[int, int], ...]:
        """The fresh queuing-delay samples kept (the last Y as of the last call), (t µs, µs)."""
        return tuple((t, q) for t, q, _ in self._qd)

    @property
    def window_samples(self) -> tuple[tuple[int, int], ...]:
        """The granted windows kept (the last Y), (t µs, bytes)."""
        return tuple(self._windows)

    @property
    def probe_wait_us(self) -> int:
        """The sender-driven time before the next probe, µs."""
        return self._probe_wait_us
