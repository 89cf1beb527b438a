/**
 * One flow of the simulator engine (engine.ts): the server-side sender and the receiver of one
 * session, on its own propagation lines, through the engine's shared bottleneck.
 *
 * Sender (the server, session.py / grants.py), per simulated ms:
 * - takes what reached it: grants (cumulative bytes received + window, every `grant_interval_ms`,
 *   one one-way delay late), acknowledgements of the packets that left the bottleneck (one one-way
 *   delay after their departure), capacity reports (policy `oracle`) and its own loss declarations
 *   (QuicRepair: 9/8 RTT after the send, RFC 9002 §6.1.2);
 * - writes frames while `outstanding + frame ≤ window in force`, or one frame when nothing is
 *   outstanding (the server's liveness rule, grants.py WriteBudget.allows / PROTOCOL.md "Grants"),
 *   each only when the pacer has a frame's tokens (pacing.ts; RFC 9002 §7.7): under `grants` at
 *   2 × window in force ÷ min(smoothed, latest) of the grants' echo RTTs, as the server's grant pacer
 *   (grants.py `GrantState.pace_wait_us`), except that the liveness frame is not exempt here (the
 *   bucket's two frames cover it);
 * - the window in force is, by policy: `grants` min(latest grant, ceiling) over outstanding =
 *   written − cumulative received (the server's grant rule); `oracle` min(capacity the link offered
 *   over the last base RTT, reported every `report_interval_ms` one one-way delay late, ceiling);
 *   `aimd` the ceiling alone (a loss-based sender standing in for cubic); for `oracle` and `aimd`
 *   outstanding = bytes in flight (sent and not acknowledged, RFC 9002 §2). The ceiling (ceiling.ts)
 *   can be turned off (`ceiling: false`) except under `aimd`. Two policies without a window:
 *   `fill` keeps the bottleneck queue full (a queue-filling stand-in: at most queue + 50 packets
 *   queued or on the way), `schedule` writes what an outside function says each ms (the offline
 *   frontier's omniscient senders; no pacing, no ceiling).
 *
 * Receiver: reads the stream in order behind losses (QuicRepair) and feeds every frame to the real
 * NuwaController (`controller.onFrame(send stamp, read time, frame bytes)`), ticked every ms after
 * the flow starts; policies `fill` and `schedule` run no controller.
 */
import type { NuwaConfig } from "../config.js";
import { type Decision, NuwaController } from "../controller.js";
import { AimdCeiling } from "./ceiling.js";
import { DelayLine } from "./delay.js";
import type { TraceLink } from "./link.js";
import { Pacer } from "./pacing.js";
import { type Departure, QuicRepair } from "./repair.js";

/** A frame on the simulated path. */
export interface Pkt {
  /** Index of its flow in the engine. */
  flow: number;
  /** Place in its flow's stream (the receiver reads in this order). */
  seq: number;
  /** Send stamp on the sender's clock, µs (the frame header's send_time_us). */
  send_us: number;
  frame_bytes: number;
  /** When it was written, true ms (the grant echo's RTT sample at the sender). */
  sent_ms: number;
}

/** How the sender decides what to write (module doc). */
export type SenderPolicy = "grants" | "oracle" | "aimd" | "fill" | "schedule";

export interface FlowOptions {
  /** Sender policy (module doc; default "grants"). */
  policy?: SenderPolicy;
  /** Controller settings of the receiver (policies grants, oracle, aimd). */
  config?: Partial<NuwaConfig>;
  /** When the flow starts, ms (default 0). */
  start_ms?: number;
  /** Frame payload, bytes (default 1200; the frame adds its header, FRAME_HEADER_BYTES). */
  frame_bytes: number;
  /** Bytes added per packet on the wire (QUIC + UDP + IPv4 headers), bytes (default 50). */
  wire_overhead_bytes?: number;
  /** Sender clock = (1 + clock_drift) · true time + clock_offset_us. */
  clock_offset_us?: number;
  clock_drift?: number;
  /** Grant interval, ms (default 5). */
  grant_interval_ms?: number;
  /** Oracle report period, ms (default 10). */
  report_interval_ms?: number;
  /**
   * Pacing rate = pacing_gain × window in force ÷ RTT (default 2; Infinity: no pacing). The RTT is,
   * under policy `grants`, min(smoothed RTT, latest sample) of the grants' echoes, as the server's
   * grant pacer (grants.py `GrantState.pace_wait_us`; the base RTT until the first echo) unless
   * `pacing_rtt` is "base"; under the other policies the base RTT.
   */
  pacing_gain?: number;
  /** Which RTT the pacer divides by under policy `grants`: "measured" (default) or "base" (the engine before the thirty-eighth session). */
  pacing_rtt?: "measured" | "base";
  /** Cap the window by the loss-based ceiling (default true; `aimd` is the ceiling alone). */
  ceiling?: boolean;
  /** Policy `schedule`: frames to write at t_ms given the bytes in flight (frame bytes). */
  schedule?: (t_ms: number, in_flight_bytes: number) => number;
  /**
   * An application-limited sender (a video server answering segment requests): the frames the
   * application has handed the sender by ms t, cumulative (frames of `frame_bytes`). The sender
   * writes no more than that, whatever the window. Absent: always backlogged (bulk).
   */
  app_frames?: (t_ms: number) => number;
  /**
   * Whether the receiver has a response in progress at ms t (the controller's `tick(now, expecting_data)`:
   * an idle player is not an outage; session.ts passes its open requests). Absent: always.
   */
  expecting_data?: (t_ms: number) => boolean;
}

/** What the engine gives a flow each ms. */
export interface PathView {
  link: TraceLink<Pkt>;
  one_way_delay_ms: number;
  queue_packets: number;
  /** Capacity the link offered over (t − RTT, t], bytes, as of the end of ms t. */
  capacityOverRtt(t_ms: number): number;
}

/** A frame the receiver read, with when (`read_ms`: in-order delivery, never before its departure). */
export type Read = Departure<Pkt> & { read_ms: number };

/** Sender-bound messages: a grant (with the echo of the latest frame read, true ms), an acknowledgement, an oracle report. */
type Feedback = { cum_bytes: number; window_bytes?: number; echo_sent_ms?: number; echo_hold_ms?: number } | { acked_bytes: number } | { oracle_window_bytes: number };

/** The frame budget of one ms (a guard: the window rule stops far earlier). */
const MAX_FRAMES_PER_MS = 10_000;

export class Flow {
  readonly controller: NuwaController | null;
  readonly policy: SenderPolicy;
  readonly start_ms: number;
  readonly frame_bytes: number;
  readonly wire_bytes: number;
  /** Frames written (new data), packets. */
  new_packets = 0;
  /** Retransmissions sent, packets. */
  retransmitted_packets = 0;
  /** Packets of this flow the bottleneck dropped. */
  dropped_packets = 0;
  /** Frame bytes the receiver read in order, bytes. */
  read_bytes = 0;
  private readonly downlink = new DelayLine<Pkt>(); // sender → bottleneck
  private readonly feedback = new DelayLine<Feedback>(); // receiver → sender
  private readonly losses = new DelayLine<true>(); // the sender's loss declarations
  private readonly repair: QuicRepair<Pkt>;
  private readonly pacer: Pacer;
  private readonly ceiling: AimdCeiling | null;
  private readonly o: FlowOptions;
  private written_bytes = 0;
  private in_flight_bytes = 0;
  private granted_cum = 0;
  private granted_window: number;
  private oracle_window = 10 * 1200; // RFC 9002 §7.2 initial window, until the first report
  private next_seq = 0;
  // the grant pacer's RTT (RFC 9002 §5.3 smoothing of the grants' echo samples), ms; NaN until the first
  private srtt_ms = Number.NaN;
  private latest_rtt_ms = Number.NaN;
  // the latest frame read: its true send ms and when it was read (the next grant's echo)
  private echo_sent_ms = Number.NaN;
  private echo_read_ms = Number.NaN;

  /** @throws RangeError on a bad controller config or pacing gain */
  constructor(
    readonly index: number,
    o: FlowOptions,
    private readonly one_way_delay_ms: number,
  ) {
    this.o = o;
    this.policy = o.policy ?? "grants";
    if (this.policy === "schedule" && !o.schedule) throw new RangeError("Flow: policy 'schedule' needs a schedule function");
    this.start_ms = o.start_ms ?? 0;
    this.frame_bytes = o.frame_bytes;
    this.wire_bytes = o.frame_bytes + (o.wire_overhead_bytes ?? 50);
    const rtt_ms = 2 * one_way_delay_ms;
    const windowless = this.policy === "fill" || this.policy === "schedule";
    this.controller = windowless ? null : new NuwaController(o.config ?? {});
    this.controller?.onRttSample(rtt_ms * 1000);
    this.granted_window = this.controller ? this.controller.windowBytes : Number.POSITIVE_INFINITY;
    this.repair = new QuicRepair<Pkt>(one_way_delay_ms);
    this.pacer = new Pacer(windowless ? Number.POSITIVE_INFINITY : (o.pacing_gain ?? 2), rtt_ms, this.frame_bytes);
    this.ceiling = !windowless && (this.policy === "aimd" || (o.ceiling ?? true)) ? new AimdCeiling(this.frame_bytes, rtt_ms) : null;
  }

  /** The ceiling's window, bytes (Infinity without one). */
  get cwndBytes(): number {
    return this.ceiling ? this.ceiling.cwnd_bytes : Number.POSITIVE_INFINITY;
  }

  /** Phase 1 of ms t (engine.ts): the sender's feedback and writes, then what reaches the bottleneck. */
  send(t: number, path: PathView): void {
    if (t < this.start_ms) return;
    for (let f = this.feedback.pop(t); f !== undefined; f = this.feedback.pop(t)) {
      if ("acked_bytes" in f) {
        this.in_flight_bytes -= f.acked_bytes;
        this.ceiling?.onAcked(f.acked_bytes);
      } else if ("oracle_window_bytes" in f) this.oracle_window = f.oracle_window_bytes;
      else {
        this.granted_cum = f.cum_bytes;
        if (f.window_bytes !== undefined) this.granted_window = f.window_bytes;
        if (f.echo_sent_ms !== undefined) this.onRttSample(t - f.echo_sent_ms - (f.echo_hold_ms ?? 0));
      }
    }
    while (this.losses.pop(t) !== undefined) this.ceiling?.onLoss(t);
    this.write(t, path);
    const d = this.one_way_delay_ms;
    for (let p = this.downlink.pop(t); p !== undefined; p = this.downlink.pop(t)) this.enqueue(t, path, p, t - d);
    for (const p of this.repair.due(t)) {
      this.retransmitted_packets++; // a retransmission is a packet sent
      this.enqueue(t, path, p, t - d);
    }
  }

  /** The grant pacer's RTT sample, ms (grants.py `GrantState.on_grant`: RFC 9002 §5.3's smoothing, no variance). */
  private onRttSample(rtt_ms: number): void {
    if (!(rtt_ms >= 0)) return;
    this.latest_rtt_ms = rtt_ms;
    this.srtt_ms = Number.isNaN(this.srtt_ms) ? rtt_ms : (7 * this.srtt_ms + rtt_ms) / 8;
  }

  private write(t: number, path: PathView): void {
    const sent_us = t * 1000 * (1 + (this.o.clock_drift ?? 0)) + (this.o.clock_offset_us ?? 0);
    // nothing to send beyond what the application gave (an app-limited sender: `app_frames`)
    const app_left = this.o.app_frames ? Math.max(0, this.o.app_frames(t) - this.new_packets) : Number.POSITIVE_INFINITY;
    let n: number;
    if (this.policy === "fill") n = Math.max(0, path.queue_packets + 50 - path.link.queuedPackets - this.downlink.length);
    else if (this.policy === "schedule") n = this.o.schedule!(t, this.in_flight_bytes);
    else {
      const grants = this.policy === "grants";
      const outstanding = grants ? this.written_bytes - this.granted_cum : this.in_flight_bytes;
      const window = grants ? this.granted_window : this.policy === "oracle" ? this.oracle_window : Number.POSITIVE_INFINITY;
      const in_force = Math.min(window, this.cwndBytes);
      // the grant pacer's RTT: min(smoothed, latest) of the echoes (the latest falls back as soon as a
      // queue drains, the smoothed one lags 8 samples behind it; grants.py GrantState.pacing_rtt_us)
      const measured = grants && this.o.pacing_rtt !== "base" && !Number.isNaN(this.srtt_ms);
      this.pacer.refill(in_force, measured ? Math.min(this.srtt_ms, this.latest_rtt_ms) : undefined);
      n = 0;
      // grants.py WriteBudget.allows: outstanding + frame ≤ window in force, or nothing outstanding (liveness)
      while (n < MAX_FRAMES_PER_MS && n < app_left && this.pacer.ready && (outstanding + n * this.frame_bytes <= 0 || outstanding + (n + 1) * this.frame_bytes <= in_force)) {
        this.pacer.take(this.frame_bytes);
        n++;
      }
    }
    n = Math.min(n, app_left);
    for (let i = 0; i < n; i++) {
      this.downlink.push(t + this.one_way_delay_ms, { flow: this.index, seq: this.next_seq++, send_us: sent_us, frame_bytes: this.frame_bytes, sent_ms: t });
      this.written_bytes += this.frame_bytes;
      this.in_flight_bytes += this.frame_bytes;
      this.new_packets++;
    }
  }

  private enqueue(t: number, path: PathView, p: Pkt, sent_ms: number): void {
    if (path.link.enqueue(t, this.wire_bytes, p)) return;
    this.dropped_packets++;
    this.losses.push(this.repair.onDrop(t, sent_ms, p), true);
  }

  /**
   * Phase 3 of ms t: this flow's departures from the bottleneck, read in order by the receiver
   * (`onRead` gets each frame with the controller's decision, null without a controller); then
   * the acknowledgements, the controller's tick and its grant, the oracle's report.
   */
  receive(t: number, departures: readonly Departure<Pkt>[], path: PathView, onRead?: (flow: number, r: Read, dec: Decision | null, t_ms: number) => void): void {
    const ctl = this.controller;
    if (departures.length > 0)
      for (const r of this.repair.read(departures)) {
        const dec = ctl ? ctl.onFrame(r.data.send_us, r.read_ms * 1000, r.data.frame_bytes) : null;
        this.echo_sent_ms = r.data.sent_ms;
        this.echo_read_ms = r.read_ms;
        this.read_bytes += r.data.frame_bytes;
        onRead?.(this.index, r, dec, t);
      }
    const d = this.one_way_delay_ms;
    if (departures.length > 0) this.feedback.push(t + d, { acked_bytes: departures.length * this.frame_bytes });
    if (t < this.start_ms || !ctl) return;
    ctl.tick(t * 1000, this.o.expecting_data?.(t) ?? true);
    if (t % (this.o.grant_interval_ms ?? 5) === 0) {
      const echo = Number.isNaN(this.echo_sent_ms) ? {} : { echo_sent_ms: this.echo_sent_ms, echo_hold_ms: t - this.echo_read_ms };
      this.feedback.push(t + d, { cum_bytes: ctl.cumReceivedBytes, window_bytes: ctl.windowBytes, ...echo });
    }
    if (this.policy === "oracle" && t > 0 && t % (this.o.report_interval_ms ?? 10) === 0) {
      const cap = path.capacityOverRtt(t);
      this.feedback.push(t + d, { oracle_window_bytes: Math.max(1200, Math.floor((cap * this.frame_bytes) / this.wire_bytes)) });
    }
  }
}
