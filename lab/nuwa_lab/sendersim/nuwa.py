"""The Nuwa flow: the TypeScript controller at the receiver, the server's grant rule and
ceiling at the sender.

Receiver (:class:`NuwaReceiver`): a :class:`~.quic.QuicReceiver` (ACKs as Chromium) that also
reads the stream in order (a frame behind a lost one waits for its repair, as the page's
stream reader) and hands every frame read, as ``(send_time_us, read time µs, FRAME_BYTES)``, to
the real ``NuwaController`` and the player's ``GrantPolicy`` in a Node subprocess
(``e2e/src/load-controllers.ts``, the load generator's bridge: JSON lines, one reply per
request), ticks it every 5 ms (``NuwaSession``'s timer, data expected throughout: a bulk
download), gives it the first RTT sample (the page's first-byte RTT, here the base RTT), and
sends each grant the policy asks for back over the path (one bridge serves all of a run's Nuwa
flows, one controller session each) (a datagram: seq, cumulative bytes
received, window, echo of the last frame's stamp and hold time; PROTOCOL.md "Grants").

Sender (:class:`NuwaSender`): a :class:`~.quic.QuicSender` whose controller is the server's
Cubic ceiling (``nuwa_ceiling``, ``nuwa_server.ceiling``) and whose new frames pass the
server's send loop for one session (``nuwa_server.send_loop.pump``, in its order): cwnd, the
grant-timeout fallback (:meth:`nuwa_server.grants.GrantState.poll_fallback`), the grant rule
(:meth:`~nuwa_server.grants.WriteBudget.allows` over min(grant, ceiling); when the grant allows
the frame but the ceiling does not, ``on_window_limited``), the grant pacer
(:meth:`~nuwa_server.grants.GrantState.pace_wait_us`: 2 × min(grant, ceiling) ÷ the echo RTT),
then the pacer (held: the window is in use, ``on_window_limited``). Grants arrive through
:meth:`~nuwa_server.grants.GrantState.on_grant`.
Retransmissions are aioquic's and pass no grant rule, as on the server.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path as FsPath
from typing import Any

from nuwa_server.ceiling import CEILING_NAME, NuwaCeilingCongestionControl
from nuwa_server.config import SENDER_CCS, SessionConfig
from nuwa_server.grants import GrantConfig, GrantState, WriteBudget
from nuwa_server.protocol import Grant
from nuwa_server.switcher import (
    POLL_INTERVAL_US,
    chosen_sender_cc,
    make_policy,
    set_control_mode,
)

from .core import Path, WirePacket
from .quic import FRAME_BYTES, QuicReceiver, QuicSender

REPO_ROOT = FsPath(__file__).resolve().parents[3]
BRIDGE_SCRIPT = REPO_ROOT / "e2e" / "src" / "load-controllers.ts"
TICK_MS = 5.0
"""The page's controller tick and grant check period, ms (session.ts ``tick_interval_ms``)."""


class Bridge:
    """A Node subprocess running ``e2e/src/load-controllers.ts``; :meth:`call` sends one
    request line and returns its reply (RuntimeError on an error reply or a dead bridge)."""

    def __init__(self) -> None:
        cmd = os.environ.get("NUWA_LOAD_BRIDGE")
        args = ["node", cmd] if cmd else [str(REPO_ROOT / "node_modules" / ".bin" / "tsx"),
                                          str(BRIDGE_SCRIPT)]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, bufsize=1, cwd=REPO_ROOT)

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        """One request, one reply (see the bridge's module doc for the operations)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(req, separators=(",", ":")) + "\n")
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"controller bridge exited ({self._proc.poll()})")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"controller bridge: {reply['error']}")
        return reply

    def close(self) -> None:
        """End the subprocess (it exits when its stdin closes)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class NuwaSender(QuicSender):
    """The server side of a Nuwa flow (module doc)."""

    def __init__(self, path: Path, flow: int, start_ms: float, switch: str = "none",
                 switch_model: str | None = None, switch_rule: str | None = None,
                 sender_cc: str | None = None) -> None:
        super().__init__(path, flow, CEILING_NAME, start_ms)
        self.grants = GrantState(GrantConfig(enforce=True), start_time_us=int(start_ms * 1000))
        self._budget: WriteBudget | None = None
        self._grant_seq = 0
        # --switch rule: the server's rule (nuwa_server.switch_policy) and swap
        # (nuwa_server.switcher.set_control_mode), fed as ConnectionSwitcher feeds them
        self.switch_config = SessionConfig(switch=switch, switch_model=switch_model,
                                           switch_rule=switch_rule,
                                           sender_cc=sender_cc or SENDER_CCS[0]
                                           ).validate()
        self.policy = (make_policy(self.switch_config, int(start_ms * 1000), f"flow {flow}")
                       if switch != "none" else None)
        self._rtt_min_us: int | None = None
        self._last_cum_bytes: int | None = None
        self._next_poll_us = 0
        self.switch_log: list[tuple[float, str]] = []

    def _window_limited(self) -> None:
        """Tell the Cubic ceiling its window is in use (other controllers: nothing)."""
        cc = self.recovery._cc
        if isinstance(cc, NuwaCeilingCongestionControl):
            cc.on_window_limited()

    def may_send_new(self, now_s: float) -> bool:
        """The grant rule of ``send_loop.pump`` for one session (module doc)."""
        t_us = round(now_s * 1e6)  # the grant pacer wakes at whole µs: not floored below them
        self.grants.poll_fallback(t_us)
        budget = self.grants.budget(t_us, self.recovery.bytes_in_flight)
        ceiling = self.recovery.congestion_window
        if not budget.allows(FRAME_BYTES, ceiling):
            window = budget.window_bytes
            if window is not None and budget.allows(FRAME_BYTES, window):
                self._window_limited()
            g = self.grants
            since = g.last_grant_time_us if g.last_grant_time_us is not None else g.start_time_us
            wake_us = since + (g.fallback_level(t_us) + 1) * g.config.grant_timeout_us
            self._wake(wake_us / 1e6)  # send_loop.grant_wake_us: the next fallback step
            return False
        pace_us = self.grants.pace_wait_us(t_us, FRAME_BYTES, budget, ceiling)
        if pace_us is not None:  # the grant pacer holds it (send_loop.pump): wake at its time
            self._wake(pace_us / 1e6)
            return False
        self._budget = budget
        return True

    def on_pacer_held(self) -> None:
        """The pacer held a frame the grant allowed: the window is in use (send_loop.pump)."""
        self._window_limited()

    def on_sent_new(self, now_s: float) -> None:
        """Count the frame against the grant (``GrantState.on_frame_written``)."""
        assert self._budget is not None
        self.grants.on_frame_written(FRAME_BYTES, self._budget)

    def on_grant(self, window_bytes: int, cum_bytes: int, echo_us: int, hold_us: int,
                 receiver_us: int) -> None:
        """A grant datagram reached the server now."""
        self._grant_seq += 1
        t_us = int(self.sim.now_ms * 1000)
        decision = self.grants.on_grant(Grant(self._grant_seq, receiver_us, cum_bytes,
                                              window_bytes, echo_us, hold_us), t_us)
        if self.policy is not None:
            delivered = (None if self._last_cum_bytes is None
                         else max(0, decision.cum_received_bytes - self._last_cum_bytes))
            self._last_cum_bytes = decision.cum_received_bytes
            self._switch_step(decision.window_bytes, decision.rtt_us, t_us, echo_us, delivered)
        self.try_send()

    def _switch_step(self, window_bytes: int, rtt_us: int | None, t_us: int,
                     echo_us: int | None = None, delivered_bytes: int | None = None) -> None:
        """ConnectionSwitcher.on_grant then .poll (every POLL_INTERVAL_US), in sim time."""
        assert self.policy is not None
        qd = None
        if rtt_us is not None:
            self._rtt_min_us = rtt_us if self._rtt_min_us is None else min(self._rtt_min_us,
                                                                            rtt_us)
            qd = rtt_us - self._rtt_min_us
        self.policy.observe(t_us, window_bytes, qd, echo_us if qd is not None else None,
                            delivered_bytes)
        if t_us < self._next_poll_us:
            return
        self._next_poll_us = t_us + POLL_INTERVAL_US
        target = self.policy.decide(t_us)
        if target is not None:
            set_control_mode(self.recovery, [self.grants], self.switch_config, target, t_us,
                             chosen_sender_cc(self.policy, self.switch_config, target))
            self.policy.switched(t_us, target)
            self.switch_log.append((t_us / 1e6, target))


class NuwaReceiver(QuicReceiver):
    """The page's side of a Nuwa flow (module doc). Call :meth:`close` after the run."""

    def __init__(self, path: Path, sender: NuwaSender, bridge: Bridge, ack_every: int,
                 max_ack_delay_ms: float) -> None:
        super().__init__(path, sender, ack_every, max_ack_delay_ms)
        self.nuwa_sender = sender
        self.bridge = bridge
        self.sid = sender.flow
        self.grants_sent = 0
        self._held: dict[int, WirePacket] = {}
        self._next_read = 0
        self._last_send_us = 0
        self._last_recv_us = 0
        self._tick_started = False
        bridge.call({"o": "open", "id": self.sid, "cc": {}})
        self.sim.at(sender.start_ms, self._first_tick)

    def _first_tick(self) -> None:
        rtt_us = int(2 * self.path.one_way_delay_ms * 1000)
        self._grants(self.bridge.call({"o": "rtt", "id": self.sid, "rtt_us": rtt_us}))
        self._tick()

    def _tick(self) -> None:
        t_us = int(self.sim.now_ms * 1000)
        self._grants(self.bridge.call({"o": "tick", "t": t_us, "s": [[self.sid, 1]]}))
        self.sim.at(self.sim.now_ms + TICK_MS, self._tick)

    def on_frame(self, pkt: WirePacket, now_ms: float) -> None:
        """Read the stream in order and feed the controller every frame read (module doc)."""
        self._held[pkt.frame_seq] = pkt
        flat: list[int] = []
        now_us = int(now_ms * 1000)
        while self._next_read in self._held:
            p = self._held.pop(self._next_read)
            self._next_read += 1
            flat += [p.send_us, now_us, FRAME_BYTES]
            self._last_send_us, self._last_recv_us = p.send_us, now_us
        if flat:
            self._grants(self.bridge.call({"o": "f", "t": now_us, "s": [[self.sid, flat]]}))

    def _grants(self, reply: dict[str, Any]) -> None:
        now_us = int(self.sim.now_ms * 1000)
        for _, window, cum in reply.get("g", []):
            self.grants_sent += 1
            echo, hold = self._last_send_us, max(0, now_us - self._last_recv_us)
            self.path.back(partial(self.nuwa_sender.on_grant, int(window), int(cum), echo, hold,
                                   now_us))

    def close(self) -> None:
        """Close the controller's session (the bridge stays open for the other flows)."""
        self.bridge.call({"o": "close", "id": self.sid, "t": int(self.sim.now_ms * 1000)})


def make_nuwa_flow(path: Path, flow: int, start_ms: float, ack_every: int,
                   max_ack_delay_ms: float, bridge: Bridge, switch: str = "none",
                   switch_model: str | None = None,
                   switch_rule: str | None = None,
                   sender_cc: str | None = None) -> tuple[NuwaSender, NuwaReceiver]:
    """A Nuwa flow's sender and receiver; its controller is session ``flow`` of ``bridge``
    (one bridge serves every Nuwa flow of a run); ``switch``: ``none`` or ``rule`` (the
    server's ``--switch``; ``dqn``: ``switch_model``, the server's ``--switch-model``);
    ``switch_rule``: the rule's thresholds changed (the server's ``--switch-rule`` JSON);
    ``sender_cc``: the controller while sender-driven (the server's ``--sender-cc``; None:
    its default)."""
    sender = NuwaSender(path, flow, start_ms, switch, switch_model, switch_rule, sender_cc)
    return sender, NuwaReceiver(path, sender, bridge, ack_every, max_ack_delay_ms)
