// Bounds-checked little-endian byte writer/reader for the blob formats.
import { createHash } from "node:crypto";
import { endianness } from "node:os";
import { CheckpointFormatError } from "./errors.ts";

const LE = endianness() === "LE";

export class ByteWriter {
  private parts: Buffer[] = [];

  bytes(b: Uint8Array): this {
    this.parts.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    return this;
  }
  u8(n: number): this {
    return this.fixed(1, (b) => b.writeUInt8(n));
  }
  u16(n: number): this {
    return this.fixed(2, (b) => b.writeUInt16LE(n));
  }
  u32(n: number): this {
    return this.fixed(4, (b) => b.writeUInt32LE(n));
  }
  u64(n: number): this {
    return this.fixed(8, (b) => b.writeBigUInt64LE(BigInt(n)));
  }
  /** `size` bytes, filled in by `write` (Buffer's writers check the value's range). */
  private fixed(size: number, write: (b: Buffer) => unknown): this {
    const b = Buffer.alloc(size);
    write(b);
    return this.bytes(b);
  }
  hex32(h: string): this {
    return this.bytes(hexToBytes32(h));
  }

  f32s(a: Float32Array): this {
    if (LE) return this.bytes(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    const b = Buffer.alloc(a.length * 4);
    a.forEach((v, i) => b.writeFloatLE(v, i * 4));
    return this.bytes(b);
  }

  finish(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.parts));
  }

  /** sha256 of what `finish` would return, 0x-hex, without joining the parts into one buffer first. */
  sha256(): string {
    const h = createHash("sha256");
    for (const p of this.parts) h.update(p);
    return "0x" + h.digest("hex");
  }
}

export class ByteReader {
  private buf: Buffer;
  pos = 0;

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(n: number): number {
    if (this.pos + n > this.buf.length) {
      throw new CheckpointFormatError("TRUNCATED", `needs ${this.pos + n} bytes, has ${this.buf.length}`);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  bytes(n: number): Buffer {
    const at = this.need(n);
    return this.buf.subarray(at, at + n);
  }
  u8(): number {
    return this.buf.readUInt8(this.need(1));
  }
  u16(): number {
    return this.buf.readUInt16LE(this.need(2));
  }
  u32(): number {
    return this.buf.readUInt32LE(this.need(4));
  }
  u64(): number {
    const v = this.buf.readBigUInt64LE(this.need(8));
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new CheckpointFormatError("INCONSISTENT", "u64 out of range");
    return Number(v);
  }
  hex32(): string {
    return "0x" + this.bytes(32).toString("hex");
  }

  f32s(n: number): Float32Array {
    const src = this.bytes(n * 4);
    const out = new Float32Array(n);
    if (LE) new Uint8Array(out.buffer).set(src);
    else for (let i = 0; i < n; i++) out[i] = src.readFloatLE(i * 4);
    return out;
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  end(): void {
    if (this.remaining !== 0)
      throw new CheckpointFormatError("TRAILING_BYTES", `${this.remaining} unexpected bytes at end`);
  }
}

export function hexToBytes32(h: string): Buffer {
  if (!/^0x[0-9a-fA-F]{64}$/.test(h)) throw new TypeError(`expected 0x-prefixed bytes32 hex, got ${h}`);
  return Buffer.from(h.slice(2), "hex");
}
