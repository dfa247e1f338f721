// Training state: initial values, canonical byte encoding, hash and number checks.
// State blob layout (little-endian), also the preimage of stateHash:
//   "GPCSTATE" | u16 version=1 | u64 step | u16 nWeights | tensor* | u16 nMomentum | tensor*
//   tensor = u8 nameLen | name (utf8) | u8 rank | u32 dims[rank] | f32 data[prod(dims)]
import { ByteReader, ByteWriter } from "./bytes.ts";
import { CheckpointFormatError, NonFiniteError } from "./errors.ts";
import { u32Stream, uniformSymmetric } from "./prng.ts";
import type { NamedTensor, Template, TrainingState } from "./types.ts";

const STATE_MAGIC = Buffer.from("GPCSTATE", "ascii");
export const STATE_VERSION = 1;

const size = (dims: number[]) => dims.reduce((a, b) => a * b, 1);

/**
 * Step-0 state for a job seed: weight matrices He-uniform, U(-1,1)*sqrt(6/fanIn)*initScale with the
 * counter stream ("gpuchain/init/<param>", seed, 0); biases and momentum zero.
 */
export function initialState(t: Template, seed: string): TrainingState {
  const weights = t.params.map((p): NamedTensor => {
    const data = new Float32Array(size(p.dims));
    if (p.dims.length === 2) {
      const rng = u32Stream(`gpuchain/init/${p.name}`, seed, 0);
      const scale = Math.sqrt(6 / p.dims[0]) * (p.initScale ?? 1);
      for (let i = 0; i < data.length; i++) data[i] = uniformSymmetric(rng) * scale;
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

function readTensors(r: ByteReader): NamedTensor[] {
  const n = r.u16();
  const out: NamedTensor[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.bytes(r.u8()).toString("utf8");
    const rank = r.u8();
    const dims = Array.from({ length: rank }, () => r.u32());
    const count = size(dims);
    if (count * 4 > r.remaining) throw new CheckpointFormatError("TRUNCATED", `tensor ${name} data cut short`);
    out.push({ name, dims, data: r.f32s(count) });
  }
  return out;
}

export function writeState(w: ByteWriter, s: TrainingState): void {
  w.bytes(STATE_MAGIC).u16(STATE_VERSION).u64(s.step);
  writeTensors(w, s.weights);
  writeTensors(w, s.momentum);
}

export function readState(r: ByteReader): TrainingState {
  if (!r.bytes(8).equals(STATE_MAGIC)) throw new CheckpointFormatError("BAD_MAGIC", "not a state blob");
  const version = r.u16();
  if (version !== STATE_VERSION) throw new CheckpointFormatError("BAD_VERSION", `state version ${version}`);
  const step = r.u64();
  return { step, weights: readTensors(r), momentum: readTensors(r) };
}

export function encodeState(s: TrainingState): Uint8Array {
  const w = new ByteWriter();
  writeState(w, s);
  return w.finish();
}

/** Decodes a state blob; rejects bad format and NaN/Inf. */
export function decodeState(bytes: Uint8Array): TrainingState {
  const r = new ByteReader(bytes);
  const s = readState(r);
  r.end();
  checkNumbers(s);
  return s;
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

/** Throws NonFiniteError on the first NaN or ±Infinity in weights or momentum. */
export function checkNumbers(s: TrainingState): void {
  for (const group of [s.weights, s.momentum]) {
    for (const t of group) {
      const d = t.data;
      for (let i = 0; i < d.length; i++) {
        if (!Number.isFinite(d[i])) throw new NonFiniteError(t.name, i, d[i]);
      }
    }
  }
}

/** Checks that a state matches the template's parameter names and shapes. */
export function checkStateShape(t: Template, s: TrainingState): void {
  for (const group of [s.weights, s.momentum]) {
    const ok =
      group.length === t.params.length &&
      group.every((x, i) => x.name === t.params[i].name && x.dims.join() === t.params[i].dims.join());
    if (!ok) throw new CheckpointFormatError("INCONSISTENT", "state tensors do not match the template parameters");
  }
}
