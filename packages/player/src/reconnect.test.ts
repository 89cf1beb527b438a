/** SessionManager: backoff schedule, waiting for the next session, giving up, closing (fake timers, fake sessions). */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backoffDelayMs, type ClosableSession, type ConnectHooks, DEFAULT_RECONNECT_POLICY, resolveReconnectPolicy, SessionManager } from "./reconnect.js";
import type { TelemetryEvent } from "./session.js";

class FakeSession implements ClosableSession {
  closeReason: string | null = null;
  stalled = false;
  hooks: ConnectHooks | null = null;
  /** What session.ts does when nothing arrives for stall_timeout_ms with requests open. */
  stall(): void {
    this.stalled = true;
    this.hooks?.onStall(4000, 1);
  }
  readonly closed: Promise<string>;
  private resolve!: (r: string) => void;
  constructor(readonly id: number) {
    this.closed = new Promise((r) => {
      this.resolve = r;
    });
  }
  close(reason = "closed by the player"): void {
    if (this.closeReason !== null) return;
    this.closeReason = reason;
    this.resolve(reason);
  }
}

/** connect() that fails while `down` is true; records when each attempt was made (fake ms). */
function connector() {
  const st = { down: false, attempts_ms: [] as number[], made: [] as FakeSession[] };
  const connect = async (hooks: ConnectHooks) => {
    st.attempts_ms.push(Date.now());
    if (st.down) throw new Error("WebTransportError: Opening handshake failed.");
    const s = new FakeSession(st.made.length);
    s.hooks = hooks;
    st.made.push(s);
    return s;
  };
  return { st, connect };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

const now_us = () => Date.now() * 1000;
const noJitter = () => 0.5; // u = 0.5: factor exactly 1

describe("backoffDelayMs", () => {
  it("doubles from the initial delay up to the cap", () => {
    const p = resolveReconnectPolicy({ initial_delay_ms: 200, max_delay_ms: 5000, multiplier: 2, jitter_fraction: 0 });
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => backoffDelayMs(a, p))).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
  });
  it("jitter stays within ± jitter_fraction", () => {
    const p = resolveReconnectPolicy({ jitter_fraction: 0.2 });
    expect(backoffDelayMs(0, p, () => 0)).toBeCloseTo(160);
    expect(backoffDelayMs(0, p, () => 0.999999)).toBeCloseTo(240, 3);
  });
  it("rejects nonsense with the field named", () => {
    expect(() => resolveReconnectPolicy({ multiplier: 0.5 })).toThrow(/multiplier/);
    expect(() => resolveReconnectPolicy({ max_delay_ms: 10, initial_delay_ms: 100 })).toThrow(/max_delay_ms/);
    expect(() => resolveReconnectPolicy({ jitter_fraction: 1 })).toThrow(/jitter_fraction/);
    expect(() => resolveReconnectPolicy({ initial_attempts: 0 })).toThrow(/initial_attempts/);
    expect(() => resolveReconnectPolicy({ give_up_after_ms: 0 })).toThrow(/give_up_after_ms/);
  });
});

describe("SessionManager", () => {
  it("reconnects with exponential backoff while the server is down, then hands the new session to waiters", async () => {
    const { st, connect } = connector();
    const events: TelemetryEvent[] = [];
    const m = new SessionManager(connect, { ...DEFAULT_RECONNECT_POLICY, jitter_fraction: 0 }, { now_us, random: noJitter, onTelemetry: (e) => events.push(e) });
    const s1 = await m.session();
    expect(s1.id).toBe(0);
    expect(m.count).toBe(1);
    // Server goes down and closes the session.
    st.down = true;
    s1.close("closed by the server");
    await vi.advanceTimersByTimeAsync(0);
    expect(m.current).toBeNull();
    const waiting = m.session();
    let got: FakeSession | null = null;
    void waiting.then((s) => {
      got = s;
    });
    // Attempts at +200, +600, +1400, +3000 ms (200, 400, 800, 1600 apart).
    await vi.advanceTimersByTimeAsync(3000);
    expect(st.attempts_ms).toEqual([0, 200, 600, 1400, 3000]);
    expect(got).toBeNull();
    st.down = false; // server back
    await vi.advanceTimersByTimeAsync(3200); // next attempt at 3000 + 3200
    expect(st.attempts_ms.at(-1)).toBe(6200);
    expect(got).not.toBeNull();
    expect(got!.id).toBe(1);
    expect(m.current).toBe(got);
    expect(m.count).toBe(2);
    const reconnects = events.filter((e) => e.type === "reconnect");
    expect(reconnects.map((e) => (e as { delay_ms: number }).delay_ms)).toEqual([200, 400, 800, 1600, 3200]);
    expect(events.filter((e) => e.type === "session_open")).toHaveLength(2);
    m.close();
  });

  it("caps the delay at max_delay_ms", async () => {
    const { st, connect } = connector();
    const m = new SessionManager(connect, { initial_delay_ms: 100, max_delay_ms: 300, jitter_fraction: 0 }, { now_us });
    const s1 = await m.session();
    st.down = true;
    s1.close("x");
    await vi.advanceTimersByTimeAsync(2000);
    const gaps = st.attempts_ms.slice(1).map((t, i) => t - st.attempts_ms[i]!);
    expect(gaps).toEqual([100, 200, 300, 300, 300, 300, 300]);
    m.close();
  });

  it("gives up after give_up_after_ms: waiters get the last error; a later session() starts a new round", async () => {
    const { st, connect } = connector();
    const m = new SessionManager(connect, { initial_delay_ms: 100, max_delay_ms: 400, jitter_fraction: 0, give_up_after_ms: 1000 }, { now_us });
    const s1 = await m.session();
    st.down = true;
    s1.close("x");
    await vi.advanceTimersByTimeAsync(0);
    const w = m.session();
    const outcome = w.then(
      () => "resolved",
      (e: unknown) => String(e),
    );
    await vi.advanceTimersByTimeAsync(2000);
    expect(await outcome).toMatch(/handshake failed/);
    const n = st.attempts_ms.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(st.attempts_ms.length).toBe(n); // idle after giving up
    st.down = false;
    await expect(m.session()).resolves.toBeInstanceOf(FakeSession);
    m.close();
  });

  it("the first session fails fast by default (wrong URL or certificate)", async () => {
    const { st, connect } = connector();
    st.down = true;
    const m = new SessionManager(connect, {}, { now_us });
    await expect(m.session()).rejects.toThrow(/handshake failed/);
    expect(st.attempts_ms).toHaveLength(1);
    m.close();
  });

  it("close() stops reconnecting and rejects waiters", async () => {
    const { st, connect } = connector();
    const m = new SessionManager(connect, { jitter_fraction: 0 }, { now_us });
    const s1 = await m.session();
    st.down = true;
    s1.close("x");
    await vi.advanceTimersByTimeAsync(0);
    const w = m.session();
    m.close();
    await expect(w).rejects.toThrow(/closed/);
    const n = st.attempts_ms.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(st.attempts_ms.length).toBe(n);
    await expect(m.session()).rejects.toThrow(/closed/);
  });

  it("a stalled session is replaced when a new one opens while it stays silent (dead server)", async () => {
    const { st, connect } = connector();
    const events: TelemetryEvent[] = [];
    const m = new SessionManager(connect, { jitter_fraction: 0 }, { now_us, onTelemetry: (e) => events.push(e) });
    const s1 = await m.session();
    st.down = true; // the old server is gone...
    s1.stall();
    await vi.advanceTimersByTimeAsync(0);
    expect(st.attempts_ms).toEqual([0, 0]); // probe at once
    expect(s1.closeReason).toBeNull(); // ...but that is not known yet: the old session stays
    await vi.advanceTimersByTimeAsync(600);
    expect(st.attempts_ms).toEqual([0, 0, 400]); // then backoff: 400, 800, ... after the failed probe
    st.down = false; // ...a new one answers
    await vi.advanceTimersByTimeAsync(800);
    expect(m.count).toBe(2);
    expect(m.current?.id).toBe(1);
    expect(s1.closeReason).toMatch(/^stalled: nothing received for 4000 ms with 1 request\(s\) open; a new session opened meanwhile$/);
    m.close();
  });

  it("a stall that ends (link outage over, data again) stops the attempts and keeps the session", async () => {
    const { st, connect } = connector();
    const m = new SessionManager(connect, { jitter_fraction: 0 }, { now_us });
    const s1 = await m.session();
    st.down = true; // the link is down: nothing gets through, old or new
    s1.stall();
    await vi.advanceTimersByTimeAsync(1500);
    const n = st.attempts_ms.length;
    expect(n).toBeGreaterThan(2);
    s1.stalled = false; // data on the old session again
    st.down = false;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(st.attempts_ms.length).toBe(n + 0); // the next attempt saw the recovery and stopped before connecting
    expect(m.current).toBe(s1);
    expect(s1.closeReason).toBeNull();
    expect(m.count).toBe(1);
    // A later stall starts a new round.
    s1.stall();
    await vi.advanceTimersByTimeAsync(0);
    expect(m.count).toBe(2);
    m.close();
  });

  it("a new session that opens after the stalled one recovered is closed unused", async () => {
    const st = { release: null as null | ((s: FakeSession) => void) };
    let first = true;
    const m = new SessionManager(
      (hooks) => {
        if (first) {
          first = false;
          const s = new FakeSession(0);
          s.hooks = hooks;
          return Promise.resolve(s);
        }
        return new Promise<FakeSession>((r) => {
          st.release = r;
        });
      },
      { jitter_fraction: 0 },
      { now_us },
    );
    const s1 = await m.session();
    s1.stall();
    await vi.advanceTimersByTimeAsync(0);
    expect(st.release).not.toBeNull(); // a handshake is under way
    s1.stalled = false; // the old one hears from its server first
    const late = new FakeSession(1);
    st.release!(late);
    await vi.advanceTimersByTimeAsync(0);
    expect(late.closeReason).toMatch(/not needed/);
    expect(m.current).toBe(s1);
    expect(m.count).toBe(1);
    m.close();
  });
});
