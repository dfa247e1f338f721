// Training state: initial values, canonical byte encoding, hash and number checks.
// State blob layout (little-endian), also the preimage of stateHash:
//   "GPCSTATE" | u16 version=1 | u64 step | u16 nWeights | tensor* | u16 nMomentum | tensor*
//   tensor = u8 nameLen | name (utf8) | u8 rank | u32 dims[rank] | f32 data[prod(dims)]
import { hash } from "node:crypto";
import { endianness } from "node:os";
import { ByteReader, ByteWriter } from "./bytes.ts";
import { CheckpointFormatError, NonFiniteError } from "./errors.ts";
import { seedBytes, u64be, uniformSymmetric } from "./prng.ts";
import type { NamedTensor, Template, TrainingState } from "./types.ts";

const STATE_MAGIC = Buffer.from("GPCSTATE", "ascii");
export const STATE_VERSION = 1;

const size = (dims: number[]) => dims.reduce((a, b) => a * b, 1);
const LE = endianness() === "LE";

/**
 * The first `n` words of u32Stream(domain, seed, a) (prng.ts: sha256 in counter mode, eight big-endian words a
 * block), computed a block at a time with one-shot hashes: about 5× faster than drawing them one by one, which a
 * verifier pays for at every job's first checkpoint (the accepted state is the initial one).
 */
function u32Words(domain: string, seed: string, a: number, n: number): Uint32Array {
  const prefix = Buffer.concat([Buffer.from(domain, "utf8"), Buffer.from([0]), seedBytes(seed), u64be(a)]);
  const input = Buffer.concat([prefix, Buffer.alloc(8)]);
  const out = new Uint32Array(Math.ceil(n / 8) * 8);
  for (let k = 0; k * 8 < n; k++) {
    input.writeBigUInt64BE(BigInt(k), prefix.length);
    const block = hash("sha256", input, "buffer");
    for (let j = 0; j < 8; j++) out[k * 8 + j] = block.readUInt32BE(j * 4);
  }
  return out;
}

/**
 * Step-0 state for a job seed: weight matrices He-uniform, U(-1,1)*sqrt(6/fanIn)*initScale with the
 * counter stream ("gpuchain/init/<param>", seed, 0); biases and momentum zero.
 */
export function initialState(t: Template, seed: string): TrainingState {
  const weights = t.params.map((p): NamedTensor => {
    const data = new Float32Array(size(p.dims));
    if (p.dims.length === 2) {
      const words = u32Words(`gpuchain/init/${p.name}`, seed, 0, data.length);
      const scale = Math.sqrt(6 / p.dims[0]) * (p.initScale ?? 1);
      let i = 0;
      for (const rng = () => words[i]; i < data.length; i++) data[i] = uniformSymmetric(rng) * scale;
    }
    return { name: p.name, dims: p.dims.slice(), data };
  });
  const momentum = t.params.map((p) => ({ name: p.name, dims: p.dims.slice(), data: new Float32Array(size(p.dims)) }));
  return { step: 0, weights, momentum };
}

function writeTensors(w: ByteWriter, ts: NamedTensor[]): void {
  w.u16(ts.length);
  for (const t of ts) {
    const name = Buffer.from(t.name, "utf8");
    w.u8(name.length).bytes(name).u8(t.dims.length);
    for (const d of t.dims) w.u32(d);
    if (t.data.length !== size(t.dims)) throw new RangeError(`tensor ${t.name}: data/dims mismatch`);
    w.f32s(t.data);
  }
}

/** Where a tensor's data lies in a blob, found without copying it. */
export type TensorLayout = { name: string; nameBytes: Buffer; dims: number[]; data: Buffer };
/** A state blob's structure: its step and each tensor's name, dims and raw data bytes (no copies made). */
export type StateLayout = { step: number; weights: TensorLayout[]; momentum: TensorLayout[] };

function readTensorLayouts(r: ByteReader): TensorLayout[] {
  const n = r.u16();
  const out: TensorLayout[] = [];
  for (let i = 0; i < n; i++) {
    const nameBytes = r.bytes(r.u8());
    const name = nameBytes.toString("utf8");
    const rank = r.u8();
    const dims = Array.from({ length: rank }, () => r.u32());
    const count = size(dims);
    if (count * 4 > r.remaining) throw new CheckpointFormatError("TRUNCATED", `tensor ${name} data cut short`);
    out.push({ name, nameBytes, dims, data: r.bytes(count * 4) });
  }
  return out;
}

/**
 * Reads a state's structure as readState does (the same checks, the same errors) without copying its numbers:
 * each tensor's data stays a view of the blob. What a verifier needs to judge a boundary state it does not replay.
 */
export function readStateLayout(r: ByteReader): StateLayout {
  if (!r.bytes(8).equals(STATE_MAGIC)) throw new CheckpointFormatError("BAD_MAGIC", "not a state blob");
  const version = r.u16();
  if (version !== STATE_VERSION) throw new CheckpointFormatError("BAD_VERSION", `state version ${version}`);
  const step = r.u64();
  return { step, weights: readTensorLayouts(r), momentum: readTensorLayouts(r) };
}

/** The float32 values of a tensor's little-endian data bytes (a copy: the blob may be the store's own buffer). */
function floatsOf(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength / 4);
  if (LE) new Uint8Array(out.buffer).set(b);
  else for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(i * 4);
  return out;
}

const materialize = (ts: TensorLayout[]): NamedTensor[] =>
  ts.map((t) => ({ name: t.name, dims: t.dims, data: floatsOf(t.data) }));

/** The state a layout describes, its numbers copied out of the blob (no number checks). */
export const stateOfLayout = (l: StateLayout): TrainingState => ({
  step: l.step,
  weights: materialize(l.weights),
  momentum: materialize(l.momentum),
});

export function writeState(w: ByteWriter, s: TrainingState): void {
  w.bytes(STATE_MAGIC).u16(STATE_VERSION).u64(s.step);
  writeTensors(w, s.weights);
  writeTensors(w, s.momentum);
}

export function readState(r: ByteReader): TrainingState {
  return stateOfLayout(readStateLayout(r));
}

export function encodeState(s: TrainingState): Uint8Array {
  const w = new ByteWriter();
  writeState(w, s);
  return w.finish();
}

/** Decodes a state blob; rejects bad format and NaN/Inf. */
export function decodeState(bytes: Uint8Array): TrainingState {
  const r = new ByteReader(bytes);
  const l = readStateLayout(r);
  r.end();
  checkLayoutNumbers(l);
  return stateOfLayout(l);
}

/**
 * sha256 of the state's canonical encoding, 0x-hex. Equals blobHash(encodeState(s)), without building the blob
 * (the tensors are hashed in place: an agent hashes every state it trains).
 */
export function stateHash(s: TrainingState): string {
  const w = new ByteWriter();
  writeState(w, s);
  return w.sha256();
}

/** Index of the first float32 whose bits `bits` holds with the exponent all ones (NaN or ±Infinity), or −1. */
function firstNonFiniteJs(bits: Int32Array): number {
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0x7f800000) === 0x7f800000) return i;
  return -1;
}

/**
 * A 16-byte-at-a-time finiteness scan in WebAssembly SIMD: scan(from, end) is 1 when some float32 in memory
 * [from, end) has its exponent all ones, else 0 (end − from a multiple of 16). About 10× the JS loop on a state of
 * 100,000 numbers, copy into its memory included: a verifier checks every boundary state of every checkpoint.
 * The module, by hand: (func (param $p i32) (param $end i32) (result i32) (loop (if (i32.ge_u $p $end) (return 0))
 * (if (v128.any_true (i32x4.eq (v128.and (v128.load $p) MASK) MASK)) (return 1)) (set $p (+ $p 16)) (br 0)) 0).
 */
const EXP = [0x00, 0x00, 0x80, 0x7f];
const MASK = [0xfd, 0x0c, ...EXP, ...EXP, ...EXP, ...EXP];
// prettier-ignore
const SCAN_BODY = [
  0x00, 0x03, 0x40,
  0x20, 0x00, 0x20, 0x01, 0x4f, 0x04, 0x40, 0x41, 0x00, 0x0f, 0x0b,
  0x20, 0x00, 0xfd, 0x00, 0x00, 0x00, ...MASK, 0xfd, 0x4e, ...MASK, 0xfd, 0x37, 0xfd, 0x53,
  0x04, 0x40, 0x41, 0x01, 0x0f, 0x0b,
  0x20, 0x00, 0x41, 0x10, 0x6a, 0x21, 0x00, 0x0c, 0x00, 0x0b,
  0x41, 0x00, 0x0b,
];
const section = (id: number, c: number[]) => [id, c.length, ...c];
// prettier-ignore
const SCAN_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  ...section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]),
  ...section(3, [0x01, 0x00]),
  ...section(5, [0x01, 0x00, 0x01]),
  ...section(7, [0x02, 0x04, 0x73, 0x63, 0x61, 0x6e, 0x00, 0x00, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00]),
  ...section(10, [0x01, SCAN_BODY.length, ...SCAN_BODY]),
]);
type WasmMemory = { buffer: ArrayBuffer; grow(pages: number): number };
type Scanner = { scan: (from: number, end: number) => number; mem: WasmMemory };
/** The parts of the WebAssembly global used here (this project's TypeScript libraries do not declare it). */
type Wasm = {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
};
const wasm = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;
let scanner: Scanner | null | undefined;
function simdScanner(): Scanner | null {
  if (scanner === undefined) {
    try {
      scanner = wasm?.validate(SCAN_MODULE)
        ? (new wasm.Instance(new wasm.Module(SCAN_MODULE)).exports as Scanner)
        : null;
    } catch {
      scanner = null; // no WebAssembly SIMD here: the JS loop decides alone
    }
  }
  return scanner;
}

/** Whether any float32 in `b` (little-endian bytes, a whole number of floats) is NaN or ±Infinity. */
function anyNonFinite(b: Uint8Array): boolean {
  const w = simdScanner();
  const n = b.byteLength - (b.byteLength % 16);
  if (!w || !LE) return firstNonFiniteJs(bitsOf(b)) >= 0;
  const pages = Math.ceil(n / 65536);
  const have = w.mem.buffer.byteLength / 65536;
  if (pages > have) w.mem.grow(pages - have);
  new Uint8Array(w.mem.buffer, 0, n).set(b.subarray(0, n));
  if (w.scan(0, n) === 1) return true;
  return n < b.byteLength && firstNonFiniteJs(bitsOf(b.subarray(n))) >= 0;
}

/** Index of the first NaN or ±Infinity among the float32 values of `b`, or −1. */
function firstNonFinite(b: Uint8Array): number {
  return anyNonFinite(b) ? firstNonFiniteJs(bitsOf(b)) : -1;
}

/** The bits of `b`'s float32 values as Int32, copied to a scratch buffer when `b` does not lie at a multiple of 4. */
let scratch = new Int32Array(0);
function bitsOf(b: Uint8Array): Int32Array {
  const n = b.byteLength >>> 2;
  if (LE && b.byteOffset % 4 === 0) return new Int32Array(b.buffer, b.byteOffset, n);
  if (scratch.length < n) scratch = new Int32Array(n);
  const out = scratch.subarray(0, n);
  if (LE) new Uint8Array(out.buffer, 0, n * 4).set(b.subarray(0, n * 4));
  else {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    for (let i = 0; i < n; i++) out[i] = v.getInt32(i * 4, true);
  }
  return out;
}

/** Throws NonFiniteError on the first NaN or ±Infinity in weights or momentum. */
export function checkNumbers(s: TrainingState): void {
  for (const group of [s.weights, s.momentum]) {
    for (const t of group) {
      const d = t.data;
      const bits = new Int32Array(d.buffer, d.byteOffset, d.length);
      // The SIMD scan reads little-endian bytes; on a big-endian host the JS loop reads the native bits.
      const i = LE ? firstNonFinite(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)) : firstNonFiniteJs(bits);
      if (i >= 0) throw new NonFiniteError(t.name, i, d[i]);
    }
  }
}

/** checkNumbers on a layout's raw data bytes, without decoding them (the same error, the same first value). */
export function checkLayoutNumbers(l: StateLayout): void {
  for (const group of [l.weights, l.momentum]) {
    for (const t of group) {
      const i = firstNonFinite(t.data);
      if (i >= 0) throw new NonFiniteError(t.name, i, t.data.readFloatLE(i * 4));
    }
  }
}

/** Checks that a state (or a state blob's layout) matches the template's parameter names and shapes. */
export function checkStateShape(t: Template, s: Pick<TrainingState, "weights" | "momentum"> | StateLayout): void {
  for (const group of [s.weights, s.momentum] as { name: string; dims: number[] }[][]) {
    const ok =
      group.length === t.params.length &&
      group.every((x, i) => x.name === t.params[i].name && x.dims.join() === t.params[i].dims.join());
    if (!ok) throw new CheckpointFormatError("INCONSISTENT", "state tensors do not match the template parameters");
  }
}

/**
 * Bytes of the canonical encoding of every state of `t` (what encodeState(initialState(t, seed)).byteLength gives),
 * from the parameters alone.
 */
export function stateBlobBytes(t: Template): number {
  const tensors = t.params.reduce(
    (a, p) => a + 1 + Buffer.byteLength(p.name, "utf8") + 1 + 4 * p.dims.length + 4 * size(p.dims),
    0,
  );
  return 8 + 2 + 8 + 2 * (2 + tensors);
}
