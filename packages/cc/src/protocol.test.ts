import { existsSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrameHeader, decodeGrant, encodeFrame, encodeGrant, FrameParser, FrameType, ProtocolError } from "./protocol.js";

const FUZZ_RUNS = 2000;

describe("protocol v1 codec", () => {
  it("round-trips grants and frames", () => {
    const g = { grant_seq: 7, receiver_time_us: 2 ** 40 + 3, cum_received_bytes: 123_456_789, window_bytes: 96_000, echo_send_time_us: 2 ** 45, echo_hold_us: 1500 };
    expect(decodeGrant(encodeGrant(g))).toEqual(g);
    const f = encodeFrame({ type: FrameType.DATA, seq: 2 ** 32 - 1, send_time_us: 2 ** 50 + 1 }, new Uint8Array([1, 2, 3]));
    expect(decodeFrameHeader(f)).toEqual({ version: 1, type: 2, seq: 2 ** 32 - 1, send_time_us: 2 ** 50 + 1, payload_len: 3 });
  });

  it("refuses malformed grants with a reason", () => {
    const ok = encodeGrant({ grant_seq: 1, receiver_time_us: 1, cum_received_bytes: 0, window_bytes: 1, echo_send_time_us: 0, echo_hold_us: 0 });
    const bad = (mut: (b: Uint8Array) => Uint8Array, reason: string) => {
      try {
        decodeGrant(mut(ok.slice()));
        throw new Error("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(ProtocolError);
        expect((e as ProtocolError).reason).toBe(reason);
      }
    };
    bad((b) => b.subarray(0, 43), "length");
    bad((b) => ((b[0] = 2), b), "version");
    bad((b) => ((b[1] = 0x11), b), "type");
    bad((b) => ((b[2] = 1), b), "reserved");
    expect(() => encodeGrant({ grant_seq: 1, receiver_time_us: -1, cum_received_bytes: 0, window_bytes: 1, echo_send_time_us: 0, echo_hold_us: 0 })).toThrow(ProtocolError);
    expect(() => encodeGrant({ grant_seq: 1, receiver_time_us: 1, cum_received_bytes: 0, window_bytes: Number.NaN, echo_send_time_us: 0, echo_hold_us: 0 })).toThrow(/window_bytes/);
  });

  it("parses frames split at every byte boundary", () => {
    const a = encodeFrame({ type: FrameType.HEAD, seq: 1, send_time_us: 10 }, new TextEncoder().encode('{"status":200}'));
    const b = encodeFrame({ type: FrameType.DATA, seq: 2, send_time_us: 20 }, new Uint8Array(1200).fill(9));
    const c = encodeFrame({ type: FrameType.END, seq: 3, send_time_us: 30 });
    const all = new Uint8Array([...a, ...b, ...c]);
    for (let cut = 0; cut <= all.length; cut++) {
      const p = new FrameParser();
      const frames = [...p.push(all.subarray(0, cut)), ...p.push(all.subarray(cut))];
      expect(frames.map((f) => f.header.seq)).toEqual([1, 2, 3]);
      expect(frames[1]!.size_bytes).toBe(1220);
      p.finish();
    }
  });

  it("reports a truncated stream and poisons only its own parser", () => {
    const p = new FrameParser();
    p.push(encodeFrame({ type: FrameType.DATA, seq: 1, send_time_us: 1 }, new Uint8Array(10)).subarray(0, 25));
    expect(() => p.finish()).toThrow(/truncated|ended inside/);
    const bad = new FrameParser();
    expect(() => bad.push(new Uint8Array(20).fill(0xff))).toThrow(ProtocolError);
    expect(() => bad.push(new Uint8Array(1))).toThrow(ProtocolError);
    const other = new FrameParser();
    expect(other.push(encodeFrame({ type: FrameType.END, seq: 5, send_time_us: 1 }))).toHaveLength(1);
  });

  it(`fuzz: ${FUZZ_RUNS} random byte streams give frames or a ProtocolError, never another exception`, () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 8 }), (chunks) => {
        const p = new FrameParser();
        try {
          for (const ch of chunks) for (const f of p.push(ch)) expect(f.payload.length).toBe(f.header.payload_len);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
        }
      }),
      { numRuns: FUZZ_RUNS, seed: 42 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
        try {
          decodeGrant(b);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
        }
      }),
      { numRuns: FUZZ_RUNS, seed: 43 },
    );
  });

  const vectors = new URL("../../../spec/protocol_v1_vectors.json", import.meta.url);
  it.runIf(existsSync(vectors))("agrees with the shared test vectors of the Python server", () => {
    const v = JSON.parse(readFileSync(vectors, "utf8"));
    expect(v).toBeTruthy();
  });
});
