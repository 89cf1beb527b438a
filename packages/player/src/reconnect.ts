/**
 * Keeps a Nuwa session open across server restarts and lost connections:
 * when the session ends it connects again after an exponential backoff with
 * jitter, capped (the "exponential backoff" of RFC 8085 §3.1.3 / AWS's
 * "full jitter" essay, simplified to ± a fraction), and hands the next session
 * to whoever waits for one.
 *
 * A session that goes silent with requests open (session.ts `onStall`) is
 * not closed at once: a silent link (a cellular outage) and a dead server (a
 * crash, a restart that forgot the connection) look the same from here. The
 * manager opens a second session with the same backoff; if it opens while
 * the old one is still silent, the server is alive and the old connection is
 * not, so the old one is closed (its open requests fail and the loader
 * finishes them on the new one). If the old one hears from the server first,
 * the attempts stop and a late new session is closed unused.
 *
 * Each new session gets a fresh controller. Carrying the old one over would
 * be wrong on three counts: the server's `cum_received_bytes` and frame `seq`
 * restart at 0 on a new session (PROTOCOL.md "Grants": a cum beyond what was
 * written is clamped, so the grant would stop limiting anything); the one-way
 * delay base is tied to the old server's clock (a restarted or different
 * server has another epoch, so every queuing-delay sample would be off by the
 * clock difference until a drain probe re-learned the base); and after an
 * outage the path is unknown, which is why the controller restarts in
 * start-up after silence anyway. What is lost is the bandwidth estimate's
 * history: dash.js's ABR sees no Nuwa estimate until the new session has data.
 */
import type { TelemetryEvent } from "./session.js";

/** Backoff settings; all delays in ms. */
export interface ReconnectPolicy {
  /** Delay before the first reconnect attempt, ms. */
  initial_delay_ms: number;
  /** Delay cap, ms. */
  max_delay_ms: number;
  /** Growth per failed attempt (dimensionless, ≥ 1). */
  multiplier: number;
  /** Each delay is scaled by a uniform factor in [1 − j, 1 + j] (0 ≤ j < 1) so clients do not reconnect in lockstep. */
  jitter_fraction: number;
  /** Stop a round of attempts after this long without success, ms; waiters then get the last error. A later `session()` call starts a new round. */
  give_up_after_ms: number;
  /** Connection attempts for the very first session (1: fail at once, so a wrong URL or certificate is reported quickly). */
  initial_attempts: number;
}

export const DEFAULT_RECONNECT_POLICY: Readonly<ReconnectPolicy> = Object.freeze({
  initial_delay_ms: 200,
  max_delay_ms: 5000,
  multiplier: 2,
  jitter_fraction: 0.2,
  give_up_after_ms: 60_000,
  initial_attempts: 1,
});

/**
 * Validate a policy.
 * @throws RangeError naming the first bad field
 */
export function resolveReconnectPolicy(p: Partial<ReconnectPolicy> = {}): ReconnectPolicy {
  const r = { ...DEFAULT_RECONNECT_POLICY, ...p };
  if (!(r.initial_delay_ms >= 0) || !Number.isFinite(r.initial_delay_ms)) throw new RangeError(`initial_delay_ms must be finite and ≥ 0, got ${r.initial_delay_ms}`);
  if (!(r.max_delay_ms >= r.initial_delay_ms) || !Number.isFinite(r.max_delay_ms)) throw new RangeError(`max_delay_ms must be finite and ≥ initial_delay_ms, got ${r.max_delay_ms}`);
  if (!(r.multiplier >= 1) || !Number.isFinite(r.multiplier)) throw new RangeError(`multiplier must be finite and ≥ 1, got ${r.multiplier}`);
  if (!(r.jitter_fraction >= 0 && r.jitter_fraction < 1)) throw new RangeError(`jitter_fraction must be in [0, 1), got ${r.jitter_fraction}`);
  if (!(r.give_up_after_ms > 0)) throw new RangeError(`give_up_after_ms must be > 0, got ${r.give_up_after_ms}`);
  if (!(Number.isInteger(r.initial_attempts) && r.initial_attempts >= 1)) throw new RangeError(`initial_attempts must be an integer ≥ 1, got ${r.initial_attempts}`);
  return r;
}

/**
 * Delay before reconnect attempt `attempt` (0-based), ms:
 * min(max, initial × multiplier^attempt) × (1 + j·(2u − 1)), u = `random()` in [0, 1).
 */
export function backoffDelayMs(attempt: number, p: ReconnectPolicy, random: () => number = Math.random): number {
  const base = Math.min(p.max_delay_ms, p.initial_delay_ms * p.multiplier ** attempt);
  return base * (1 + p.jitter_fraction * (2 * random() - 1));
}

/** The slice of NuwaSession the manager needs (a fake in unit tests). */
export interface ClosableSession {
  readonly closed: Promise<string>;
  readonly closeReason: string | null;
  /** True from a reported stall until data arrives again. */
  readonly stalled: boolean;
  close(reason?: string): void;
}

/** What the manager passes to `connect` for the session it opens. */
export interface ConnectHooks {
  /** Give this to SessionOptions.onStall. */
  onStall: (silent_ms: number, open_requests: number) => void;
}

export interface SessionManagerHooks<S> {
  /** A new session is open (the first one included). */
  onSession?: (s: S, count: number) => void;
  onTelemetry?: (e: TelemetryEvent) => void;
  now_us?: () => number;
  random?: () => number;
}

/**
 * One session at a time, reconnected with backoff when it ends.
 * `session()` gives the open session or waits for the next one.
 */
export class SessionManager<S extends ClosableSession> {
  private readonly policy: ReconnectPolicy;
  private readonly now_us: () => number;
  private current_session: S | null = null;
  private waiters: { resolve: (s: S) => void; reject: (e: unknown) => void }[] = [];
  private connecting = false;
  private stopped = false;
  private sessions = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  /**
   * Starts connecting at once.
   * @param connect opens one session (passing `hooks.onStall` on to it); rejects if it cannot
   * @throws RangeError on a bad policy
   */
  constructor(
    private readonly connect: (hooks: ConnectHooks) => Promise<S>,
    policy: Partial<ReconnectPolicy> = {},
    private readonly hooks: SessionManagerHooks<S> = {},
  ) {
    this.policy = resolveReconnectPolicy(policy);
    this.now_us = hooks.now_us ?? (() => performance.now() * 1000);
    this.round(this.policy.initial_attempts, "first session", 0, null);
  }

  /** The open session, or null while (re)connecting. */
  get current(): S | null {
    return this.current_session;
  }

  /** Sessions opened so far. */
  get count(): number {
    return this.sessions;
  }

  /**
   * The open session, or the next one.
   * @throws the last connection error when a round of attempts gives up; Error if the manager is closed
   */
  session(): Promise<S> {
    if (this.stopped) return Promise.reject(new Error("Nuwa session manager is closed"));
    if (this.current_session && this.current_session.closeReason === null) return Promise.resolve(this.current_session);
    const p = new Promise<S>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.connecting) this.round(Number.POSITIVE_INFINITY, "session wanted after a failed round", 0, null);
    return p;
  }

  /** Close the open session and stop reconnecting; waiters are rejected. */
  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.current_session?.close();
    this.current_session = null;
    this.settleWaiters(null, new Error("Nuwa session manager is closed"));
  }

  private settleWaiters(s: S | null, err?: unknown): void {
    const w = this.waiters;
    this.waiters = [];
    for (const x of w) {
      if (s) x.resolve(s);
      else x.reject(err);
    }
  }

  /** The open session `s` reported a stall: look for a live server on a new session. */
  private onStall(s: S, silent_ms: number, open_requests: number): void {
    if (this.stopped || this.current_session !== s || this.connecting) return;
    this.round(Number.POSITIVE_INFINITY, `stalled: nothing received for ${silent_ms.toFixed(0)} ms with ${open_requests} request(s) open`, 0, s);
  }

  /**
   * A round of attempts: first after `first_delay_ms`, then with backoff, until
   * success, `max_attempts`, or give_up_after_ms. With `replacing` (a stalled
   * session) the round stops as soon as that session hears from its server
   * again, and on success the stalled session is closed.
   */
  private round(max_attempts: number, reason: string, first_delay_ms: number, replacing: S | null): void {
    this.connecting = true;
    const started_us = this.now_us();
    let attempt = 0;
    /** The stalled session came back (data again): nothing to replace. */
    const recovered = () => replacing !== null && replacing.closeReason === null && !replacing.stalled;
    const tryOnce = () => {
      this.timer = null;
      if (this.stopped) return;
      if (recovered()) {
        this.connecting = false;
        return;
      }
      const holder: { s: S | null } = { s: null };
      const hooks: ConnectHooks = { onStall: (ms, n) => holder.s && this.onStall(holder.s, ms, n) };
      this.connect(hooks).then(
        (s) => {
          holder.s = s;
          this.connecting = false;
          if (this.stopped) {
            s.close();
            return;
          }
          if (recovered()) {
            s.close("not needed: the stalled session recovered");
            return;
          }
          this.current_session = s;
          this.sessions++;
          this.hooks.onTelemetry?.({ type: "session_open", t_us: this.now_us(), sessions: this.sessions });
          this.hooks.onSession?.(s, this.sessions);
          this.settleWaiters(s);
          s.closed.then((why) => {
            const was_current = this.current_session === s;
            if (was_current) this.current_session = null;
            if (was_current && !this.stopped && !this.connecting) this.round(Number.POSITIVE_INFINITY, why, backoffDelayMs(0, this.policy, this.hooks.random), null);
          });
          // The server answered on a new connection while the old one stayed silent: the old one is dead.
          if (replacing && replacing.closeReason === null) replacing.close(`${reason}; a new session opened meanwhile`);
        },
        (err: unknown) => {
          attempt++;
          const elapsed_ms = (this.now_us() - started_us) / 1000;
          if (this.stopped) return;
          if (attempt >= max_attempts || elapsed_ms >= this.policy.give_up_after_ms) {
            this.connecting = false;
            this.hooks.onTelemetry?.({ type: "error", t_us: this.now_us(), message: `Nuwa session: gave up after ${attempt} attempt(s) in ${elapsed_ms.toFixed(0)} ms: ${String(err)}` });
            if (replacing && replacing.closeReason === null && replacing.stalled) {
              // Still silent and no server to be found: drop it, so the next session() starts a fresh round.
              if (this.current_session === replacing) this.current_session = null;
              replacing.close(`${reason}; no new session within ${elapsed_ms.toFixed(0)} ms`);
            }
            this.settleWaiters(null, err);
            return;
          }
          schedule(backoffDelayMs(attempt, this.policy, this.hooks.random), String(err));
        },
      );
    };
    const schedule = (delay_ms: number, why: string) => {
      this.hooks.onTelemetry?.({ type: "reconnect", t_us: this.now_us(), attempt, delay_ms, reason: why });
      this.timer = setTimeout(tryOnce, delay_ms);
    };
    if (first_delay_ms > 0) schedule(first_delay_ms, reason);
    else tryOnce();
  }
}
