import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ABANDON_MIN_ELAPSED_MS, achievableKbps, DashjsEwma, decideMpc, type EstimateSource, type FragmentRequestLike, makeNuwaAbandonRule, makeThroughputOverride, type NuwaMpcOptions, recentRateKbps, standingWaitS, sustainedSampleKbps } from "./abr.js";
import { type AbandonInput, bruteForcePlan, DASHJS_START_KBPS, firstProbeRung, MPC_DEFAULTS, MpcHistory, type MpcInput, mpcAbandon, mpcHysteresis, mpcPlan, mpcStep, robustThroughputKbps, transferShare } from "./mpc.js";

const LADDER = [300, 750, 1200, 1850, 2850, 4300, 6000, 8000];
const bytesOf = (ladder: readonly number[], seg_s = 2, ratio = 1) => ladder.map((k) => (k * 1000 * seg_s * ratio) / 8);

function input(p: Partial<MpcInput>): MpcInput {
  const ladder = p.ladder_kbps ?? LADDER;
  return { ladder_kbps: ladder, last_rung: null, buffer_s: 0, throughput_kbps: 3000, segment_bytes: bytesOf(ladder), segment_s: 2, rtt_s: 0.05, horizon: 3, buffer_cap_s: 12, startup: false, ...p };
}

interface Recorded {
  runs: { trace: string; decisions: { estimate_kbps: number; basis: string; buffer_s: number; chosen_kbps: number | null }[] }[];
}
const RECORDED = JSON.parse(readFileSync(new URL("../testdata/abr-decisions.json", import.meta.url), "utf8")) as Recorded;

describe("mpcPlan (RobustMPC search)", () => {
  it("matches brute force on recorded estimate/buffer sequences of real runs", () => {
    let n = 0;
    for (const run of RECORDED.runs) {
      let last: number | null = null;
      for (const d of run.decisions) {
        for (const horizon of [2, 4]) {
          const i = input({ throughput_kbps: Math.max(d.estimate_kbps, 1), buffer_s: d.buffer_s, last_rung: last, horizon, startup: last === null });
          const got = mpcPlan(i);
          const want = bruteForcePlan(i);
          expect(got.qoe).toBeCloseTo(want.qoe, 9);
          expect(got.rung).toBe(want.rung);
          n++;
        }
        last = mpcPlan(input({ throughput_kbps: Math.max(d.estimate_kbps, 1), buffer_s: d.buffer_s, last_rung: last, horizon: 4 })).rung;
      }
    }
    expect(n).toBeGreaterThan(200);
  });

  it("matches brute force on random small cases (ladders, sizes, buffers, caps)", () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let t = 0; t < 300; t++) {
      const ladder = LADDER.filter(() => rnd() < 0.6);
      if (ladder.length === 0) continue;
      const i = input({
        ladder_kbps: ladder,
        segment_bytes: bytesOf(ladder, 2, 0.7 + 0.6 * rnd()),
        throughput_kbps: 200 + 12000 * rnd(),
        buffer_s: 20 * rnd(),
        last_rung: rnd() < 0.3 ? null : Math.floor(rnd() * ladder.length),
        horizon: 1 + Math.floor(rnd() * 4),
        buffer_cap_s: 6 + 20 * rnd(),
        startup: rnd() < 0.2,
        // the screened variants (abr.ts NuwaMpcOptions): a terminal buffer reserve, sustainability on the point prediction
        ...(rnd() < 0.3 ? { reserve_s: 15 * rnd(), reserve_weight: rnd() } : {}),
        ...(rnd() < 0.3 ? { sustain_kbps: 200 + 12000 * rnd() } : {}),
      });
      if (i.last_rung !== null && rnd() < 0.3) i.first_rung = i.last_rung; // mpcHysteresis's hold arm
      const got = mpcPlan(i);
      const want = bruteForcePlan(i);
      expect(got.qoe).toBeCloseTo(want.qoe, 9);
      expect(got.rung).toBe(want.rung);
    }
  });

  it("a terminal reserve charges a plan that ends below it; sustainability may be judged on another throughput", () => {
    // 3 Mbit/s, buffer 4 s, after 2850: 2850 keeps the buffer about level; 300 builds it.
    const base = input({ throughput_kbps: 3000, buffer_s: 4, last_rung: 4, horizon: 3 });
    expect(mpcPlan(base).rung).toBe(4);
    const reserve = mpcPlan({ ...base, reserve_s: 12, reserve_weight: 1 });
    expect(reserve.rung).toBeLessThan(4); // building toward 12 s pays for the lower rung
    expect(reserve.qoe).toBeCloseTo(bruteForcePlan({ ...base, reserve_s: 12, reserve_weight: 1 }).qoe, 9);
    // 4300 is not sustainable at 3 Mbit/s but is at a 5 Mbit/s point prediction; with 20 s of buffer the plan takes it.
    const deep = input({ throughput_kbps: 3000, buffer_s: 20, last_rung: 4, horizon: 3, buffer_cap_s: 30 });
    expect(mpcPlan(deep).rung).toBe(4);
    expect(mpcPlan({ ...deep, sustain_kbps: 5000 }).rung).toBe(5);
  });

  it("the shipped terminal reserve: on by default in decideMpc, a third of a smaller buffer cap at most, off with reserve_s 0; bad values are refused", () => {
    // A link the estimate puts at 5 Mbit/s (two 1850 kbit/s segments measured at 5 and 4.5 Mbit/s):
    // RobustMPC over the horizon alone goes up to 4300 at once, on 4 s of buffer, where one
    // outage longer than that stalls (AT&T LTE driving's 10 s outage end to end: the MPC held
    // 6000 kbit/s on 3.3–4.8 s of buffer and stalled 1–9 s a run; forty-fifth session). With the
    // shipped reserve it first builds the buffer at 1850, and goes up once it holds about 8 s.
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    const controller = { minRttSampleUs: 50_000, rawQueuingDelayMs: 20, targetDelayInForceMs: 25, estimate: () => ({ busy_rate_bps: 5e6, peak_rtt_rate_bps: Number.NaN }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    const decide = (buffer_s: number, o: Partial<NuwaMpcOptions>) => {
      const h = new MpcHistory();
      for (const f of [1, 0.9]) h.add({ bytes: 462_500, duration_s: (462_500 * 8) / (5e6 * f) + 0.05, bitrate_kbps: 1850, segment_s: 2, predicted_kbps: 5000 });
      return decideMpc(src, reps, 5000, "busy_period", buffer_s, h, { history: () => h, ...o });
    };
    expect(decide(4, { reserve_s: 0 }).rep.bitrateInKbit).toBe(4300);
    expect(decide(4, {}).rep.bitrateInKbit).toBe(1850);
    expect(decide(8, {}).rep.bitrateInKbit).toBe(4300);
    expect(decide(4, { reserve_s: MPC_DEFAULTS.reserve_s, reserve_weight: MPC_DEFAULTS.reserve_weight }).rep.bitrateInKbit).toBe(1850);
    // a player that keeps 6 s of buffer plans toward 2 s at most, not 10 s it can never hold
    expect(decide(4, { buffer_cap_s: 6 }).why).toContain("(reserve 2.0 s)");
    expect(decide(4, {}).why).toContain("(reserve 10.0 s)");
    expect(decide(4, { reserve_s: 0 }).why).not.toContain("reserve");
    // bad reserves are refused, by mpcPlan and so by every caller
    const i = input({ throughput_kbps: 3000, buffer_s: 4, last_rung: 4, horizon: 3 });
    for (const bad of [{ reserve_s: -1 }, { reserve_s: Number.NaN }, { reserve_s: Number.POSITIVE_INFINITY }, { reserve_weight: -0.5 }, { reserve_weight: Number.NaN }]) {
      expect(() => mpcPlan({ ...i, ...bad })).toThrow(RangeError);
      expect(() => bruteForcePlan({ ...i, ...bad })).toThrow(RangeError);
    }
  });

  it("charges rebuffering and switches as Pensieve's QoE_lin", () => {
    const i = input({ throughput_kbps: 1000, buffer_s: 1 });
    // 8000 kbit/s × 2 s = 2 MB at 1 Mbit/s: 16 s + RTT, 15.05 s of stall beyond the 1 s buffer.
    const s = mpcStep(i, 0, 7, 1, true);
    expect(s.qoe).toBeCloseTo(8 - 4.3 * 15.05 - 7.7, 6);
    expect(s.buffer_s).toBe(2);
    expect(mpcStep(i, null, 0, 30, true).buffer_s).toBe(12); // capped at the buffer target
  });

  it("holds a steady rung on a steady link: no oscillation between neighbours (closed loop)", () => {
    // Steady 5 Mbit/s: 4300 fits, 6000 does not; the buffer evolves by the model.
    let last: number | null = null;
    let buffer = 0;
    const chosen: number[] = [];
    for (let k = 0; k < 40; k++) {
      const i = input({ throughput_kbps: 5000, buffer_s: buffer, last_rung: last, horizon: 5, startup: last === null });
      const r = mpcPlan(i).rung;
      buffer = mpcStep(i, last, r, buffer, k === 0).buffer_s;
      chosen.push(LADDER[r]!);
      last = r;
    }
    const tail = chosen.slice(5);
    expect(new Set(tail).size).toBe(1);
    expect(tail[0]).toBe(4300);
    // start-up: the sustainable rung within the first three segments
    expect(chosen.slice(0, 3)).toContain(4300);
  });
});

describe("mpcHysteresis (switch hysteresis over RobustMPC)", () => {
  const OFF = { down_switch_margin: 0, up_hold_segments: 1 };
  const ON = { down_switch_margin: 1, up_hold_segments: 2 };

  it("off (margin 0, hold 1) is RobustMPC's decision; the defaults are on", () => {
    expect({ down_switch_margin: MPC_DEFAULTS.down_switch_margin, up_hold_segments: MPC_DEFAULTS.up_hold_segments }).toEqual(ON);
    for (const tput of [400, 1500, 2700, 3100, 5200, 9000])
      for (const buffer_s of [0.5, 3, 8, 20])
        for (const last_rung of [null, 0, 3, 5, 7]) {
          const i = input({ throughput_kbps: tput, buffer_s, last_rung, horizon: 5, buffer_cap_s: 30 });
          expect(mpcHysteresis(i, last_rung === null ? [] : [LADDER[last_rung]!], OFF)).toEqual(mpcPlan(i));
        }
  });

  it("a down-switch is taken only when it beats holding the last rung one more segment by margin × |Δ bitrate|", () => {
    let held = 0;
    let taken = 0;
    for (let tput = 1500; tput <= 4500; tput += 50)
      for (const buffer_s of [1, 2, 4, 6, 10]) {
        const i = input({ throughput_kbps: tput, buffer_s, last_rung: 5, horizon: 5, buffer_cap_s: 30 });
        const best = mpcPlan(i);
        if (best.rung >= 5) continue;
        const hold = mpcPlan({ ...i, first_rung: 5 });
        expect(hold.plan[0]).toBe(5);
        expect(hold.qoe).toBeCloseTo(bruteForcePlan({ ...i, first_rung: 5 }).qoe, 9);
        const gain = best.qoe - hold.qoe;
        const got = mpcHysteresis(i, [4300, 4300], ON);
        if (gain > ((LADDER[5]! - LADDER[best.rung]!) / 1000) * ON.down_switch_margin) {
          expect(got).toEqual(best);
          taken++;
        } else {
          expect(got).toEqual({ ...hold, held: "down_margin" });
          held++;
        }
      }
    expect(held).toBeGreaterThan(0); // both branches occur in this scan
    expect(taken).toBeGreaterThan(0);
    // a link gone near dark under 4300 kbit/s with 2 s of buffer: the stall dwarfs the margin; down it goes
    expect(mpcHysteresis(input({ throughput_kbps: 500, buffer_s: 2, last_rung: 5, horizon: 5 }), [4300, 4300], ON).rung).toBe(0);
  });

  it("an up-switch waits until the last rung has been held up_hold_segments in a row", () => {
    const i = input({ throughput_kbps: 9000, buffer_s: 12, last_rung: 4, horizon: 5, buffer_cap_s: 30 });
    expect(mpcPlan(i).rung).toBeGreaterThan(4);
    expect(mpcHysteresis(i, [1200, 2850], ON)).toMatchObject({ rung: 4, held: "up_hold" }); // just switched to 2850
    expect(mpcHysteresis(i, [2850, 1200, 2850], ON).rung).toBe(4); // held once, not in a row
    expect(mpcHysteresis(i, [1200, 2850, 2850], ON)).toEqual(mpcPlan(i));
    expect(mpcHysteresis(i, [2850], ON)).toEqual(mpcPlan(i)); // a history shorter than the hold: as long as it is
  });

  it("switches less, closed loop on recorded estimate sequences of real runs, at no loss of QoE", () => {
    // Each decision plans on RobustMPC's bound of the estimate recorded at it (÷ 1.25, the error
    // prior) and its segment then gets the estimate recorded at the next decision (what the link
    // did meanwhile); the buffer evolves by the model. QoE: Pensieve's QoE_lin per chunk.
    const run = (h: typeof ON) => {
      const t = { switches: 0, qoe: 0, chunks: 0 };
      for (const rec of RECORDED.runs) {
        let last: number | null = null;
        let buffer = 0;
        const recent: number[] = [];
        const d = rec.decisions.filter((x) => x.estimate_kbps > 0);
        for (let k = 0; k + 1 < d.length; k++) {
          const i = input({ throughput_kbps: d[k]!.estimate_kbps / 1.25, buffer_s: buffer, last_rung: last, horizon: 5, startup: last === null, buffer_cap_s: 30 });
          const r = mpcHysteresis(i, recent.slice(-5), h).rung;
          const step = mpcStep({ ...i, throughput_kbps: d[k + 1]!.estimate_kbps }, last, r, buffer, k === 0);
          t.qoe += step.qoe;
          t.chunks++;
          buffer = step.buffer_s;
          if (last !== null && r !== last) t.switches++;
          last = r;
          recent.push(LADDER[r]!);
        }
      }
      return { switches: t.switches, qoe: t.qoe / t.chunks };
    };
    const off = run(OFF);
    const on = run(ON);
    expect(off.switches).toBeGreaterThan(4); // the recorded estimates do make RobustMPC switch
    expect(on.switches).toBeLessThan(off.switches);
    expect(on.qoe).toBeGreaterThanOrEqual(off.qoe);
  });

  it("rejects a negative margin and a hold that is not an integer >= 1", () => {
    const i = input({ last_rung: 3 });
    expect(() => mpcHysteresis(i, [1850], { down_switch_margin: -1, up_hold_segments: 2 })).toThrow(RangeError);
    expect(() => mpcHysteresis(i, [1850], { down_switch_margin: 1, up_hold_segments: 0 })).toThrow(RangeError);
    expect(() => mpcHysteresis(i, [1850], { down_switch_margin: 1, up_hold_segments: 1.5 })).toThrow(RangeError);
    expect(() => mpcHysteresis(i, [1850], { down_switch_margin: Number.NaN, up_hold_segments: 2 })).toThrow(RangeError);
  });
});

describe("robustThroughputKbps and MpcHistory", () => {
  it("predicts capacity × the flow's measured share, divided by 1 + the max recent error (RobustMPC §5)", () => {
    const h = new MpcHistory();
    // before any segment: the prior share (0.6) and the prior error (0.25)
    expect(robustThroughputKbps(10000, "busy_period", h, 0.05).kbps).toBeCloseTo((10000 * 0.6) / 1.25, 6);
    // realized 8000 and 6000 kbit/s (1 MB and 0.75 MB in 1.05 s less a 0.05 s RTT) on a 10000 kbit/s capacity estimate
    h.add({ bytes: 1_000_000, duration_s: 1.05, bitrate_kbps: 4000, segment_s: 2, predicted_kbps: 10000 });
    h.add({ bytes: 750_000, duration_s: 1.05, bitrate_kbps: 3000, segment_s: 2, predicted_kbps: 10000 });
    const r = robustThroughputKbps(10000, "busy_period", h, 0.05);
    expect(r.share).toBeCloseTo(0.7, 6); // median of 0.8 and 0.6
    expect(r.predicted_kbps).toBeCloseTo(7000, 6);
    expect(r.error).toBeCloseTo(1000 / 6000, 6); // |7000 − 6000| / 6000 beats |7000 − 8000| / 8000
    expect(r.kbps).toBeCloseTo(6000, 6);
    expect(h.sizeRatio()).toBeCloseTo(1, 6);
  });

  it("keeps the last `keep` samples and counts every recorded one (`recorded` only grows; an empty download is not recorded)", () => {
    const h = new MpcHistory(2);
    for (let i = 0; i < 4; i++) h.add({ bytes: 75_000, duration_s: 0.5, bitrate_kbps: 300, segment_s: 2, predicted_kbps: 1000 });
    h.add({ bytes: 0, duration_s: 0.5, bitrate_kbps: 300, segment_s: 2, predicted_kbps: 1000 });
    expect(h.samples).toHaveLength(2);
    expect(h.recorded).toBe(4);
  });

  it("reads an app-limited estimate as a floor, raised by the realized segment throughput", () => {
    const h = new MpcHistory();
    h.add({ bytes: 75_000, duration_s: 0.08, bitrate_kbps: 300, segment_s: 2, predicted_kbps: Number.NaN });
    const r = robustThroughputKbps(33, "delivery_rate", h, 0.05);
    expect(r.error).toBe(0);
    expect(r.kbps).toBeCloseTo((75_000 * 8) / 1000 / 0.04, 6);
    expect(robustThroughputKbps(33, "busy_period", h, 0.05).kbps).toBeCloseTo((33 * 0.6) / 1.25, 6); // a capacity figure: prior share and error
  });

  it("reads the peak one-RTT delivery rate as a floor of an app-limited basis only", () => {
    // the 5G low-band start of the s20 run: after a 72,665-byte first segment in slow start the estimate
    // was 835 kbit/s (1 s mean delivery rate) and the segment's realized throughput 3.2 Mbit/s
    const h = new MpcHistory();
    h.add({ bytes: 72_665, duration_s: 0.05 + (72_665 * 8) / 3_166_000, bitrate_kbps: 300, segment_s: 2, predicted_kbps: Number.NaN });
    expect(robustThroughputKbps(835, "delivery_rate", h, 0.05).predicted_kbps).toBeCloseTo(3166, 0);
    expect(robustThroughputKbps(835, "delivery_rate", h, 0.05, 9000).predicted_kbps).toBe(9000);
    expect(robustThroughputKbps(835, "delivery_rate", h, 0.05, 1000).predicted_kbps).toBeCloseTo(3166, 0); // below the realized: no effect
    expect(robustThroughputKbps(835, "delivery_rate", h, 0.05, Number.NaN).predicted_kbps).toBeCloseTo(3166, 0);
    // a capacity figure (busy period) is not raised: the share and error predictor stands
    expect(robustThroughputKbps(20_000, "busy_period", h, 0.05, 50_000).predicted_kbps).toBeCloseTo(20_000 * MPC_DEFAULTS.flow_share_prior, 6);
  });

  it("decideMpc: jumps to the top rung once one small segment shows a fast link (the 5G start-up of the old rule took 5 segments)", () => {
    const h = new MpcHistory();
    const src: EstimateSource = { controller: () => null, now_us: () => 0 };
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    expect(decideMpc(src, reps, 33, "delivery_rate", 0, h, { history: () => h }).rep.bitrateInKbit).toBe(300);
    h.add({ bytes: 75_000, duration_s: 0.08, bitrate_kbps: 300, segment_s: 2, predicted_kbps: Number.NaN });
    expect(decideMpc(src, reps, 742, "delivery_rate", 1.9, h, { history: () => h }).rep.bitrateInKbit).toBe(8000);
  });

  it("firstProbeRung: the lowest rung whose first segment can show the top rung's rate in slow start, within dash.js's start", () => {
    const seg = LADDER.map((k) => (k * 1000 * 2) / 8); // nominal sizes of 2 s segments
    // top 8000 kbit/s = 1 MB/s; at a 50 ms RTT a transfer must hold 2 × 1 MB/s × 0.05 s = 100 kB: 300's 75 kB cannot, 750's 187.5 kB can
    expect(firstProbeRung(LADDER, seg, 2, 0.05)).toBe(LADDER.indexOf(750));
    expect(firstProbeRung(LADDER, seg, 2, 0.03)).toBe(0); // 60 kB: the lowest rung already measures it
    // a long path would need 1 MB: capped at dash.js's own start (the highest rung ≤ 1000 kbit/s)
    expect(firstProbeRung(LADDER, seg, 2, 0.5)).toBe(LADDER.indexOf(750));
    expect(DASHJS_START_KBPS).toBe(1000);
    expect(firstProbeRung([2000, 4000], [500_000, 1_000_000], 2, 0.05)).toBe(0); // no rung within 1000 kbit/s: the lowest
    expect(() => firstProbeRung([], [], 2, 0.05)).toThrow(RangeError);
    expect(() => firstProbeRung([300], [1, 2], 2, 0.05)).toThrow(RangeError);
    expect(() => firstProbeRung([300], [1], 0, 0.05)).toThrow(RangeError);
    expect(() => firstProbeRung([300], [1], 2, Number.NaN)).toThrow(RangeError);
  });

  it("decideMpc with first_probe (opt-in): the first segment is sized to measure the top rung (firstProbeRung); later decisions are the MPC's alone", () => {
    const h = new MpcHistory();
    const src: EstimateSource = { controller: () => null, now_us: () => 0 };
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    expect(MPC_DEFAULTS.first_probe).toBe(false); // opt-in: the default is the MPC alone, 300 (above)
    expect(decideMpc(src, reps, 33, "delivery_rate", 0, h, { history: () => h }).rep.bitrateInKbit).toBe(300);
    const first = decideMpc(src, reps, 33, "delivery_rate", 0, h, { history: () => h, first_probe: true });
    expect(first.rep.bitrateInKbit).toBe(750);
    expect(first.why).toContain("firstProbeRung");
    expect(first.why).toMatch(/plan \[750,[\d,]+\] QoE -?\d/); // a plan that starts at the probe, with its QoE
    // a fast start the MPC itself would take higher is not lowered
    expect(decideMpc(src, reps, 50_000, "busy_period", 0, h, { history: () => h, first_probe: true }).rep.bitrateInKbit).toBeGreaterThan(750);
    h.add({ bytes: 187_500, duration_s: 3.05, bitrate_kbps: 750, segment_s: 2, predicted_kbps: Number.NaN });
    // past the first segment the probe never applies: a slow first transfer (0.5 Mbit/s) goes below it
    const second = decideMpc(src, reps, 100, "delivery_rate", 2, h, { history: () => h, first_probe: true });
    expect(second.rep.bitrateInKbit).toBeLessThan(750);
    expect(second.why).not.toContain("firstProbeRung");
  });

  it("decideMpc: real sizes from the index (issue 19) replace nominal × ratio where known: a rung whose next segments are 3× its nominal size is not chosen", () => {
    const h = new MpcHistory();
    h.add({ bytes: 150_000, duration_s: 0.5, bitrate_kbps: 750, segment_s: 2, predicted_kbps: Number.NaN }); // past start-up
    const src: EstimateSource = { controller: () => null, now_us: () => 0 };
    const reps = [300, 750, 1200].map((k, i) => ({ id: String(i), bitrateInKbit: k, segmentDuration: 2 }));
    const nominal = decideMpc(src, reps, 2000, "delivery_rate", 10, h, { history: () => h });
    expect(nominal.rep.bitrateInKbit).toBe(1200); // nominal sizes: 1200 kbit/s fits about 2.7 Mbit/s
    const asked: [string, string, number][] = [];
    const real = decideMpc(src, reps, 2000, "delivery_rate", 10, h, {
      history: () => h,
      segmentBytes: (t, rep, n) => {
        asked.push([t, String(rep.id), n]);
        return rep.id === "2" ? (3 * 1200 * 1000 * 2) / 8 : null; // rung 2's next segments: 3× nominal (a complex scene)
      },
    });
    expect(real.rep.bitrateInKbit).toBe(750);
    expect(real.why).toContain("real sizes of 1/3 rungs from the index");
    expect(asked).toEqual([
      ["video", "0", 5],
      ["video", "1", 5],
      ["video", "2", 5],
    ]);
  });

  it("decideMpc: a delivery-rate basis after a measured busy period is still a capacity figure (share and error apply)", () => {
    const h = new MpcHistory();
    const controller = { minRttSampleUs: 50_000, estimate: () => ({ busy_rate_bps: 18e6 }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    const d = decideMpc(src, reps, 20000, "delivery_rate", 10, h, { history: () => h });
    expect(d.budget_kbps).toBeCloseTo((20000 * 0.6) / 1.25, 6);
    expect(h.next_predicted_kbps).toBe(20000);
  });

  it("decideMpc caps RobustMPC's error discount at deep_max_error once the buffer is deep (opt-in deep_from_s)", () => {
    const h = new MpcHistory();
    // three segments under a 10 Mbit/s capacity that realized 2, 4 and 8 Mbit/s: share 0.4 (the median), the predictor's error max(1, 0, 0.5) = 1
    for (const kbps of [2000, 4000, 8000]) h.add({ bytes: kbps * 250, duration_s: 2.05, bitrate_kbps: 2850, segment_s: 2, predicted_kbps: 10000 });
    const controller = { minRttSampleUs: 50_000, estimate: () => ({ busy_rate_bps: 10e6 }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    const at = (buffer_s: number, o: Partial<NuwaMpcOptions> = {}) => decideMpc(src, reps, 10000, "busy_period", buffer_s, h, { ...o, history: () => h });
    const on = { deep_from_s: 8, down_switch_margin: 0 }; // one factor: the switch hysteresis off (its down margin keeps 2850 at 7.9 s)
    const shallow = at(7.9, on);
    const deep = at(8, on);
    expect(shallow.budget_kbps).toBeCloseTo(shallow.predicted_kbps / (1 + MPC_DEFAULTS.max_error), 6); // RobustMPC's full margin
    expect(deep.budget_kbps).toBeCloseTo(deep.predicted_kbps / (1 + MPC_DEFAULTS.deep_max_error), 6);
    expect(deep.rep.bitrateInKbit!).toBeGreaterThan(shallow.rep.bitrateInKbit!);
    // the default (MPC_DEFAULTS.deep_buffer_s = Infinity): RobustMPC's full margin at any buffer
    expect(MPC_DEFAULTS.deep_buffer_s).toBe(Number.POSITIVE_INFINITY);
    expect(at(20).budget_kbps).toBeCloseTo(shallow.budget_kbps, 6);
  });

  it("decideMpc charges every request the queue standing above the target delay (a buffer-filling competitor's), not our own", () => {
    // the decision at 33.9 s of a Norway HSDPA bus video next to a Cubic download (twenty-sixth
    // session): 1,210 kbit/s, 7.5 s of buffer, the last frame's queuing delay 1,687 ms; it took
    // 1200 kbit/s and stalled 7.7 s when the link dipped behind the competitor's queue
    const reps = LADDER.map((k) => ({ bitrateInKbit: k, segmentDuration: 2 }));
    // one factor, the standing wait: the run's MPC had no terminal reserve (reserve_s: 0; its default now, below)
    const decide = (qd_ms: number, reserve: { reserve_s?: number } = { reserve_s: 0 }) => {
      const h = new MpcHistory();
      h.add({ bytes: 304_000, duration_s: 3.5, bitrate_kbps: 1200, segment_s: 2, predicted_kbps: Number.NaN }); // past start-up, at 1200 kbit/s
      const controller = { minRttSampleUs: 50_000, rawQueuingDelayMs: qd_ms, targetDelayInForceMs: 25, estimate: () => ({ busy_rate_bps: 1.21e6, peak_rtt_rate_bps: Number.NaN }) };
      const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
      return decideMpc(src, reps, 1210, "busy_period", 7.5, h, { history: () => h, ...reserve });
    };
    expect(standingWaitS({ controller: () => null, now_us: () => 0 })).toBe(0);
    const own = decide(20); // our own queue, below Td: nothing added
    const alone = decide(Number.NaN);
    expect(own.rep.bitrateInKbit).toBe(alone.rep.bitrateInKbit);
    expect(own.why).not.toContain("waits");
    const behind = decide(1687);
    expect(behind.why).toContain("each request waits 1.66 s behind the queue");
    expect(own.rep.bitrateInKbit).toBe(1200); // what the run took
    expect(behind.rep.bitrateInKbit).toBe(750); // then 300 kbit/s: a 1200 kbit/s segment costs 5.9 s of a 7.5 s buffer
    // the plan a brute-force search finds with the wait added to each download's round trip
    const h = new MpcHistory();
    h.add({ bytes: 304_000, duration_s: 3.5, bitrate_kbps: 1200, segment_s: 2, predicted_kbps: Number.NaN });
    const rob = robustThroughputKbps(1210, "busy_period", h, 0.05);
    const state: MpcInput = {
      ladder_kbps: LADDER,
      last_rung: 2,
      buffer_s: 7.5,
      throughput_kbps: rob.kbps,
      segment_bytes: LADDER.map((k) => (k * 1000 * 2 * h.sizeRatio()) / 8),
      segment_s: 2,
      rtt_s: 0.05,
      horizon: MPC_DEFAULTS.horizon,
      buffer_cap_s: MPC_DEFAULTS.buffer_cap_s,
      startup: false,
    };
    const plan = bruteForcePlan({ ...state, rtt_s: 0.05 + 1.662 });
    expect(behind.rep.bitrateInKbit).toBe(LADDER[plan.rung]);
    // with the shipped terminal reserve (MPC_DEFAULTS.reserve_s) the same state builds buffer
    // instead: 7.5 s is under the 10 s reserve at 1200 kbit/s on a 1.2 Mbit/s link, so 750, the rung
    // whose downloads grow the buffer (the run stalled 7.7 s at 1200)
    const shipped = decide(20, {});
    expect(shipped.rep.bitrateInKbit).toBe(750);
    const withReserve = bruteForcePlan({ ...state, reserve_s: MPC_DEFAULTS.reserve_s, reserve_weight: MPC_DEFAULTS.reserve_weight });
    expect(shipped.rep.bitrateInKbit).toBe(LADDER[withReserve.rung]);
  });

  it("dash.js's rules fed Nuwa's estimate get what the flow can fetch (capacity × measured share), not the raw capacity", () => {
    const h = new MpcHistory();
    const controller = { minRttSampleUs: 50_000, estimate: () => ({ bps: 20e6, basis: "busy_period", busy_rate_bps: 20e6 }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    expect(achievableKbps(src, h)).toBeCloseTo(20000 * 0.6, 6); // the prior share before any segment
    expect(h.next_predicted_kbps).toBe(20000);
    // two segments of 1 MB that took 0.8 s + one RTT under a 20 Mbit/s capacity: realized 10 Mbit/s, share 0.5
    for (let i = 0; i < 2; i++) h.add({ bytes: 1_000_000, duration_s: 0.85, bitrate_kbps: 4300, segment_s: 2, predicted_kbps: 20000 });
    expect(achievableKbps(src, h)).toBeCloseTo(10000, 6);
    // the ThroughputController extension hands that figure to dash.js's rules (and its safe figure × 0.9)
    const parent = { getAverageThroughput: () => 1234, getSafeAverageThroughput: () => 1000, getAverageLatency: () => 80 };
    const ext = makeThroughputOverride(src, true, undefined, 0.9, undefined, () => h) as (this: { parent: typeof parent }) => { getAverageThroughput(t: string): number; getSafeAverageThroughput(t: string): number };
    const mine = ext.call({ parent });
    expect(mine.getAverageThroughput("video")).toBeCloseTo(10000, 6);
    expect(mine.getSafeAverageThroughput("video")).toBeCloseTo(9000, 6);
    // without a history (the MPC path) the raw estimate passes, as before
    const raw = (makeThroughputOverride(src, true) as typeof ext).call({ parent });
    expect(raw.getAverageThroughput("video")).toBeCloseTo(20000, 6);
  });

  it("with the transfer share, the figure is capacity × what segment transfers got from first byte to last (dash.js's own sample), not from the request", () => {
    const h = new MpcHistory();
    const controller = { minRttSampleUs: 50_000, estimate: () => ({ bps: 20e6, basis: "busy_period", busy_rate_bps: 20e6 }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    expect(achievableKbps(src, h, "transfer")).toBeCloseTo(20000 * 0.6, 6); // the prior share before any segment
    // 1 MB in 0.85 s from the request, of which 0.5 s from the first byte: 16 Mbit/s over the transfer, share 0.8
    for (let i = 0; i < 3; i++) h.add({ bytes: 1_000_000, duration_s: 0.85, bitrate_kbps: 4300, segment_s: 2, predicted_kbps: 20000, transfer_s: 0.5 });
    expect(transferShare(h)).toBeCloseTo(0.8, 9);
    expect(achievableKbps(src, h, "transfer")).toBeCloseTo(16000, 6);
    expect(achievableKbps(src, h)).toBeCloseTo(10000, 6); // the download share: 0.8 s less one RTT → 10 Mbit/s
    // samples without a transfer time do not count; clamped to [0.2, 1]
    const g = new MpcHistory();
    g.add({ bytes: 1_000_000, duration_s: 0.85, bitrate_kbps: 4300, segment_s: 2, predicted_kbps: 20000 });
    expect(transferShare(g)).toBe(MPC_DEFAULTS.flow_share_prior);
    g.add({ bytes: 1_000_000, duration_s: 0.85, bitrate_kbps: 4300, segment_s: 2, predicted_kbps: 2000, transfer_s: 0.1 });
    expect(transferShare(g)).toBe(1);
  });

  it("DashjsEwma is dash.js 5's default average: per-segment samples weighted 0.0015 × download ms, half-lives 3 and 8, bias-corrected, the lower", () => {
    const a = new DashjsEwma();
    expect(a.estimateKbps()).toBeNaN(); // no sample: dash.js returns NaN too
    a.add(4000, 1000); // weight 1.5
    expect(a.estimateKbps()).toBeCloseTo(4000, 9); // one sample: both corrected averages are the sample
    a.add(Number.NaN, 1000); // dropped
    a.add(1000, 0); // dropped
    a.add(1000, 2000); // a fall, weight 3
    // by hand: fast = (1 − 2^−0.5)·4000 after the first, then 2^−1 of it plus (1 − 2^−1)·1000; corrected by 1 − 2^−(4.5/3)
    const f1 = (1 - 0.5 ** 0.5) * 4000;
    const fast = (0.5 * f1 + 0.5 * 1000) / (1 - 0.5 ** 1.5);
    const s1 = (1 - 0.5 ** (1.5 / 8)) * 4000;
    const slow = (0.5 ** (3 / 8) * s1 + (1 - 0.5 ** (3 / 8)) * 1000) / (1 - 0.5 ** (4.5 / 8));
    expect(fast).toBeLessThan(slow);
    expect(a.estimateKbps()).toBeCloseTo(fast, 9);
    // a rise shows only as the slow average follows: the figure stays below the new level for several segments
    const b = new DashjsEwma();
    for (let i = 0; i < 10; i++) b.add(1000, 2000);
    b.add(8000, 500);
    expect(b.estimateKbps()).toBeLessThan(1500);
    for (let i = 0; i < 20; i++) b.add(8000, 500); // 20 fast downloads: 15 weight units, under two slow half-lives
    expect(b.estimateKbps()).toBeLessThan(7000);
    for (let i = 0; i < 20; i++) b.add(8000, 500);
    expect(b.estimateKbps()).toBeGreaterThan(7000);
  });

  it("with the EWMA, dash.js's rules see the average of each segment's achievable figure, and the figure now before the first sample", () => {
    const h = new MpcHistory();
    let capacity_bps = 20e6;
    const controller = { minRttSampleUs: 50_000, estimate: () => ({ bps: capacity_bps, basis: "busy_period", busy_rate_bps: capacity_bps }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    const avg = new DashjsEwma();
    const parent = { getAverageThroughput: () => 1234, getSafeAverageThroughput: () => 1000, getAverageLatency: () => 80 };
    const ext = makeThroughputOverride(src, true, undefined, 0.9, undefined, () => h, () => avg) as (this: { parent: typeof parent }) => { getAverageThroughput(t: string): number; getSafeAverageThroughput(t: string): number };
    const mine = ext.call({ parent });
    expect(mine.getAverageThroughput("video")).toBeCloseTo(12000, 6); // no sample yet: capacity × prior share
    avg.add(achievableKbps(src, h), 800);
    capacity_bps = 40e6; // a spike: the figure now doubles, the average does not follow at once
    expect(mine.getAverageThroughput("video")).toBeCloseTo(12000, 6);
    expect(h.next_predicted_kbps).toBe(40000); // the decision still records the capacity it was made on
    avg.add(achievableKbps(src, h), 800);
    const after = mine.getAverageThroughput("video");
    expect(after).toBeGreaterThan(12000);
    expect(after).toBeLessThan(24000 * 0.8); // two samples in: still below the figure now (24 Mbit/s)
    expect(mine.getSafeAverageThroughput("video")).toBeCloseTo(after * 0.9, 6);
  });
});

describe("mpcAbandon (the MPC's abandonment of a segment in progress)", () => {
  const abandon = (p: Partial<AbandonInput>): ReturnType<typeof mpcAbandon> =>
    mpcAbandon({ ladder_kbps: LADDER, rung: 3, prev_rung: 3, bytes_total: 462_500, bytes_loaded: 62_500, buffer_s: 6, throughput_kbps: 100, segment_bytes: bytesOf(LADDER), rtt_s: 0.05, ...p });

  it("a link gone near dark under a 1850 kbit/s segment: 400 kB left is 32 s against 6 s of buffer; the 300 kbit/s segment takes 6 s: restart there", () => {
    const d = abandon({});
    expect(d.remaining_s).toBeCloseTo(32, 6);
    expect(d.rung).toBe(0);
    expect(d.keep_qoe).toBeCloseTo(1.85 - 4.3 * 26, 6);
    expect(d.best_qoe).toBeCloseTo(0.3 - 4.3 * 0.05 - 1.55, 6); // 6.05 s: 0.05 s stall, and the switch down
  });

  it("keeps a download whose rest arrives within the buffer, and one whose small stall does not pay for the lower bitrate and the switch", () => {
    expect(abandon({ throughput_kbps: 3000 }).rung).toBeNull(); // 1.07 s left, 6 s of buffer
    // 325 kB left at 2 Mbit/s = 1.3 s against 1 s of buffer: keeping costs 0.3 s × 4.3 = 1.29;
    // 300 kbit/s would not stall but loses 1.55 of bitrate and 1.55 of switch
    const d = abandon({ throughput_kbps: 2000, bytes_loaded: 462_500 - 325_000, buffer_s: 1 });
    expect(d.remaining_s).toBeCloseTo(1.3, 6);
    expect(d.rung).toBeNull();
  });

  it("picks the highest lower rung that beats keeping, not always the lowest", () => {
    // 1 Mbit/s, 4 s of buffer, 8000 kbit/s segment with 1.9 MB left (15.2 s): 1200 kbit/s (300 kB, 2.45 s) plays without a stall
    const d = abandon({ rung: 7, prev_rung: 2, bytes_total: 2_000_000, bytes_loaded: 100_000, buffer_s: 4, throughput_kbps: 1000 });
    expect(d.rung).toBe(2);
    expect(d.best_qoe).toBeCloseTo(1.2, 6);
  });

  it("a download at the lowest rung is never abandoned; a switch back down to where it came from costs no switch", () => {
    expect(abandon({ rung: 0, prev_rung: 0, bytes_total: 75_000, bytes_loaded: 0 }).rung).toBeNull();
    // from 300 up to 1850, the rest arriving in time: keeping (1.85 − 1.55) ties with 300 (0.3): keep
    expect(abandon({ prev_rung: 0, throughput_kbps: 3000 }).rung).toBeNull();
  });

  it("rejects bad input", () => {
    expect(() => abandon({ ladder_kbps: [], segment_bytes: [] })).toThrow(RangeError);
    expect(() => abandon({ rung: 8 })).toThrow(RangeError);
    expect(() => abandon({ rung: 1.5 })).toThrow(RangeError);
    expect(() => abandon({ segment_bytes: [1, 2] })).toThrow(RangeError);
    expect(() => abandon({ throughput_kbps: 0 })).toThrow(RangeError);
    expect(() => abandon({ throughput_kbps: Number.NaN })).toThrow(RangeError);
  });
});

describe("NuwaAbandonRule (dash.js abandonFragmentRules)", () => {
  const reps = LADDER.map((k, i) => ({ id: String(i), bitrateInKbit: k, segmentDuration: 2 }));
  const setup = (estimate_bps: number, basis = "busy_period", qd_ms = 0, buffer_s = 6) => {
    const controller = { minRttSampleUs: 50_000, rawQueuingDelayMs: qd_ms, estimate: () => ({ bps: estimate_bps, basis, busy_rate_bps: basis === "busy_period" ? estimate_bps : Number.NaN }) };
    const src = { controller: () => controller, now_us: () => 0 } as unknown as EstimateSource;
    const h = new MpcHistory();
    // two segments that got the whole capacity: share 1, so the rule sees the estimate itself
    for (let i = 0; i < 2; i++) h.add({ bytes: 462_500, duration_s: 0.5, bitrate_kbps: 1850, segment_s: 2, predicted_kbps: 7400 });
    const decisions: string[] = [];
    let now_ms = 10_000;
    const factory = makeNuwaAbandonRule(src, () => ({}), () => buffer_s, { history: () => h }, (d) => decisions.push(d.reason), () => now_ms);
    const rule = (factory as unknown as (this: { context: unknown }) => { shouldAbandon(r: unknown): { representation?: { bitrateInKbit?: number } }; reset(): void }).call({ context: {} });
    const ctx = (media_type: string, req: FragmentRequestLike) => ({
      getMediaType: () => media_type,
      getMediaInfo: () => ({}),
      getCurrentRequest: () => req,
      getAbrController: () => ({ getOptimalRepresentationForBitrate: () => null, getPossibleVoRepresentationsFilteredBySettings: () => reps }),
    });
    return { rule, ctx, decisions, h, setNow: (t: number) => (now_ms = t) };
  };
  const request = (p: Partial<FragmentRequestLike> = {}): FragmentRequestLike => ({ index: 12, bytesTotal: 462_500, bytesLoaded: 62_500, firstByteDate: new Date(8_000), representation: reps[3]!, ...p });

  it("restarts a video segment that would stall at a rung that does not, once per segment, and says why", () => {
    const { rule, ctx, decisions, h } = setup(100_000);
    expect(h.cap_kbps).toBe(Number.POSITIVE_INFINITY);
    expect(rule.shouldAbandon(ctx("video", request())).representation?.bitrateInKbit).toBe(300);
    expect(h.cap_kbps).toBe(300); // the MPC fetches the replacement no higher
    expect(decisions[0]).toContain("[NuwaAbandonRule] segment 12 at 1850 kbit/s");
    expect(rule.shouldAbandon(ctx("video", request({ representation: reps[0]! }))).representation).toBeUndefined(); // same segment, again
    rule.reset();
    expect(rule.shouldAbandon(ctx("video", request())).representation?.bitrateInKbit).toBe(300);
  });

  it("leaves audio, young downloads, finished ones, the lowest rung and a healthy link alone", () => {
    const { rule, ctx, setNow } = setup(100_000);
    expect(rule.shouldAbandon(ctx("audio", request())).representation).toBeUndefined();
    expect(rule.shouldAbandon(ctx("video", request({ bytesLoaded: 462_500 }))).representation).toBeUndefined();
    expect(rule.shouldAbandon(ctx("video", request({ representation: reps[0]! }))).representation).toBeUndefined();
    expect(rule.shouldAbandon(ctx("video", request({ bytesTotal: Number.NaN }))).representation).toBeUndefined();
    setNow(8_000 + ABANDON_MIN_ELAPSED_MS - 1);
    expect(rule.shouldAbandon(ctx("video", request())).representation).toBeUndefined();
    // 3 Mbit/s, and the download got 400 kB in 2 s: the rest (62.5 kB) arrives in 0.3 s
    const healthy = setup(3_000_000);
    expect(healthy.rule.shouldAbandon(healthy.ctx("video", request({ bytesLoaded: 400_000 }))).representation).toBeUndefined();
  });

  it("a link gone dark under a download is read from the download's own last second, not the capacity estimate's last figure", () => {
    // the estimate still says 570 kbit/s (no frame has arrived to change it): 179 kB left = 2.5 s against 3.1 s of buffer;
    // the download got 1 kB in the last 1.5 s: restart at the lowest rung (75 kB instead of 179 kB over a near-dark link)
    const dark = setup(570_000, "busy_period", 0, 3.1);
    const req = (loaded: number) => request({ bytesTotal: 430_000, bytesLoaded: loaded, firstByteDate: new Date(6_000) });
    dark.setNow(9_000);
    expect(dark.rule.shouldAbandon(dark.ctx("video", req(250_000))).representation).toBeUndefined(); // 3 s in: 667 kbit/s so far, 570 predicted
    dark.setNow(10_500);
    expect(dark.rule.shouldAbandon(dark.ctx("video", req(251_000))).representation?.bitrateInKbit).toBe(300);
    expect(dark.decisions[0]).toMatch(/179 kB left at \d+ kbit\/s/);
  });

  it("decideMpc keeps an abandoned segment's replacement at the abandonment's rung, and decides freely once it completes", () => {
    const h = new MpcHistory();
    h.add({ bytes: 462_500, duration_s: 0.5, bitrate_kbps: 1850, segment_s: 2, predicted_kbps: Number.NaN });
    const src: EstimateSource = { controller: () => null, now_us: () => 0 };
    expect(decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h }).rep.bitrateInKbit).toBe(8000);
    h.cap_kbps = 300;
    const d = decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h });
    expect(d.rep.bitrateInKbit).toBe(300);
    h.cap_kbps = 1;
    expect(decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h }).rep.bitrateInKbit).toBe(300); // below every rung: the lowest
    h.add({ bytes: 75_000, duration_s: 0.2, bitrate_kbps: 300, segment_s: 2, predicted_kbps: Number.NaN }); // the replacement arrived
    expect(h.cap_kbps).toBe(Number.POSITIVE_INFINITY);
    // the cap is lifted; the up-switch hold (MPC_DEFAULTS.up_hold_segments 2) keeps 300 one more segment
    const kept = decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h });
    expect(kept.rep.bitrateInKbit).toBe(300);
    expect(kept.why).toMatch(/kept by the switch hysteresis: up-switch hold/);
    expect(decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h, up_hold_segments: 1 }).rep.bitrateInKbit).toBeGreaterThan(300);
    h.add({ bytes: 75_000, duration_s: 0.2, bitrate_kbps: 300, segment_s: 2, predicted_kbps: Number.NaN });
    expect(decideMpc(src, reps, 20_000, "delivery_rate", 20, h, { history: () => h }).rep.bitrateInKbit).toBeGreaterThan(300);
  });

  it("recentRateKbps: bytes since the newest sample at least a window old (the request's start if none), over the time since", () => {
    const trail = [
      { t_ms: 1_200, loaded: 10_000 },
      { t_ms: 1_800, loaded: 60_000 },
      { t_ms: 3_500, loaded: 61_000 },
    ];
    expect(recentRateKbps(trail, 1_000, 3_500)).toBeCloseTo(((61_000 - 60_000) * 8) / 1_700, 9);
    expect(recentRateKbps(trail.slice(0, 2), 1_000, 1_800)).toBeCloseTo((60_000 * 8) / 800, 9); // younger than a window: from the start
    expect(recentRateKbps([], 1_000, 2_000)).toBeNaN();
  });

  it("a restart waits behind the queue standing now: at 400 kbit/s the 1200 kbit/s segment takes 6.05 s alone, 14.05 s behind 8 s of queue", () => {
    // keeping: 400 kB left = 8 s against 6 s of buffer (2 s stall); 1200 kbit/s: a 0.05 s stall
    // (the download got 62.5 kB in its 1 s: 500 kbit/s, above the 400 predicted)
    const alone = setup(400_000);
    expect(alone.rule.shouldAbandon(alone.ctx("video", request({ firstByteDate: new Date(9_000) }))).representation?.bitrateInKbit).toBe(1200);
    const behind = setup(400_000, "busy_period", 8_000);
    expect(behind.rule.shouldAbandon(behind.ctx("video", request({ firstByteDate: new Date(9_000) }))).representation).toBeUndefined();
  });

  it("without a capacity figure the download's own rate decides", () => {
    // app-limited estimate of 5 Mbit/s, but the download got 62.5 kB in 2 s (250 kbit/s): 12.8 s left against 6 s;
    // 750 kbit/s (187.5 kB, 6.05 s: a 0.05 s stall) beats 300 (no stall, but 0.45 lower and a larger switch)
    const { rule, ctx } = setup(5_000_000, "window_per_rtt");
    expect(rule.shouldAbandon(ctx("video", request())).representation?.bitrateInKbit).toBe(750);
  });
});

describe("sustainedSampleKbps (attachNuwa estimate_sample: \"min_over_download\")", () => {
  it("hands the average a rise only once it lasted the download, a fall at once", () => {
    expect(sustainedSampleKbps(4000, 9000)).toBe(4000); // rose during the download: the figure it started on
    expect(sustainedSampleKbps(9000, 4000)).toBe(4000); // fell: the figure at the end
    const avg = new DashjsEwma();
    for (const [a, b] of [[5000, 5000], [5000, 20000], [20000, 20000]] as const) avg.add(sustainedSampleKbps(a, b), 1000);
    const plain = new DashjsEwma();
    for (const b of [5000, 20000, 20000]) plain.add(b, 1000);
    expect(avg.estimateKbps()).toBeLessThan(plain.estimateKbps()); // one download later into the average
  });
  it("falls back to the figure it has when the other is missing, NaN without either", () => {
    expect(sustainedSampleKbps(Number.NaN, 3000)).toBe(3000);
    expect(sustainedSampleKbps(3000, Number.NaN)).toBe(3000);
    expect(sustainedSampleKbps(0, -1)).toBeNaN();
  });
});
