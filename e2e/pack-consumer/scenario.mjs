/**
 * One deterministic workload for @nuwa/cc, run twice by e2e/pack.e2e.test.ts:
 * against the repository's sources (in the test process) and against the
 * packed tarballs installed in an empty project (cc.mjs). The two results must
 * be equal, which proves the published build is the same code as src/.
 *
 * Frames: 1220 bytes every 1 ms on the sender clock; the receiver clock is
 * offset by −5 s (no clock sync is needed: nuwa-icpads Eq. 1) and each frame
 * takes 20 ms of propagation plus an imposed queuing delay that ramps from 0 to
 * 40 ms and back. Eq. 1 (sign corrected) must return exactly the imposed queue.
 */

const FRAME_BYTES = 1220;
const OFFSET_US = -5_000_000; // receiver clock − sender clock, µs
const PROPAGATION_US = 20_000;

/** Imposed queuing delay of frame i, µs: 0 for 100 frames, up to 40 ms at i = 300, back to 0 at i = 500. */
export function imposedQueueUs(i) {
  if (i < 100) return 0;
  if (i < 300) return (i - 100) * 200;
  if (i < 500) return (500 - i) * 200;
  return 0;
}

/**
 * @param cc the @nuwa/cc module namespace
 * @param sim the @nuwa/cc/sim module namespace
 */
export function runScenario(cc, sim) {
  const c = new cc.NuwaController({ target_delay_ms: 20 });
  const decisions = [];
  let eq1_max_abs_error_ms = 0;
  let last_recv_us = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < 600; i++) {
    const send_us = 10_000_000 + i * 1000;
    const recv_us = Math.max(last_recv_us, send_us + OFFSET_US + PROPAGATION_US + imposedQueueUs(i));
    last_recv_us = recv_us;
    const d = c.onFrame(send_us, recv_us, FRAME_BYTES);
    if (i % 10 === 0) c.tick(recv_us, true);
    eq1_max_abs_error_ms = Math.max(eq1_max_abs_error_ms, Math.abs(d.raw_queuing_delay_ms - imposedQueueUs(i) / 1000));
    if (i % 50 === 0 || i === 599) decisions.push({ i, ...d });
  }
  const est = c.estimate(last_recv_us);
  const bulk = sim.simulateBulk({ trace: sim.constantRateTrace(12e6), duration_s: 5, one_way_delay_ms: 20 });
  let samples_sum = 0;
  for (const x of bulk.samples) samples_sum += x;
  return {
    decisions,
    eq1_max_abs_error_ms,
    window_bytes: c.windowBytes,
    min_window_bytes: c.config.min_window_bytes,
    max_window_bytes: c.config.max_window_bytes,
    estimate_bps: est.bps,
    estimate_basis: est.basis,
    bulk: { utilization: bulk.utilization, queuing_delay_ms: bulk.queuing_delay_ms, loss_rate: bulk.loss_rate, delivered_bytes: bulk.delivered_bytes, capacity_bytes: bulk.capacity_bytes, samples: bulk.samples.length, samples_sum },
  };
}
