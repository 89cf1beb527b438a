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
