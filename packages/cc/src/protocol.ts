/**
 * Nuwa wire protocol v1 (docs/PROTOCOL.md): response frame headers and grants.
 * Pure encoding and decoding; errors are ProtocolError with a reason.
 */

export const PROTOCOL_VERSION = 1;
export const FRAME_HEADER_BYTES = 20;
export const MAX_FRAME_PAYLOAD_BYTES = 65_536;
export const GRANT_BYTES = 44;
export const GRANT_TYPE = 0x10;
/**
 * The receiver's grant cadence, µs: a grant that carries news (frames arrived) goes out at most this
 * long after the previous one (docs/DESIGN.md §2 step 5; the player's `GrantPolicy`
 * `max_interval_us`). On a path whose min RTT is shorter, `GrantPolicy` also answers once half the
 * window has arrived and one min RTT has passed, so the sender waits about one min RTT for the grant
 * that frees its next window; the controller's window validation counts that wait (controller.ts).
 */
export const GRANT_INTERVAL_US = 10_000;

export const FrameType = { HEAD: 1, DATA: 2, END: 3, ERROR: 4 } as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

/** A malformed frame or grant. `reason` is a short machine-readable kind. */
export class ProtocolError extends Error {
  constructor(
    readonly reason: "truncated" | "version" | "type" | "length" | "reserved" | "range",
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** A decoded response frame header (PROTOCOL.md "Responses"). */
export interface FrameHeader {
  version: number;
  type: FrameTypeCode;
  /** Session-wide frame sequence number, u32. */
  seq: number;
  /** Sender monotonic clock at departure, µs. */
  send_time_us: number;
  /** Payload length, bytes. */
  payload_len: number;
}

/** A grant (PROTOCOL.md "Grants"). All byte counts in bytes, times in µs. */
export interface Grant {
  grant_seq: number;
  receiver_time_us: number;
  cum_received_bytes: number;
  window_bytes: number;
  echo_send_time_us: number;
  echo_hold_us: number;
}

const U32 = 2 ** 32;

function readU64(view: DataView, offset: number): number {
  // Two u32 halves: exact up to 2^53, which covers µs clocks for 285 years and byte counts to 8 PiB.
  return view.getUint32(offset) * U32 + view.getUint32(offset + 4);
}

function writeU64(view: DataView, offset: number, value: number, field: string): void {
  if (!Number.isInteger(value) || value < 0 || value > Number.MAX_SAFE_INTEGER) {
    throw new ProtocolError("range", `${field} must be an integer in [0, 2^53) (got ${value})`);
  }
  view.setUint32(offset, Math.floor(value / U32));
  view.setUint32(offset + 4, value % U32);
}

/**
 * Decode a 20-byte frame header at `offset` of `bytes`.
 * @throws ProtocolError (truncated, version, type, reserved, length)
 */
export function decodeFrameHeader(bytes: Uint8Array, offset = 0): FrameHeader {
  if (bytes.length - offset < FRAME_HEADER_BYTES) throw new ProtocolError("truncated", `frame header needs ${FRAME_HEADER_BYTES} bytes, have ${bytes.length - offset}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, FRAME_HEADER_BYTES);
  const version = view.getUint8(0);
  if (version !== PROTOCOL_VERSION) throw new ProtocolError("version", `frame version ${version}, expected ${PROTOCOL_VERSION}`);
  const type = view.getUint8(1);
  if (type < FrameType.HEAD || type > FrameType.ERROR) throw new ProtocolError("type", `unknown frame type ${type}`);
  if (view.getUint16(2) !== 0) throw new ProtocolError("reserved", "reserved bits set");
  const payload_len = view.getUint32(16);
  if (payload_len > MAX_FRAME_PAYLOAD_BYTES) throw new ProtocolError("length", `payload_len ${payload_len} > ${MAX_FRAME_PAYLOAD_BYTES}`);
  return { version, type: type as FrameTypeCode, seq: view.getUint32(4), send_time_us: readU64(view, 8), payload_len };
}

/** Encode a frame (header + payload); used by tests and the in-memory transport. */
export function encodeFrame(h: Omit<FrameHeader, "version" | "payload_len">, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  if (payload.length > MAX_FRAME_PAYLOAD_BYTES) throw new ProtocolError("length", `payload ${payload.length} > ${MAX_FRAME_PAYLOAD_BYTES}`);
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, PROTOCOL_VERSION);
  view.setUint8(1, h.type);
  view.setUint32(4, h.seq >>> 0);
  writeU64(view, 8, h.send_time_us, "send_time_us");
  view.setUint32(16, payload.length);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** A complete frame out of the stream parser. */
export interface Frame {
  header: FrameHeader;
  payload: Uint8Array;
  /** Header + payload, bytes. */
  size_bytes: number;
}

/**
 * Incremental frame parser for one response stream: push chunks as they arrive,
 * get complete frames back. After a ProtocolError the parser is poisoned (the
 * stream is unusable); other streams have their own parser and are unaffected.
 */
export class FrameParser {
  private buf: Uint8Array = new Uint8Array(0);
  private error: ProtocolError | null = null;

  /**
   * @returns the frames completed by this chunk, in order
   * @throws ProtocolError on a malformed header (and on every later push)
   */
  push(chunk: Uint8Array): Frame[] {
    if (this.error) throw this.error;
    if (this.buf.length === 0) this.buf = chunk;
    else {
      const merged = new Uint8Array(this.buf.length + chunk.length);
      merged.set(this.buf);
      merged.set(chunk, this.buf.length);
      this.buf = merged;
    }
    const frames: Frame[] = [];
    let off = 0;
    try {
      while (this.buf.length - off >= FRAME_HEADER_BYTES) {
        const header = decodeFrameHeader(this.buf, off);
        const size_bytes = FRAME_HEADER_BYTES + header.payload_len;
        if (this.buf.length - off < size_bytes) break;
        frames.push({ header, payload: this.buf.subarray(off + FRAME_HEADER_BYTES, off + size_bytes), size_bytes });
        off += size_bytes;
      }
    } catch (e) {
      if (e instanceof ProtocolError) this.error = e;
      throw e;
    }
    this.buf = off === this.buf.length ? new Uint8Array(0) : this.buf.slice(off);
    return frames;
  }

  /** Bytes held waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.buf.length;
  }

  /**
   * Call at end of stream.
   * @throws ProtocolError("truncated") if a partial frame remains
   */
  finish(): void {
    if (this.buf.length > 0) throw new ProtocolError("truncated", `stream ended inside a frame (${this.buf.length} bytes pending)`);
  }
}

/**
 * Encode a grant datagram (44 bytes, PROTOCOL.md "Grants").
 * @throws ProtocolError("range") on a non-integer, negative or > 2^53 field
 */
export function encodeGrant(g: Grant): Uint8Array {
  const out = new Uint8Array(GRANT_BYTES);
  const view = new DataView(out.buffer);
  view.setUint8(0, PROTOCOL_VERSION);
  view.setUint8(1, GRANT_TYPE);
  view.setUint32(4, g.grant_seq >>> 0);
  writeU64(view, 8, g.receiver_time_us, "receiver_time_us");
  writeU64(view, 16, g.cum_received_bytes, "cum_received_bytes");
  writeU64(view, 24, g.window_bytes, "window_bytes");
  writeU64(view, 32, g.echo_send_time_us, "echo_send_time_us");
  if (!Number.isInteger(g.echo_hold_us) || g.echo_hold_us < 0 || g.echo_hold_us >= U32) throw new ProtocolError("range", `echo_hold_us must be a u32 (got ${g.echo_hold_us})`);
  view.setUint32(40, g.echo_hold_us);
  return out;
}

/**
 * Decode a grant datagram.
 * @throws ProtocolError (length, version, type, reserved)
 */
export function decodeGrant(bytes: Uint8Array): Grant {
  if (bytes.length !== GRANT_BYTES) throw new ProtocolError("length", `grant must be ${GRANT_BYTES} bytes (got ${bytes.length})`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  if (view.getUint8(0) !== PROTOCOL_VERSION) throw new ProtocolError("version", `grant version ${view.getUint8(0)}`);
  if (view.getUint8(1) !== GRANT_TYPE) throw new ProtocolError("type", `grant type ${view.getUint8(1)}`);
  if (view.getUint16(2) !== 0) throw new ProtocolError("reserved", "grant flags set");
  return {
    grant_seq: view.getUint32(4),
    receiver_time_us: readU64(view, 8),
    cum_received_bytes: readU64(view, 16),
    window_bytes: readU64(view, 24),
    echo_send_time_us: readU64(view, 32),
    echo_hold_us: view.getUint32(40),
  };
}
