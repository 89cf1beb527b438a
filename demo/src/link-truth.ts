/**
 * What the emulator's link really did, for the demo's plots (Node side, no I/O here):
 * the trace's capacity per time bin, and the emulator log's per-bin queuing
 * delay, delivered rate and drops.
 *
 * Time base: link ms = CLOCK_MONOTONIC ms − T0, T0 being the emulator's
 * `base_timestamp_ms` (its ready line and log header). The emulator replays the
 * trace from link time 0, looping with period = the last timestamp
 * (lab/nuwa_lab/emulator/trace.py, mahimahi `link_queue.cc`), so the
 * opportunity schedule at link time t is the trace's, with no further offset.
 */

/** Bytes per delivery opportunity (mahimahi `PACKET_SIZE`, emulator `PACKET_SIZE_BYTES`). */
export const PACKET_SIZE_BYTES = 1504;

/** A parsed Mahimahi trace: non-decreasing ms offsets, one per opportunity; period = last offset. */
export interface MahimahiTrace {
  opportunities_ms: Int32Array;
  period_ms: number;
}

/**
 * Parse Mahimahi trace text (one non-negative integer ms per line; blank lines ignored).
 * @throws Error naming the line on a malformed, negative or decreasing value, or an empty / zero-period trace
 */
export function parseTrace(text: string, name = "<inline>"): MahimahiTrace {
  const out: number[] = [];
  let prev = 0;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const s = lines[i]!.trim();
    if (s === "") continue;
    if (!/^\d+$/.test(s)) throw new Error(`${name}:${i + 1}: malformed line ${JSON.stringify(s.slice(0, 40))}: expected an integer ms timestamp`);
    const v = Number(s);
    if (v < prev) throw new Error(`${name}:${i + 1}: timestamp ${v} is smaller than previous ${prev}`);
    prev = v;
    out.push(v);
  }
  if (out.length === 0) throw new Error(`${name}: empty trace (no delivery opportunities)`);
  if (out[out.length - 1]! <= 0) throw new Error(`${name}: last timestamp must be > 0 (it is the loop period)`);
  return { opportunities_ms: Int32Array.from(out), period_ms: out[out.length - 1]! };
}

/** Mean capacity over one loop, bits per second. */
export function meanRateBps(t: MahimahiTrace): number {
  return (t.opportunities_ms.length * PACKET_SIZE_BYTES * 8 * 1000) / t.period_ms;
}

/** First index i with a[i] >= x (a sorted). */
function lowerBound(a: Int32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Number of looped opportunities t with start_ms <= t < end_ms (the emulator's `opportunities_between_ms`, counted). */
export function opportunitiesBetween(t: MahimahiTrace, start_ms: number, end_ms: number): number {
  if (end_ms <= start_ms) return 0;
  const p = t.period_ms;
  let n = 0;
  for (let loop = Math.max(0, Math.floor(start_ms / p) - 1); loop * p < end_ms; loop++) {
    const base = loop * p;
    n += lowerBound(t.opportunities_ms, end_ms - base) - lowerBound(t.opportunities_ms, start_ms - base);
  }
  return n;
}

/**
 * Link capacity in bins [start_ms + i·bin_ms, start_ms + (i+1)·bin_ms), bits per second:
 * opportunities in the bin × 1504 bytes × 8 / bin length.
 * @throws RangeError if bin_ms <= 0, start_ms < 0 or count is not a non-negative integer
 */
export function capacityBins(t: MahimahiTrace, start_ms: number, bin_ms: number, count: number): number[] {
  if (!(bin_ms > 0)) throw new RangeError(`bin_ms must be > 0 (got ${bin_ms})`);
  if (!(start_ms >= 0)) throw new RangeError(`start_ms must be >= 0 (got ${start_ms})`);
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be a non-negative integer (got ${count})`);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const a = start_ms + i * bin_ms;
    out.push((opportunitiesBetween(t, a, a + bin_ms) * PACKET_SIZE_BYTES * 8 * 1000) / bin_ms);
  }
  return out;
}

/** One bin of the emulator log. */
export interface LogBin {
  /** Departed bytes. */
  delivered_bytes: number;
  /** Departures. */
  departures: number;
  /** Sum and max of the departures' queuing delays, ms (the log's `t - size delay` field). */
  qd_sum_ms: number;
  qd_max_ms: number;
  /** Drop-tail or random drops (`t d size`). */
  drops: number;
}

/**
 * Incremental reader of an emulator log (mahimahi `mm-link --downlink-log` format,
 * docs/DESIGN.md §8 "Mahimahi link semantics"): feed it chunks as the file grows; it keeps
 * per-bin departures and drops, and how far (link ms) the log is known to be complete.
 */
export class LogTail {
  private rest = "";
  private readonly bins = new Map<number, LogBin>();
  /** Largest event time seen, link ms (events are written in time order). */
  horizon_ms = -1;
  /** T0 from the `# base timestamp:` header, CLOCK_MONOTONIC ms, once seen. */
  base_timestamp_ms: number | null = null;

  /** @throws RangeError if bin_ms <= 0 */
  constructor(
    readonly bin_ms: number,
    private readonly keep_bins = 3000,
  ) {
    if (!(bin_ms > 0)) throw new RangeError(`bin_ms must be > 0 (got ${bin_ms})`);
  }

  /** Parse a chunk of the log; a partial last line is kept for the next chunk. Malformed lines are skipped. */
  feed(chunk: string): void {
    const text = this.rest + chunk;
    const end = text.lastIndexOf("\n");
    this.rest = end < 0 ? text : text.slice(end + 1);
    if (end < 0) return;
    for (const line of text.slice(0, end).split("\n")) {
      if (line.startsWith("#")) {
        const m = /^# base timestamp:\s*(\d+)/.exec(line);
        if (m) this.base_timestamp_ms = Number(m[1]);
        continue;
      }
      const f = line.split(" ");
      if (f.length < 3) continue;
      const t = Number(f[0]);
      if (!Number.isFinite(t)) continue;
      if (t > this.horizon_ms) this.horizon_ms = t;
      const kind = f[1];
      if (kind !== "-" && kind !== "d") continue;
      const i = Math.floor(t / this.bin_ms);
      let b = this.bins.get(i);
      if (!b) {
        b = { delivered_bytes: 0, departures: 0, qd_sum_ms: 0, qd_max_ms: 0, drops: 0 };
        this.bins.set(i, b);
        if (this.bins.size > this.keep_bins) this.bins.delete(this.bins.keys().next().value as number);
      }
      if (kind === "d") {
        b.drops++;
      } else {
        const qd = Number(f[3]);
        b.delivered_bytes += Number(f[2]);
        b.departures++;
        b.qd_sum_ms += qd;
        if (qd > b.qd_max_ms) b.qd_max_ms = qd;
      }
    }
  }

  /** Index of the first bin not known complete: bin i is complete once an event at or after its end was logged (time order). */
  completeBefore(): number {
    return this.horizon_ms < 0 ? 0 : Math.floor(this.horizon_ms / this.bin_ms);
  }

  /** Bin `i` (empty when nothing departed or dropped in it). */
  bin(i: number): LogBin {
    return this.bins.get(i) ?? { delivered_bytes: 0, departures: 0, qd_sum_ms: 0, qd_max_ms: 0, drops: 0 };
  }
}
