"""BBR (draft-ietf-ccwg-bbr, v3) as an aioquic congestion controller (``--cc bbr``).

Our own Python, written against the draft's pseudocode (each method names the draft
function it implements) with ngtcp2's ``lib/ngtcp2_bbr.c`` read as a reference for the
QUIC details the draft leaves open (loss recovery episodes, persistent congestion).
Sans-I/O like aioquic's controllers: every time comes from the packets and the ``now``
aioquic passes (s); sizes are bytes, rates bytes/s.

How aioquic's events map onto the draft's:

* ``on_packet_sent`` → BBROnTransmit (restart from idle) and the delivery-state
  snapshot of the packet (:mod:`.rate_sample`), kept here by packet number, since
  aioquic's sent packets carry no such fields.
* ``on_packet_acked`` (once per packet of an ACK frame) → UpdateRateSample; the ACK is
  finished (GenerateRateSample, then BBRUpdateOnACK) at aioquic's next event, which for
  an ACK that yields an RTT sample is ``on_rtt_measurement`` right after its packets,
  else the next send or loss.
* ``on_packets_lost`` → BBRUpdateOnLoss per packet, then a loss recovery episode as in
  RFC 9002 §7.3.2 (cwnd = inflight + 1 packet, restored when a packet sent after the
  episode began is acknowledged; ngtcp2's ``bbr_handle_recovery``).
* ``on_persistent_congestion`` → cwnd = inflight + 1 packet (RFC 9002 §7.6.2; ngtcp2).

The draft's logic is in three layers, each method named for the draft function it
implements: :mod:`.bbr_control` (state and control parameters), :mod:`.bbr_probe_bw`
(Drain exit, the ProbeBW cycle, inflight_hi, loss), :mod:`.bbr_machine` (the per-ACK
model, Startup's end, min RTT and ProbeRTT); this module maps aioquic's events onto them.

Where this departs from the draft (each at its line, each with its reason):

* the max-bandwidth filter advances once per ProbeBW cycle, as Linux BBRv3 does
  (:meth:`.bbr_probe_bw.BbrProbeBw._adapt_upper_bounds`);
* an expired min-RTT filter is not refreshed by a sample whose packet waited through an
  outage (:meth:`.bbr_machine.BbrMachine._waited_through_outage`,
  ``bbr_model.OUTAGE_MIN_RTTS``): the draft takes the next
  sample whatever its size, and after a dark or trickling link that is seconds, which then
  sizes every window (docs/PBQ.md, issue 17's fault).

The pacing rate (:attr:`BbrCongestionControl.pacing_rate_bytes_per_s`) reaches aioquic's
pacer through :mod:`.pacing`; the server marks app-limited phases with
:meth:`BbrCongestionControl.on_app_limited`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from aioquic.quic.congestion.base import QuicCongestionControl, register_congestion_control
from aioquic.quic.packet_builder import QuicSentPacket

from .bbr_machine import BbrMachine
from .bbr_model import STARTUP_PACING_GAIN
from .rate_sample import PacketDeliveryState

BBR_CC_NAME = "bbr"
"""aioquic congestion-control name of :class:`BbrCongestionControl`."""


def _key(packet: QuicSentPacket) -> tuple[object, int]:
    """A sent packet's identity: packet numbers count per epoch (RFC 9000 §12.3)."""
    return (packet.epoch, packet.packet_number)


class BbrCongestionControl(BbrMachine, QuicCongestionControl):
    """BBRv3 (module doc). Public read-only state for logs and tests: ``state``,
    ``max_bw_bytes_per_s``, ``bw_bytes_per_s``, ``min_rtt_s``, ``inflight_hi_bytes``,
    ``pacing_rate_bytes_per_s``, ``send_quantum_bytes``, ``round_count``,
    ``full_bw_reached``; ``congestion_window`` and ``bytes_in_flight`` as aioquic's.

    Args:
        max_datagram_size: SMSS, bytes.
        rng: source of BBRPickProbeWait's randomness (seed it for reproducible tests).
    """

    def __init__(self, *, max_datagram_size: int, rng: random.Random | None = None) -> None:
        QuicCongestionControl.__init__(self, max_datagram_size=max_datagram_size)
        BbrMachine.__init__(self, max_datagram_size=max_datagram_size, rng=rng)
        self._sent: dict[tuple[object, int], PacketDeliveryState] = {}
        self._ack_now_s: float | None = None  # an ACK's packets are being counted

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        """BBROnTransmit (BBRHandleRestartFromIdle) and the packet's delivery snapshot."""
        self._finish_ack()
        now = packet.sent_time if packet.sent_time is not None else 0.0
        if self.bytes_in_flight == 0 and self._sampler.app_limited_bytes:
            self._handle_restart_from_idle(now)
        state = self._sampler.on_packet_sent(
            packet_number=packet.packet_number, sent_time_s=now,
            size_bytes=packet.sent_bytes, bytes_in_flight=self.bytes_in_flight)
        self._sent[_key(packet)] = state
        self.bytes_in_flight += packet.sent_bytes
        if self.bytes_in_flight + self._mss > self.congestion_window:
            self._is_cwnd_limited = True  # no room for another full packet

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        """UpdateRateSample for one packet of the ACK being processed."""
        self.bytes_in_flight -= packet.sent_bytes
        state = self._sent.pop(_key(packet), None)
        if state is None:
            return
        if self._ack_now_s is not None and self._ack_now_s != now:
            self._finish_ack()
        self._ack_now_s = now
        self._sampler.on_packet_acked(state, now)

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        """aioquic's RTT sample closes the ACK's list of packets: BBRUpdateOnACK now."""
        if not self._first_rtt_seen and self.bw_bytes_per_s == 0:
            # BBRInitPacingRate with SRTT known: StartupPacingGain · InitialCwnd / SRTT
            self.pacing_rate_bytes_per_s = (STARTUP_PACING_GAIN * self.congestion_window
                                            / max(rtt, 0.001))
        self._first_rtt_seen = True
        self._finish_ack()

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        """BBRUpdateOnLoss per packet, then a recovery episode (RFC 9002 §7.3.2)."""
        self._finish_ack()
        latest_sent_s: float | None = None
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            state = self._sent.pop(_key(packet), None)
            if state is None:
                continue
            self._sampler.on_packet_lost(state)
            self._bytes_lost_in_round += state.size_bytes
            self._loss_events_in_round += 1
            self._handle_lost_packet(state, now)
            if latest_sent_s is None or state.sent_time_s > latest_sent_s:
                latest_sent_s = state.sent_time_s
        in_episode = (self._recovery_start_s is not None and latest_sent_s is not None
                      and latest_sent_s <= self._recovery_start_s)
        if latest_sent_s is not None and not in_episode:
            # RFC 9002 §7.3.2: one episode per round of losses; ngtcp2 bbr_handle_recovery
            self._save_cwnd()
            self._in_recovery = True
            self._recovery_start_s = now
            self.congestion_window = max(self.bytes_in_flight + self._mss, self._min_pipe_cwnd())

    def on_packets_expired(self, *, packets: Iterable[QuicSentPacket]) -> None:
        """Packets of a discarded space leave the flight."""
        self._finish_ack()
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            self._sent.pop(_key(packet), None)

    def on_persistent_congestion(self) -> None:
        """RFC 9002 §7.6.2: collapse to the flight plus one packet (ngtcp2's BBR)."""
        self._save_cwnd()
        self._in_recovery = False
        self._recovery_start_s = None
        self.congestion_window = max(self.bytes_in_flight + self._mss, self._min_pipe_cwnd())

    def on_app_limited(self) -> None:
        """The sender has nothing more to send now: mark the connection app-limited
        (draft "Detecting application-limited phases"; called by the server's send loop)."""
        self._sampler.mark_app_limited(self.bytes_in_flight)

    def get_log_data(self) -> dict[str, Any]:
        """aioquic's qlog metrics plus BBR's state."""
        data = super().get_log_data()
        data.update(bbr_state=self.state.value, pacing_rate=int(self.pacing_rate_bytes_per_s))
        return data

    def _finish_ack(self) -> None:
        now = self._ack_now_s
        if now is None:
            return
        self._ack_now_s = None
        rs = self._sampler.generate(self._conn_min_rtt_s)
        if rs.rtt_s is not None:
            rtt = max(rs.rtt_s, 0.0)
            if self._conn_min_rtt_s is None or rtt < self._conn_min_rtt_s:
                self._conn_min_rtt_s = rtt
        if (self._in_recovery and rs.newest_sent_time_s is not None
                and self._recovery_start_s is not None
                and rs.newest_sent_time_s > self._recovery_start_s):
            self._in_recovery = False  # ngtcp2 bbr_handle_recovery: the episode is over
            self._restore_cwnd()
        self._update_model_and_state(rs, now)
        self._update_control_parameters(rs)


register_congestion_control(BBR_CC_NAME, BbrCongestionControl)
