/**
 * A drop-tail bottleneck with Mahimahi's trace semantics, under a simulated clock
 * (mahimahi src/frontend/link_queue.cc; docs/DESIGN.md §8 "Mahimahi link semantics"):
 * at each opportunity the head-of-line packets are served with 1504 bytes; a
 * packet larger than what is left carries its remaining bytes to the next
 * opportunity; surplus goes to the next queued packet; an empty queue wastes
 * the rest of the opportunity.
 */
import { MAHIMAHI_PACKET_BYTES } from "./trace.js";

export interface LinkPacket<T> {
  size_bytes: number;
  enqueue_ms: number;
  data: T;
}

export interface Departure<T> extends LinkPacket<T> {
  depart_ms: number;
}

export class TraceLink<T> {
  private readonly queue: LinkPacket<T>[] = [];
  private head = 0;
  private queued_bytes = 0;
  private head_sent_bytes = 0; // bytes of the head packet already carried by earlier opportunities
  private next_index = 0; // index into trace of the next opportunity
  private loop_base_ms = 0;
  readonly period_ms: number;
  /** Opportunity bytes offered so far, bytes. */
  capacity_bytes = 0;
  /** Bytes that left the queue, bytes: a packet counts whole when its last byte leaves. */
  delivered_bytes = 0;
  dropped_packets = 0;

  /**
   * Bytes the opportunities so far have carried, bytes: `delivered_bytes` plus the part of the head
   * packet already sent. Over a window of opportunities its rise is at most the window's capacity,
   * where `delivered_bytes`' can exceed it by a packet begun before the window (a utilization
   * measured from a warm-up counted those bytes twice over the run's start).
   */
  get served_bytes(): number {
    return this.delivered_bytes + this.head_sent_bytes;
  }

  /**
   * @param trace opportunity offsets, ms (parseMahimahiTrace)
   * @param queue_limit_packets drop-tail limit, packets (Infinity for unbounded)
   * @param queue_limit_bytes drop-tail limit, bytes (Infinity for unbounded)
   */
  constructor(
    private readonly trace: Uint32Array,
    private readonly queue_limit_packets = 1000,
    private readonly queue_limit_bytes = Number.POSITIVE_INFINITY,
  ) {
    if (trace.length === 0) throw new Error("TraceLink: empty trace");
    this.period_ms = trace[trace.length - 1]!;
  }

  private get length(): number {
    return this.queue.length - this.head;
  }

  /**
   * Enqueue at `now_ms`; returns false (and counts a drop) if the drop-tail queue is full. A head
   * packet already partly served is in transit, outside the limit (mahimahi's packet_in_transit_
   * is not in its DroptailPacketQueue; lab/nuwa_lab/emulator/link.py; spec/link_vectors.json).
   */
  enqueue(now_ms: number, size_bytes: number, data: T): boolean {
    const in_transit = this.head_sent_bytes > 0 ? 1 : 0;
    const waiting_bytes = this.queued_bytes - (in_transit ? this.queue[this.head]!.size_bytes : 0);
    if (this.length - in_transit + 1 > this.queue_limit_packets || waiting_bytes + size_bytes > this.queue_limit_bytes) {
      this.dropped_packets++;
      return false;
    }
    this.queue.push({ size_bytes, enqueue_ms: now_ms, data });
    this.queued_bytes += size_bytes;
    return true;
  }

  /** The time of the next opportunity, ms. */
  nextOpportunityMs(): number {
    return this.loop_base_ms + this.trace[this.next_index]!;
  }

  /** Serve every opportunity at or before `now_ms`; returns the packets that left, in order. */
  service(now_ms: number): Departure<T>[] {
    const out: Departure<T>[] = [];
    while (this.nextOpportunityMs() <= now_ms) {
      const t = this.nextOpportunityMs();
      this.capacity_bytes += MAHIMAHI_PACKET_BYTES;
      let budget = MAHIMAHI_PACKET_BYTES;
      while (budget > 0 && this.length > 0) {
        const p = this.queue[this.head]!;
        const need = p.size_bytes - this.head_sent_bytes;
        if (need <= budget) {
          budget -= need;
          this.head_sent_bytes = 0;
          this.head++;
          this.queued_bytes -= p.size_bytes;
          this.delivered_bytes += p.size_bytes;
          out.push({ ...p, depart_ms: t });
        } else {
          this.head_sent_bytes += budget; // carry into later opportunities
          budget = 0;
        }
      }
      if (this.head > 4096 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.next_index++;
      if (this.next_index >= this.trace.length) {
        this.next_index = 0;
        this.loop_base_ms += this.period_ms;
      }
    }
    return out;
  }

  /** Packets waiting. */
  get queuedPackets(): number {
    return this.length;
  }
}
