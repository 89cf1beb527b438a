/**
 * Mahimahi link traces: one integer per line, the millisecond offset of one
 * 1504-byte delivery opportunity; the schedule repeats with a period equal to
 * the last timestamp (mahimahi src/frontend/link_queue.cc).
 */
export const MAHIMAHI_PACKET_BYTES = 1504; // PACKET_SIZE in mahimahi

/**
 * Parse a Mahimahi trace.
 * @returns opportunity offsets, ms, non-decreasing
 * @throws Error naming the line for a malformed, negative or decreasing entry, or an empty trace
 */
export function parseMahimahiTrace(text: string): Uint32Array {
  const out: number[] = [];
  const lines = text.split("\n");
  let prev = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    if (!/^\d+$/.test(line)) throw new Error(`trace line ${i + 1}: not a non-negative integer: ${JSON.stringify(line.slice(0, 40))}`);
    const t = Number(line);
    if (t < prev) throw new Error(`trace line ${i + 1}: timestamp ${t} < previous ${prev}`);
    prev = t;
    out.push(t);
  }
  if (out.length === 0) throw new Error("trace is empty");
  if (out[out.length - 1]! <= 0) throw new Error("trace period (last timestamp) must be > 0 ms");
  return Uint32Array.from(out);
}

/** A constant-rate trace: `rate_bps` for `period_ms` (one loop), as Mahimahi offsets. */
export function constantRateTrace(rate_bps: number, period_ms = 1000): Uint32Array {
  if (!(rate_bps > 0) || !(period_ms > 0)) throw new RangeError("constantRateTrace: rate and period must be > 0");
  const per_ms = rate_bps / 8 / 1000 / MAHIMAHI_PACKET_BYTES; // opportunities per ms
  const out: number[] = [];
  let owed = 0;
  for (let t = 1; t <= period_ms; t++) {
    owed += per_ms;
    while (owed >= 1) {
      out.push(t);
      owed -= 1;
    }
  }
  if (out.length === 0 || out[out.length - 1] !== period_ms) out.push(period_ms);
  return Uint32Array.from(out);
}

/** Mean capacity of one trace period, bits per second. */
export function traceMeanBps(trace: Uint32Array): number {
  return (trace.length * MAHIMAHI_PACKET_BYTES * 8 * 1000) / trace[trace.length - 1]!;
}

/**
 * Burst variant of a trace: the same opportunities regrouped into bursts every
 * `gap_min_ms`..`gap_max_ms` ms, bytes and loop period conserved, no opportunity moved
 * earlier or more than `gap_max_ms` later. The construction of
 * `server/nuwa_server/emulator/burstify.py` (traces/README.md "Burst variants"), with a
 * mulberry32 generator instead of Python's, so a seed gives other draws than there.
 * @param trace opportunity timestamps, ms, non-decreasing (the last one is the period)
 * @returns the variant's timestamps, ms, one per opportunity of `trace`
 * @throws RangeError unless 1 ≤ gap_min_ms, 2·gap_min_ms ≤ gap_max_ms and the period ≥ gap_min_ms
 */
export function burstVariant(trace: Uint32Array, gap_min_ms = 20, gap_max_ms = 100, seed = 1): Uint32Array {
  const period_ms = trace[trace.length - 1] ?? 0;
  if (!(gap_min_ms >= 1 && gap_max_ms >= 2 * gap_min_ms)) throw new RangeError(`burstVariant: need 1 ≤ min and max ≥ 2 × min, got ${gap_min_ms}..${gap_max_ms}`);
  if (!(period_ms >= gap_min_ms)) throw new RangeError(`burstVariant: period ${period_ms} ms is shorter than the minimum gap ${gap_min_ms} ms`);
  let state = seed >>> 0;
  const uniform = (): number => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
  const ends: number[] = [];
  let t = 0;
  while (period_ms - t > gap_max_ms) {
    const hi = Math.min(gap_max_ms, period_ms - t - gap_min_ms);
    t += gap_min_ms + Math.floor(uniform() * (hi - gap_min_ms + 1));
    ends.push(t);
  }
  ends.push(period_ms);
  const out = new Uint32Array(trace.length);
  let i = 0;
  for (let k = 0; k < trace.length; k++) {
    while (trace[k]! > ends[i]!) i++;
    out[k] = ends[i]!;
  }
  return out;
}
