/** Statistics helpers of the simulators. */

/** Percentile of an unsorted array (nearest rank), or NaN if empty. */
export function percentile(xs: ArrayLike<number>, q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = Float64Array.from(xs as ArrayLike<number>).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.round((q / 100) * (s.length - 1))))]!;
}

/** Arithmetic mean, 0 for an empty array (the simulators' convention for "no packet"). */
export function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return s / Math.max(1, xs.length);
}
