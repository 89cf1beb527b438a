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
  describe.runIf(existsSync(vectors))("shared test vectors (spec/protocol_v1_vectors.json, written field by field from PROTOCOL.md)", () => {
    const v = existsSync(vectors) ? JSON.parse(readFileSync(vectors, "utf8")) : { frames: [], grants: [] };
    const hex = (h: string) => Uint8Array.from(h.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
    const toHex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    /** u64 decimal strings: exact below 2^53, nearest double above (readU64 is documented exact to 2^53). */
    const u64 = (s: string) => Number(BigInt(s));
    const decodeWhole = (b: Uint8Array) => {
      const p = new FrameParser();
      const frames = p.push(b);
      p.finish();
      if (frames.length === 0) throw new ProtocolError("truncated", "no frame");
      if (frames.length !== 1) throw new ProtocolError("length", `expected one frame, got ${frames.length}`);
      return frames[0]!;
    };

    it("decodes every valid frame to the listed fields and encodes it back", () => {
      for (const f of v.frames.filter((x: { valid: boolean }) => x.valid)) {
        const frame = decodeWhole(hex(f.hex));
        expect(frame.header.type, f.name).toBe(f.frame.type);
        expect(frame.header.seq, f.name).toBe(f.frame.seq);
        expect(frame.header.payload_len, f.name).toBe(f.frame.payload_len);
        expect(frame.header.send_time_us, f.name).toBe(u64(f.frame.send_time_us));
        if (u64(f.frame.send_time_us) <= Number.MAX_SAFE_INTEGER) {
          expect(toHex(encodeFrame({ type: frame.header.type, seq: frame.header.seq, send_time_us: frame.header.send_time_us }, frame.payload)), f.name).toBe(f.hex);
        }
      }
    });

    it("refuses every invalid frame with the listed reason", () => {
      for (const f of v.frames.filter((x: { valid: boolean }) => !x.valid)) {
        let err: unknown = null;
        try {
          decodeWhole(hex(f.hex));
        } catch (e) {
          err = e;
        }
        expect(err, f.name).toBeInstanceOf(ProtocolError);
        // A stream parser sees a short payload or a trailing byte as a frame cut off by the end of the stream.
        const expected = f.reason === "length" && f.error === "frame_length" ? ["length", "truncated"] : [f.reason];
        expect(expected, f.name).toContain((err as ProtocolError).reason);
      }
    });

    it("decodes grants as listed and refuses invalid ones with the listed reason", () => {
      for (const g of v.grants) {
        if (g.valid) {
          const d = decodeGrant(hex(g.hex));
          expect(d.grant_seq, g.name).toBe(g.grant.grant_seq);
          expect(d.window_bytes, g.name).toBe(u64(g.grant.window_bytes));
          expect(d.cum_received_bytes, g.name).toBe(u64(g.grant.cum_received_bytes));
          expect(d.echo_hold_us, g.name).toBe(g.grant.echo_hold_us);
          if (u64(g.grant.window_bytes) <= Number.MAX_SAFE_INTEGER && u64(g.grant.receiver_time_us) <= Number.MAX_SAFE_INTEGER && u64(g.grant.echo_send_time_us) <= Number.MAX_SAFE_INTEGER && u64(g.grant.cum_received_bytes) <= Number.MAX_SAFE_INTEGER) {
            expect(toHex(encodeGrant(d)), g.name).toBe(g.hex);
          }
        } else {
          expect(() => decodeGrant(hex(g.hex)), g.name).toThrow(ProtocolError);
          try {
            decodeGrant(hex(g.hex));
          } catch (e) {
            expect((e as ProtocolError).reason, g.name).toBe(g.reason);
          }
        }
      }
    });
  });
});
