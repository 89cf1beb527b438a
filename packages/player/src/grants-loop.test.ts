/**
 * The grant policy and the controller in one closed loop on a short path (simulated clock): a
 * sender held to the last grant's cumulative count + window, a FIFO link (20 Mbit/s, 0.65 ms each
 * way unless a case says otherwise). Thirty-fifth session: on loopback under CPU load a one-frame
 * window turned over once per 10 ms grant interval, not per RTT, and the controller's window
 * validation then held it at the floor for good (0.8 Mbit/s for 35 s); the half-window grant on
 * short paths lets it leave the floor. Thirty-sixth session: the validation counted min RTT + Qd as
 * a window's turnaround, where the grant's wait adds one min RTT more; on a path under ~3 ms of RTT
 * it then admitted no growth (0.6 ms RTT at 20 Mbit/s: 9 Mbit/s, 1.1 frames, without any lag).
 */
import { type NuwaConfig, NuwaController } from "@nuwa/cc";
import { describe, expect, it } from "vitest";
import { GrantPolicy } from "./grants.js";

const FRAME_BYTES = 1232;
const STEP_US = 50;

interface Path {
  one_way_us: number;
  link_mbps: number;
}
const LOOPBACK: Path = { one_way_us: 650, link_mbps: 20 };
const NO_LAG = { from_us: 0, to_us: 0, lag_us: 0 };
const ONE_S_LAG = { from_us: 2e6, to_us: 3e6, lag_us: 30_000 }; // frames 30 ms late from 2 s to 3 s

/**
 * Run the loop for `duration_us`; between `lag_from_us` and `lag_to_us` every frame reaches the
 * receiver `lag_us` late (a page that cannot keep up). `rtt_known`: the policy gets the
 * controller's min RTT (as session.ts passes it), else NaN (the rule before the fix).
 * @returns Mbit/s delivered over [measure_from_us, duration_us) and the share of grants at the floor there.
 */
function loop(
  rtt_known: boolean,
  duration_us: number,
  measure_from_us: number,
  lag = ONE_S_LAG,
  path: Path = LOOPBACK,
  config: Partial<NuwaConfig> = {},
  retry = true,
): { mbps: number; floor_share: number } {
  const ONE_WAY_US = path.one_way_us;
  const SERVICE_US = (FRAME_BYTES * 8) / path.link_mbps; // µs a frame (20 Mbit/s: 492.8 µs)
  const c = new NuwaController(config);
  let retry_at_us = Number.POSITIVE_INFINITY; // session.ts's re-check of a grant the least interval held back
  c.onRttSample(2 * ONE_WAY_US);
  const policy = new GrantPolicy();
  let allowed = c.windowBytes; // cum_received + window of the newest grant the sender has
  let acked = 0; // cum_received of that grant
  let sent = 0;
  let link_free_us = 0;
  const arrivals: { send_us: number; at_us: number }[] = []; // in arrival order
  const grants: { at_us: number; allowed: number; cum: number }[] = [];
  let delivered = 0;
  let last_at_us = 0; // the receiver reads in order: a frame behind a lagged one waits for it
  let grants_after = 0;
  let floor_after = 0;
  const maybeGrant = (t: number) => {
    const w = Math.round(c.windowBytes);
    if (!policy.due(t, w, rtt_known ? c.minRttSampleUs : Number.NaN)) return;
    policy.sent(t, w);
    grants.push({ at_us: t + ONE_WAY_US, allowed: c.cumReceivedBytes + w, cum: c.cumReceivedBytes });
    if (t >= measure_from_us) {
      grants_after++;
      if (w <= 1200) floor_after++;
    }
  };
  for (let t = 0; t < duration_us; t += STEP_US) {
    while (grants.length && grants[0]!.at_us <= t) ({ allowed, cum: acked } = grants.shift()!); // latest wins
    // the server's rule (PROTOCOL.md "Grants"): up to cum + window, and one frame whenever nothing is outstanding
    while (sent + FRAME_BYTES <= allowed || sent <= acked) {
      link_free_us = Math.max(link_free_us, t) + SERVICE_US;
      const at = link_free_us + ONE_WAY_US;
      last_at_us = Math.max(last_at_us, at >= lag.from_us && at < lag.to_us ? at + lag.lag_us : at);
      arrivals.push({ send_us: t, at_us: last_at_us });
      sent += FRAME_BYTES;
    }
    let got = 0;
    while (arrivals.length && arrivals[0]!.at_us <= t) {
      const a = arrivals.shift()!;
      c.onFrame(a.send_us, a.at_us, FRAME_BYTES);
      got++;
      if (a.at_us >= measure_from_us) delivered += FRAME_BYTES;
    }
    if (got) {
      policy.onFrames(got, got * FRAME_BYTES);
      maybeGrant(t);
      const r = policy.retryInUs(t, c.minRttSampleUs);
      if (retry && Number.isFinite(r) && retry_at_us === Number.POSITIVE_INFINITY) retry_at_us = t + r;
    }
    if (t >= retry_at_us) {
      retry_at_us = Number.POSITIVE_INFINITY;
      maybeGrant(t);
    }
    if (t % 5000 === 0) {
      c.tick(t, true);
      maybeGrant(t);
    }
  }
  return { mbps: (delivered * 8) / (duration_us - measure_from_us), floor_share: floor_after / Math.max(1, grants_after) };
}

describe("grant policy × controller on a 1.3 ms path", () => {
  it("a window that fell to one frame during a receiver lag leaves the floor (before the fix it stayed there)", () => {
    const fixed = loop(true, 8e6, 5e6);
    const before = loop(false, 8e6, 5e6, ONE_S_LAG, LOOPBACK, { target_delay_max_packets: 0 }, false); // the page and controller of then
    console.log(`after a 1 s receiver lag, 5-8 s: ${fixed.mbps.toFixed(2)} Mbit/s (${(100 * fixed.floor_share).toFixed(0)} % of grants at the floor); the rule before: ${before.mbps.toFixed(2)} Mbit/s (${(100 * before.floor_share).toFixed(0)} %)`);
    expect(before.floor_share).toBeGreaterThan(0.9); // the defect, reproduced: the loop can fail
    expect(before.mbps).toBeLessThan(2); // 0.99 Mbit/s: one frame per 10 ms
    expect(fixed.floor_share).toBeLessThan(0.1);
    // 20.00 Mbit/s of 20 with the validation counting the grant's wait; 5.47 without (a fixed point
    // near two frames, thirty-fifth session)
    expect(fixed.mbps).toBeGreaterThan(0.9 * LOOPBACK.link_mbps);
  });

  it("a window at one frame on a 0.6 ms path at 100 Mbit/s (Td 10 ms) leaves it once a grant the least interval held back is re-checked when it ends (fifty-sixth session)", () => {
    // A Td of 10 ms (the live preset; the first form of the Td cap in packets held it there at 100 Mbit/s
    // too): frames 30 ms late for a second cut the window to one frame. Its frame arrives 0.7 ms after
    // the grant, inside the policy's 1 ms least interval; re-checked only at the next 5 ms tick the
    // window turned over once per tick (1.97 Mbit/s), which the validation (one min RTT for the grant's
    // wait) read as a quarter used: held there for good. Re-checked when the interval ends (grants.ts
    // retryInUs, session.ts): the link's rate.
    const path = { one_way_us: 300, link_mbps: 100 };
    const tick_only = loop(true, 10e6, 5e6, ONE_S_LAG, path, { target_delay_ms: 10 }, false);
    const retried = loop(true, 10e6, 5e6, ONE_S_LAG, path, { target_delay_ms: 10 });
    expect(tick_only.mbps).toBeLessThan(5); // the defect, reproduced
    expect(retried.mbps).toBeGreaterThan(90);
  });

  it("fills short paths with and without a receiver lag (the validation counts the grant's wait of one min RTT)", () => {
    // Before the thirty-sixth session's fix, 5-10 s (Mbit/s, no lag / after the lag): 0.3 ms each way
    // 20 Mbit/s 8.96 / 8.96, 100 Mbit/s 100 / 1.97; 0.65 ms 15.63 / 5.47, 100 / 14.08; 1.5 ms 20 / 5.63,
    // 100 / 100. With it: 20 / 18.48 at 0.3 ms and 20 Mbit/s, the link's rate in every other case.
    for (const one_way_us of [300, 650, 1500]) {
      for (const link_mbps of [20, 100]) {
        for (const lag of [NO_LAG, ONE_S_LAG]) {
          const r = loop(true, 10e6, 5e6, lag, { one_way_us, link_mbps });
          const name = `${one_way_us / 1000} ms each way, ${link_mbps} Mbit/s, ${lag.lag_us ? "after a 1 s lag" : "no lag"}`;
          expect(r.mbps, name).toBeGreaterThan(0.9 * link_mbps);
        }
      }
    }
  });
});
