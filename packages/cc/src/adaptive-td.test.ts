/**
 * The adaptive target delay and the one-frame floor (issue 14), driven with recorded traces
 * through the trace simulator: a burst variant of a recorded LTE trace (the bursty-delivery
 * regime) and the NYC 3G subway trace with its 23 s near-dark stretch.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "./config.js";
import { NuwaController } from "./controller.js";
import { simulateBulk } from "./sim/bulk.js";
import { simulateShared } from "./sim/shared.js";
import { burstVariant, constantRateTrace, parseMahimahiTrace } from "./sim/trace.js";
import { LinkWaitEstimator } from "./waits.js";

const TRACES = join(dirname(fileURLToPath(import.meta.url)), "../../../traces");
const trace = (rel: string) => parseMahimahiTrace(readFileSync(join(TRACES, rel), "utf8"));
/** The controller before issue 14: Td fixed at 25 ms, a four-packet floor, the raw Qd driving the rule. */
const FIXED_TD = { adaptive_target_delay: false, target_delay_max_packets: 0, min_window_bytes: 4 * 1200, qd_source: "raw" } as const;
/** The opt-in adaptive Td (off by default: see config.ts and the shared-queue test below). */
const ADAPTIVE = { adaptive_target_delay: true } as const;
/** The opt-in packet floor of Td as measured in the forty-fourth session (config.ts target_delay_min_packets). */
const PACKETS = { target_delay_min_packets: 6 } as const;

describe("LinkWaitEstimator", () => {
  it("counts only frames that found the queue empty of ours (Qd < gap), each above the recent least wait", () => {
    const w = new LinkWaitEstimator(8, 10_000_000, 500_000);
    expect(w.offer(0, 5_000, Number.POSITIVE_INFINITY)).toBe(true);
    expect(w.offer(1_000, 5_000, 1_000)).toBe(false); // queued behind its predecessor
    expect(w.offer(50_000, 30_000, 49_000)).toBe(true); // 25 ms above the 5 ms floor
    expect(w.quantileUs(1, 50_000)).toBe(25_000);
    expect(w.quantileUs(0, 50_000)).toBe(0);
    // a standing queue of 40 ms under every wait a second later: only the jitter above it counts
    const s = new LinkWaitEstimator(8, 10_000_000, 500_000);
    for (let i = 0; i < 5; i++) s.offer(i * 100_000, 40_000 + (i % 2) * 4_000, 100_000);
    expect(s.quantileUs(1, 500_000)).toBe(4_000);
  });

  it("forgets old samples and keeps only the newest `capacity`", () => {
    const w = new LinkWaitEstimator(4, 1_000_000, 1);
    for (let i = 0; i < 10; i++) w.offer(i * 100_000, i * 1_000, Number.POSITIVE_INFINITY);
    expect(w.size).toBe(4);
    expect(w.quantileUs(0, 900_000)).toBe(0); // a 1 µs floor window: each wait is its own floor
    expect(w.quantileUs(0.5, 10_000_000)).toBe(0); // all expired
    expect(() => new LinkWaitEstimator(0)).toThrow(RangeError);
  });
});

describe("adaptive Td on recorded traces", () => {
  const lte = trace("4G/mahimahi-tmobile-lte-short.mahi");

  it("bursty delivery (the LTE recording regrouped into 20-100 ms bursts): fills the link where a fixed Td starves", () => {
    const burst = burstVariant(lte, 20, 100, 1);
    let td_max = 0;
    const adaptive = simulateBulk({ trace: burst, duration_s: 40, config: ADAPTIVE, onTick: (t, c) => { if (c && t > 5000) td_max = Math.max(td_max, c.targetDelayInForceMs); } });
    const fixed = simulateBulk({ trace: burst, duration_s: 40, config: FIXED_TD });
    expect(fixed.utilization).toBeLessThan(0.4); // the starvation issue 14 reports (0.37 end to end)
    expect(adaptive.utilization).toBeGreaterThan(0.55); // measured 0.62 (0.09 fixed)
    expect(adaptive.queuing_delay_ms.p95).toBeLessThan(250); // the gaps are up to 100 ms
    expect(td_max).toBeGreaterThan(40); // Td rose by the link's own waits (measured 44)
    expect(td_max).toBeLessThanOrEqual(200);
  });

  it("the same recording as recorded: Td stays near its base, delay and utilization as with the fixed Td", () => {
    const tds: number[] = [];
    const adaptive = simulateBulk({ trace: lte, duration_s: 40, config: ADAPTIVE, onTick: (t, c) => { if (c && t > 5000 && t % 100 === 0) tds.push(c.targetDelayInForceMs); } });
    const fixed = simulateBulk({ trace: lte, duration_s: 40, config: FIXED_TD });
    tds.sort((a, b) => a - b);
    expect(tds[Math.floor(tds.length / 2)]!).toBeLessThan(32);
    expect(adaptive.utilization).toBeGreaterThan(fixed.utilization - 0.02);
    expect(adaptive.queuing_delay_ms.p95).toBeLessThan(fixed.queuing_delay_ms.p95 * 1.15 + 5);
  });

  it("a pinned Td does not move (live callers: target_delay_max_ms = target_delay_ms)", () => {
    const burst = burstVariant(lte, 20, 100, 1);
    const umts = trace("3G/mahimahi-tmobile-umts-driving.mahi"); // slow enough for the packet floor to act
    const tdMax = (tr: Uint32Array, config: object) => {
      let td_max = 0;
      simulateBulk({ trace: tr, duration_s: 20, config, onTick: (_t, c) => { if (c) td_max = Math.max(td_max, c.targetDelayInForceMs); } });
      return td_max;
    };
    expect(tdMax(burst, { ...ADAPTIVE, target_delay_max_ms: 25 })).toBe(25);
    expect(tdMax(umts, { ...PACKETS, target_delay_max_ms: 25 })).toBe(25);
    expect(tdMax(umts, PACKETS)).toBeGreaterThan(25); // not pinned, the floor raises it there
    const c = new NuwaController({ ...ADAPTIVE, target_delay_max_ms: 60 });
    expect(() => c.setParams({ target_delay_max_ms: 10 })).toThrow(/target_delay_max_ms/);
  });
});

describe("near-dark links (NYC 3G subway, 23 s under 0.3 Mbit/s)", () => {
  const subway = trace("3G/nyc2018-unknownop-3g-subway-cross.mahi");
  /** The longest run of link seconds under 0.3 Mbit/s (25 1500-byte opportunities), [start, end) ms. */
  const stretch = (() => {
    const per_s = new Uint32Array(Math.ceil(subway[subway.length - 1]! / 1000) + 1);
    for (const t of subway) per_s[Math.floor(Math.max(0, t - 1) / 1000)]!++;
    let best = [0, 0];
    for (let s = 0, run = 0; s < per_s.length; s++) {
      run = per_s[s]! < 25 ? run + 1 : 0;
      if (run > best[1]! - best[0]!) best = [s - run + 1, s + 1];
    }
    return [best[0]! * 1000, best[1]! * 1000] as const;
  })();
  /** Window (bytes) sampled each ms of the stretch, from 2 s into it to 2 s before its end (the
   * last second holds the link's return, where slow start rightly grows the window). */
  const windowsInStretch = (config: object) => {
    const ws: number[] = [];
    simulateBulk({ trace: subway, duration_s: stretch[1] / 1000, config, onTick: (t, c) => { if (c && t >= stretch[0] + 2000 && t < stretch[1] - 2000) ws.push(c.windowBytes); } });
    return ws;
  };

  it("the recording has the stretch", () => {
    expect(stretch[1] - stretch[0]).toBeGreaterThanOrEqual(20_000);
  });

  it("holds one frame in flight, not several, so at most one of ours waits for the link to return", () => {
    expect(Math.max(...windowsInStretch({}))).toBeLessThanOrEqual(1200);
    expect(Math.max(...windowsInStretch(FIXED_TD))).toBeGreaterThanOrEqual(4 * 1200);
  });

  it("restarts after the silence from what the link carried, not from the ten-packet initial window", () => {
    const c = new NuwaController();
    c.onRttSample(50_000);
    // 2 s at one 1200-byte frame a second (a near-dark link), then silence
    let t = 0;
    for (let i = 0; i < 3; i++, t += 1_000_000) c.onFrame(t, t + 25_000 + 5_000, 1200);
    for (; t < 6_000_000; t += 10_000) c.tick(t);
    expect(c.currentPhase).toBe("silence");
    expect(c.windowBytes).toBeLessThanOrEqual(1200);
    const old = new NuwaController(FIXED_TD);
    old.onRttSample(50_000);
    t = 0;
    for (let i = 0; i < 3; i++, t += 1_000_000) old.onFrame(t, t + 25_000 + 5_000, 1200);
    for (; t < 6_000_000; t += 10_000) old.tick(t);
    expect(old.windowBytes).toBeGreaterThan(1200);
  });
});

describe("why the adaptive Td is off by default", () => {
  it("flows sharing one queue: the adaptive Td deepens the queue (raw Qd, service delay)", () => {
    // The figures below were measured with the delivery-rate cap's 300 ms filter (the default until the
    // forty-second session) and are kept on it; the shipped 1000 ms filter is checked at the end.
    const run = (config: object) =>
      simulateShared({ trace: constantRateTrace(6e6, 1000), duration_s: 40, fair_from_s: 20, flows: Array.from({ length: 5 }, (_, i) => ({ start_s: i * 2, config: { rate_cap_filter_ms: 300, ...config } })) });
    const pinned = run({});
    expect(pinned.jain_index).toBeGreaterThan(0.95); // measured 0.998 (service delay, the default)
    const pinnedRaw = run({ qd_source: "raw" });
    // If these start failing, the adaptation has learnt to tell a shared queue from link jitter:
    // reconsider the default (config.ts adaptive_target_delay). Since the grant pacer (thirty-eighth
    // session) the growth is smaller: raw 64 -> 74 ms p95 (before it 114), service 49 -> 67 (before
    // it 85 -> 182), so these bounds are close to their figures.
    const onRaw = run({ ...ADAPTIVE, qd_source: "raw" });
    expect(onRaw.queuing_delay_ms.p95).toBeGreaterThan(1.1 * pinnedRaw.queuing_delay_ms.p95); // measured 74 ms
    // Under the backlog signal it also broke fairness (Jain 0.605) until the window validation counted
    // the raw Qd in a window's turnaround (thirty-seventh session): 0.976 now, p95 55 ms.
    const onBacklog = run({ ...ADAPTIVE, qd_source: "backlog" });
    expect(onBacklog.jain_index).toBeGreaterThan(0.9);
    // the default signal: fair (0.992), p95 67 ms against the pinned Td's 49. With qd_prediction (on by
    // default since the forty-first session; off here) the simulated pinned flows sit at p95 66 ms and the adaptive ones deeper still.
    const onService = run({ ...ADAPTIVE, qd_prediction: false });
    expect(onService.queuing_delay_ms.p95).toBeGreaterThan(1.25 * run({ qd_prediction: false }).queuing_delay_ms.p95);
    // The shipped controller (service delay, Qd prediction, the cap's 1000 ms filter): pinned p95 79 ms,
    // adaptive 102 (Jain 0.992, 0.994). Under the raw Qd the longer filter already holds the pinned flows
    // deeper (65 ms) than the adaptive Td adds to (60): that case no longer argues either way.
    const shipped = (config: object) => run({ rate_cap_filter_ms: DEFAULT_CONFIG.rate_cap_filter_ms, ...config });
    expect(shipped(ADAPTIVE).queuing_delay_ms.p95).toBeGreaterThan(1.15 * shipped({}).queuing_delay_ms.p95);
  });
});

describe("the delivery-rate cap's filter: 1000 ms, not 300 (config.ts rate_cap_filter_ms)", () => {
  it("on a recorded LTE trace with delivery gaps of 100–270 ms the 300 ms filter's cap cut the window below one burst", () => {
    // NYC LTE walking-3201711 alternates 50 ms with few delivery opportunities and 50 ms with up to
    // 29: a 300 ms filter holds too few 100 ms spans to see the link's rate, and the cap (on every frame
    // with Qd > Td, which a gap gives) cut the window to that. Measured: utilization 0.765 -> 0.816, p95 229 -> 243 ms.
    const walk = trace("4G/nyc2019-unknownop-lte-walking-3201711.mahi");
    const short = simulateBulk({ trace: walk, duration_s: 60, config: { rate_cap_filter_ms: 300 } });
    const shipped = simulateBulk({ trace: walk, duration_s: 60 });
    expect(shipped.utilization).toBeGreaterThan(short.utilization + 0.03);
    expect(shipped.queuing_delay_ms.p95).toBeLessThan(short.queuing_delay_ms.p95 + 30);
  });

  it("its cost: Nuwa flows sharing a queue sit deeper behind the looser cap, still fair (20 flows on 24 Mbit/s, 1 s apart)", () => {
    // The cap bounds a shared queue at Td plus the filter's overshoot of each flow's mean rate, and a
    // longer filter overshoots more. Thirty-sixth session, before the grant pacer and the Qd
    // prediction: p95 83 -> 421 ms, Jain 0.996 -> 0.896 (not shipped then). Measured now (forty-second
    // session): p95 45 -> 88 ms, Jain 0.999 -> 0.994, utilization 0.988 -> 1.000.
    const run = (rate_cap_filter_ms: number) =>
      simulateShared({ trace: constantRateTrace(24e6, 1000), duration_s: 60, fair_from_s: 40, flows: Array.from({ length: 20 }, (_, i) => ({ start_s: i, config: { rate_cap_filter_ms } })) });
    const short = run(300);
    const shipped = run(1000);
    expect(shipped.jain_index).toBeGreaterThan(0.98);
    expect(shipped.queuing_delay_ms.p95).toBeLessThan(110);
    expect(shipped.queuing_delay_ms.p95).toBeGreaterThan(short.queuing_delay_ms.p95);
    expect(shipped.utilization).toBeGreaterThanOrEqual(short.utilization);
  });
});

describe("Td in packets (config.ts target_delay_min_packets)", () => {
  /** Td in force after `seconds` of 1200-byte frames arriving evenly at `rate_bps`. */
  const tdAt = (rate_bps: number, seconds: number, config: object = {}) => {
    const c = new NuwaController({ ...PACKETS, ...config });
    c.onRttSample(50_000);
    const gap_us = (1200 * 8 * 1e6) / rate_bps;
    for (let t = 0; t <= seconds * 1e6; t += gap_us) c.onFrame(t, t + 25_000, 1200);
    return c.targetDelayInForceMs;
  };

  it("is n packets' time at the flow's delivery rate, between Td and factor x Td (and target_delay_max_ms), from the second second on", () => {
    expect(DEFAULT_CONFIG.target_delay_min_packets).toBe(0); // opt-in: the shared-queue test below says why
    expect(DEFAULT_CONFIG.target_delay_min_packets_max_factor).toBe(2);
    expect(new NuwaController().targetDelayInForceMs).toBe(25);
    expect(tdAt(2e6, 3)).toBeCloseTo((6 * 1200 * 8 * 1000) / 2e6, 0); // 28.8 ms
    expect(tdAt(10e6, 3)).toBe(25); // 6 packets are 5.8 ms: Td stands
    expect(tdAt(0.5e6, 3)).toBe(50); // 115 ms, capped at 2 x Td
    expect(tdAt(0.1e6, 3, { target_delay_min_packets_max_factor: 100 })).toBe(200); // 576 ms, capped at target_delay_max_ms
    expect(tdAt(0.5e6, 3, { target_delay_max_ms: 40 })).toBe(40);
    expect(tdAt(0.5e6, 3, { target_delay_ms: 10 })).toBe(20); // a live caller's Td 10: the floor adds at most 10 ms
    expect(tdAt(0.5e6, 0.9)).toBe(25); // under a second of data: no rate to size it yet
    expect(tdAt(0.5e6, 3, { target_delay_min_packets: 0 })).toBe(25);
    expect(() => new NuwaController({ target_delay_min_packets: -1 })).toThrow(/target_delay_min_packets/);
    expect(() => new NuwaController({ target_delay_min_packets: Number.NaN })).toThrow(/target_delay_min_packets/);
    expect(() => new NuwaController({ target_delay_min_packets_max_factor: 0.5 })).toThrow(/target_delay_min_packets_max_factor/);
  });

  it("on the recorded UMTS trace it fills the link's bursts that a 25 ms queue (five packets or fewer) misses; the cap keeps the dark spells' queue short", () => {
    // Measured (60 s): utilization 0.941 -> 0.956, p95 109 -> 153 ms (issue 14's bound there: 0.1 x
    // Cubic's 7.6 s). Packets that wait over 0.5 s (the link's dark spells): 1.3 % -> 1.8 %; with the
    // floor uncapped 2.6 %, and end to end issue 14's near-dark p95 (500 ms, all packets) was missed.
    const umts = trace("3G/mahimahi-tmobile-umts-driving.mahi");
    const overHalfSecond = (r: ReturnType<typeof simulateBulk>) => {
      let n = 0;
      for (let i = 1; i < r.samples.length; i += 3) if (r.samples[i]! > 500) n++;
      return n / (r.samples.length / 3);
    };
    const off = simulateBulk({ trace: umts, duration_s: 60, config: { target_delay_min_packets: 0 } });
    const on = simulateBulk({ trace: umts, duration_s: 60, config: PACKETS });
    const uncapped = simulateBulk({ trace: umts, duration_s: 60, config: { ...PACKETS, target_delay_min_packets_max_factor: 100 } });
    expect(on.utilization).toBeGreaterThan(off.utilization + 0.01);
    expect(on.queuing_delay_ms.p95).toBeLessThan(200);
    expect(overHalfSecond(on)).toBeLessThan(overHalfSecond(uncapped) - 0.005);
  });

  it("on a fast recorded trace (NYC LTE taxi, about 23 Mbit/s) it never acts: the same run", () => {
    const taxi = trace("4G/nyc2019-unknownop-lte-taxi-1.mahi");
    const off = simulateBulk({ trace: taxi, duration_s: 30, config: { target_delay_min_packets: 0 } });
    const on = simulateBulk({ trace: taxi, duration_s: 30, config: PACKETS });
    expect(on.utilization).toBe(off.utilization);
    expect(on.queuing_delay_ms.p95).toBe(off.queuing_delay_ms.p95);
  });

  it("why it is opt-in: flows sharing a queue each hold n packets, so the queue grows with their number (5 flows on 6 Mbit/s)", () => {
    // The shipped controller without and with the floor: p95 79 -> 131 ms (each 1.2 Mbit/s flow holds
    // Td 48 ms), Jain 0.992 -> 0.996; 12 flows (sim/shared.test.ts) Jain 0.98 -> 0.96. It also equalises
    // shares where nothing else does (the additive increase off, raw Qd: Jain 0.79 -> 1.00): the slower
    // flow holds the longer Td. A page alone on its link (one viewer on a cellular link) turns it on.
    const run = (config: object, duration_s = 40) =>
      simulateShared({ trace: constantRateTrace(6e6, 1000), duration_s, fair_from_s: 20, flows: Array.from({ length: 5 }, (_, i) => ({ start_s: i * 2, config })) });
    const off = run({});
    const on = run(PACKETS);
    expect(on.queuing_delay_ms.p95).toBeGreaterThan(1.4 * off.queuing_delay_ms.p95);
    expect(on.jain_index).toBeGreaterThan(0.95);
    const noAi = (config: object) => run({ additive_increase_mss: 0, qd_source: "raw", ...config }, 60);
    expect(noAi({}).jain_index).toBeLessThan(0.85);
    expect(noAi(PACKETS).jain_index).toBeGreaterThan(0.95);
  });
});

describe("a cap on Td in packets (config.ts target_delay_max_packets)", () => {
  const OFF = { target_delay_max_packets: 0 } as const;
  /** Td in force after `seconds` of 1200-byte frames arriving evenly at `rate_bps` (each finds the queue empty: no link wait). */
  const tdAt = (rate_bps: number, seconds: number, config: object = {}) => {
    const c = new NuwaController(config);
    c.onRttSample(50_000);
    const gap_us = (1200 * 8 * 1e6) / rate_bps;
    for (let t = 0; t <= seconds * 1e6; t += gap_us) c.onFrame(t, t + 25_000, 1200);
    return c.targetDelayInForceMs;
  };

  it("is n packets' time at the slowest 100 ms of the last second, at most Td, at least its floor, from the second second on", () => {
    expect(DEFAULT_CONFIG.target_delay_max_packets).toBe(30);
    expect(DEFAULT_CONFIG.target_delay_max_packets_floor_ms).toBe(10);
    expect(tdAt(10e6, 3)).toBe(25); // 30 packets are 28.8 ms: Td stands
    expect(tdAt(20e6, 3)).toBeCloseTo((30 * 1200 * 8 * 1000) / 20e6, 0); // 14.4 ms
    expect(tdAt(60e6, 3)).toBe(10); // 4.8 ms, held at the floor
    expect(tdAt(60e6, 3, { target_delay_max_packets_floor_ms: 4 })).toBeCloseTo(4.8, 0);
    expect(tdAt(20e6, 0.9)).toBe(25); // under a second of data: no rate to size it yet
    expect(tdAt(20e6, 3, OFF)).toBe(25);
    expect(tdAt(60e6, 3, { target_delay_ms: 10 })).toBe(10); // a live caller's Td 10 is not lowered
    expect(tdAt(60e6, 3, { target_delay_ms: 8 })).toBe(8); // nor raised to the floor
    // the same mean rate, 40 Mbit/s for 100 ms then 5 Mbit/s for 100 ms: its slow stretches keep Td
    const swinging = new NuwaController();
    swinging.onRttSample(50_000);
    for (let t = 0; t <= 3e6; ) {
      swinging.onFrame(t, t + 25_000, 1200);
      t += (1200 * 8 * 1e6) / (Math.floor(t / 100_000) % 2 === 0 ? 40e6 : 5e6);
    }
    expect(swinging.targetDelayInForceMs).toBe(25);
    const c = new NuwaController();
    expect(() => c.setParams({ target_delay_max_packets: -1 })).toThrow(/target_delay_max_packets/);
    expect(() => new NuwaController({ target_delay_max_packets_floor_ms: Number.NaN })).toThrow(/target_delay_max_packets_floor_ms/);
    expect(() => new NuwaController({ target_delay_max_packets_wait_quantile: 1.5 })).toThrow(/target_delay_max_packets_wait_quantile/);
  });

  it("a smooth fast recorded link (T-Mobile 5G low-band, about 52 Mbit/s): Td falls to its floor, the queue halves, utilization holds", () => {
    // Measured (60 s): utilization 0.987 -> 0.998, p95 30 -> 14 ms.
    const nr = trace("5G/mnwild-tmobile-5g-sa-lowband-walking-r20061.mahi");
    const tds: number[] = [];
    const on = simulateBulk({ trace: nr, duration_s: 30, onTick: (t, c) => { if (c && t > 5000 && t % 100 === 0) tds.push(c.targetDelayInForceMs); } });
    const off = simulateBulk({ trace: nr, duration_s: 30, config: OFF });
    tds.sort((a, b) => a - b);
    expect(tds[Math.floor(tds.length / 2)]!).toBeLessThan(12);
    expect(on.queuing_delay_ms.p95).toBeLessThan(0.7 * off.queuing_delay_ms.p95);
    expect(on.utilization).toBeGreaterThan(off.utilization - 0.005);
  });

  it("a fast link that fades (NYC LTE taxi: about 23 Mbit/s, then 1-7 Mbit/s for 300-500 ms): less queue standing when it fades", () => {
    // Measured (60 s): p95 54 -> 48 ms (issue 14's bound there 50 ms), utilization 0.978 -> 0.984.
    const taxi = trace("4G/nyc2019-unknownop-lte-taxi-1.mahi");
    const on = simulateBulk({ trace: taxi, duration_s: 60 });
    const off = simulateBulk({ trace: taxi, duration_s: 60, config: OFF });
    expect(on.queuing_delay_ms.p95).toBeLessThan(off.queuing_delay_ms.p95 - 3);
    expect(on.utilization).toBeGreaterThan(off.utilization - 0.01);
  });

  it("the same fast link delivering in 20-100 ms bursts: its slow stretches and its own waits keep the Td it needs", () => {
    // Measured (30 s): utilization 0.973 either way; a cap on the mean rate of the second, without the
    // waits, held Td at its floor here and lost 5 points (0.918).
    const burst = burstVariant(trace("5G/mnwild-tmobile-5g-sa-lowband-walking-r20061.mahi"), 20, 100, 1);
    const tds: number[] = [];
    const on = simulateBulk({ trace: burst, duration_s: 30, onTick: (t, c) => { if (c && t > 5000 && t % 100 === 0) tds.push(c.targetDelayInForceMs); } });
    const off = simulateBulk({ trace: burst, duration_s: 30, config: OFF });
    tds.sort((a, b) => a - b);
    expect(tds[Math.floor(tds.length / 2)]!).toBe(25);
    expect(on.utilization).toBeGreaterThan(off.utilization - 0.01);
  });

  it("flows sharing a fast link: each caps its own Td by its own rate, which evens the shares (3 flows on 60 Mbit/s, 2 s apart)", () => {
    // Measured (40 s): Jain 0.929 -> 0.982, p95 41 -> 31 ms; 20 flows on 24 Mbit/s (1.2 Mbit/s each) unchanged.
    const run = (config: object) =>
      simulateShared({ trace: constantRateTrace(60e6, 1000), duration_s: 40, fair_from_s: 20, flows: Array.from({ length: 3 }, (_, i) => ({ start_s: i * 2, config })) });
    const on = run({});
    const off = run(OFF);
    expect(on.jain_index).toBeGreaterThan(0.95);
    expect(on.jain_index).toBeGreaterThan(off.jain_index);
    expect(on.queuing_delay_ms.p95).toBeLessThan(off.queuing_delay_ms.p95);
  });
});
