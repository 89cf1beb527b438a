/**
 * The simulator engine of @nuwa/cc: every simulation (bulk.ts, bench-sim.ts, shared.ts,
 * stepper.ts, frontier.ts) is a thin driver over it, so all of them run one model of the path.
 *
 * Model, under a simulated clock in 1 ms steps:
 * - a Mahimahi drop-tail bottleneck at the receiver's end of the path (link.ts; docs/DESIGN.md §8
 *   "Mahimahi link semantics"), shared by every flow;
 * - a propagation delay each way (`one_way_delay_ms`, delay.ts): data reaches the bottleneck one
 *   one-way delay after it is written, grants and acknowledgements reach the sender one one-way
 *   delay after the receiver sends them;
 * - one loss model, QUIC's (repair.ts): a dropped frame is declared lost and sent again 9/8 RTT
 *   after its send, keeps its send stamp, and the receiver reads the stream in order behind it;
 * - per flow (flow.ts) a sender with the server's rules (grant rule with the one-frame liveness,
 *   pacing, the loss-based ceiling) and the real NuwaController at the receiver.
 *
 * One ms t: (1) each flow that has started, in an order rotated every ms so that no flow always
 * reaches the queue first, takes its feedback, writes, and puts what has crossed the propagation
 * line (and its due retransmissions) into the bottleneck; (2) the bottleneck serves every
 * opportunity at t; (3) each flow, in index order, reads its departures in stream order, feeds
 * its controller, sends acknowledgements, ticks the controller and grants. Deterministic.
 */
import type { Decision } from "../controller.js";
import { Flow, type FlowOptions, type PathView, type Pkt, type Read } from "./flow.js";
import { TraceLink } from "./link.js";
import type { Departure } from "./repair.js";

export interface PathOptions {
  /** Opportunity offsets, ms (parseMahimahiTrace); looped as Mahimahi does. */
  trace: Uint32Array;
  /** One-way propagation delay each way, ms (default 25). */
  one_way_delay_ms?: number;
  /** Drop-tail limit, packets (default 1000). */
  queue_packets?: number;
}

/** Called for every frame a receiver reads: flow index, the frame, the controller's decision (null without one), the ms. */
export type ReadHook = (flow: number, r: Read, dec: Decision | null, t_ms: number) => void;

export class Engine {
  readonly link: TraceLink<Pkt>;
  readonly flows: Flow[];
  readonly one_way_delay_ms: number;
  private readonly queue_packets: number;
  private readonly cap_at: number[] = []; // link.capacity_bytes at the end of each ms
  private t_ms = 0;
  private readonly view: PathView;

  /**
   * @param path the bottleneck and the propagation delay
   * @param flows one FlowOptions per flow (flow i has index i)
   * @param onRead per-frame hook for the drivers' metrics
   * @throws RangeError without flows, or on a bad flow option (flow.ts)
   */
  constructor(
    path: PathOptions,
    flows: readonly FlowOptions[],
    private readonly onRead?: ReadHook,
  ) {
    if (flows.length === 0) throw new RangeError("Engine: no flows");
    this.one_way_delay_ms = path.one_way_delay_ms ?? 25;
    this.queue_packets = path.queue_packets ?? 1000;
    this.link = new TraceLink<Pkt>(path.trace, this.queue_packets);
    this.flows = flows.map((f, i) => new Flow(i, f, this.one_way_delay_ms));
    const rtt_ms = 2 * this.one_way_delay_ms;
    this.view = {
      link: this.link,
      one_way_delay_ms: this.one_way_delay_ms,
      queue_packets: this.queue_packets,
      capacityOverRtt: (t) => this.link.capacity_bytes - (t - rtt_ms >= 0 ? this.cap_at[t - rtt_ms]! : 0),
    };
  }

  /** Simulated time: the next ms to run. */
  get nowMs(): number {
    return this.t_ms;
  }

  /** Run one ms (module doc). */
  tick(): void {
    const t = this.t_ms;
    const n = this.flows.length;
    for (let k = 0; k < n; k++) this.flows[(k + t) % n]!.send(t, this.view);
    const deps = this.link.service(t);
    this.cap_at.push(this.link.capacity_bytes);
    for (let i = 0; i < n; i++) {
      const mine: readonly Departure<Pkt>[] = n === 1 ? deps : deps.filter((d) => d.data.flow === i);
      this.flows[i]!.receive(t, mine, this.view, this.onRead);
    }
    this.t_ms = t + 1;
  }

  /** Run until simulated time `end_ms` (exclusive). */
  runUntil(end_ms: number): void {
    while (this.t_ms < end_ms) this.tick();
  }

  /** Packets entering the path (new frames and retransmissions) over all flows so far. */
  get sentPackets(): number {
    let s = 0;
    for (const f of this.flows) s += f.new_packets + f.retransmitted_packets;
    return s;
  }
}
