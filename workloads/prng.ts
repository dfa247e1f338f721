// Deterministic randomness for data order and initial weights: SHA-256 in counter mode.
//   block_k = sha256( utf8(domain) || 0x00 || seed[32] || u64be(a) || u64be(k) ),  k = 0, 1, 2, ...
// Each block gives eight big-endian u32 words, consumed in order. Any verifier in any language can
// rebuild the same stream from (domain, seed, a).
import { createHash } from "node:crypto";

export const SEED_RE = /^0x[0-9a-fA-F]{64}$/;

export function seedBytes(seed: string): Buffer {
  if (!SEED_RE.test(seed)) throw new TypeError(`seed must be 0x-prefixed bytes32 hex, got ${seed}`);
  return Buffer.from(seed.slice(2), "hex");
}

export type U32Source = () => number;

export function u32Stream(domain: string, seed: string, a: number): U32Source {
  const prefix = Buffer.concat([Buffer.from(domain, "utf8"), Buffer.from([0]), seedBytes(seed), u64be(a)]);
  let k = 0;
  let block: Buffer = Buffer.alloc(0);
  let pos = 32;
  return () => {
    if (pos === 32) {
      block = createHash("sha256").update(prefix).update(u64be(k++)).digest();
      pos = 0;
    }
    const v = block.readUInt32BE(pos);
    pos += 4;
    return v;
  };
}

export function u64be(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`expected a non-negative safe integer, got ${n}`);
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Uniform integer in [0, n) by rejection sampling (no modulo bias). */
export function uniformInt(next: U32Source, n: number): number {
  const limit = Math.floor(0x1_0000_0000 / n) * n;
  for (;;) {
    const v = next();
    if (v < limit) return v % n;
  }
}

/** Uniform in [-1, 1) with 24 random bits, exactly representable in float32. */
export function uniformSymmetric(next: U32Source): number {
  return (next() >>> 8) / 0x80_0000 - 1;
}

/** Fisher–Yates shuffle of 0..n-1 driven by `next` (i from n-1 down to 1, j = uniformInt(i+1)). */
export function permutation(next: U32Source, n: number): Uint32Array {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = uniformInt(next, i + 1);
    const t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}
