/**
 * The receivers' brains for the Python load client (lab/nuwa_lab/load/):
 * one real @nuwa/cc NuwaController and one real @nuwa/player GrantPolicy per
 * session, driven over JSON lines on stdin/stdout. The Python side does the
 * QUIC I/O and owns the clock (CLOCK_MONOTONIC µs, as the server's stamps);
 * every decision a browser's NuwaSession makes is made here by the same code
 * (packages/player/src/session.ts: onFrame per frame, tick every 5 ms,
 * first-byte RTT sample, GrantPolicy.due after frames and on ticks).
 *
 * Requests, one per line; every request gets exactly one reply line, in order:
 *   {"o":"open","id":N,"cc":{...}}                        → {"g":[]}
 *   {"o":"f","t":T,"s":[[id,[send_us,recv_us,bytes,…]],…]} → {"t":T,"g":[[id,window,cum],…]}
 *   {"o":"rtt","id":N,"rtt_us":X}                          → {"g":[]}
 *   {"o":"tick","t":T,"s":[[id,expecting(0|1)],…]}        → {"t":T,"g":[…],"w":[[id,window,phase],…]}
 *   {"o":"close","id":N,"t":T}                             → {"id":N,"estimate":BandwidthEstimate,"window":W,"phase":P,"base_owd_us":B}
 *   anything wrong                                          → {"error":"…"}
 * A grant [id, window_bytes, cum_received_bytes] means "send a grant now".
 *
 * Run: node_modules/.bin/tsx e2e/src/load-controllers.ts
 */
import { createInterface } from "node:readline";
import { NuwaController } from "@nuwa/cc";
import { DEFAULT_GRANT_POLICY, GrantPolicy } from "../../packages/player/src/grants.js";

interface Receiver {
  ctl: NuwaController;
  policy: GrantPolicy;
}

const receivers = new Map<number, Receiver>();

function receiver(id: unknown): Receiver {
  const r = receivers.get(id as number);
  if (!r) throw new Error(`no session ${JSON.stringify(id)}`);
  return r;
}

/** GrantPolicy check, as NuwaSession.maybeGrant: push [id, window, cum] if due. */
function maybeGrant(id: number, r: Receiver, t_us: number, out: [number, number, number][]): void {
  const w = Math.round(r.ctl.windowBytes);
  if (!r.policy.due(t_us, w)) return;
  r.policy.sent(t_us, w);
  out.push([id, w, r.ctl.cumReceivedBytes]);
}

function handle(req: Record<string, unknown>): Record<string, unknown> {
  switch (req.o) {
    case "open": {
      if (!Number.isInteger(req.id)) throw new Error("open: integer 'id' required");
      receivers.set(req.id as number, { ctl: new NuwaController((req.cc as Record<string, unknown> | undefined) ?? {}), policy: new GrantPolicy({ ...DEFAULT_GRANT_POLICY }) });
      return { g: [] };
    }
    case "f": {
      const g: [number, number, number][] = [];
      for (const [id, flat] of req.s as [number, number[]][]) {
        const r = receiver(id);
        if (flat.length % 3 !== 0) throw new Error(`f: session ${id}: frame list length ${flat.length} is not a multiple of 3`);
        let last_t = 0;
        for (let i = 0; i < flat.length; i += 3) {
          r.ctl.onFrame(flat[i]!, flat[i + 1]!, flat[i + 2]!);
          last_t = flat[i + 1]!;
        }
        r.policy.onFrames(flat.length / 3);
        maybeGrant(id, r, last_t, g);
      }
      return { t: req.t, g };
    }
    case "rtt":
      receiver(req.id).ctl.onRttSample(req.rtt_us as number);
      return { g: [] };
    case "tick": {
      const t = req.t as number;
      const g: [number, number, number][] = [];
      const w: [number, number, string][] = [];
      for (const [id, expecting] of req.s as [number, number][]) {
        const r = receiver(id);
        const d = r.ctl.tick(t, expecting === 1);
        maybeGrant(id, r, t, g);
        w.push([id, Math.round(d.window_bytes), d.phase]);
      }
      return { t, g, w };
    }
    case "close": {
      const r = receiver(req.id);
      receivers.delete(req.id as number);
      return { id: req.id, estimate: r.ctl.estimate(req.t as number), window: r.ctl.windowBytes, phase: r.ctl.currentPhase, base_owd_us: r.ctl.baseOwdUs };
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(req.o)}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let reply: Record<string, unknown>;
  try {
    reply = handle(JSON.parse(line) as Record<string, unknown>);
  } catch (e) {
    reply = { error: e instanceof Error ? e.message : String(e) };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
});
