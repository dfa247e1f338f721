// Deterministic data order. Logical step s (s >= 1) trains on the training-split rows
//   perm_e[(s-1) mod P * B ... + B),   e = floor((s-1) / P),   P = floor(trainCount / B)
// where perm_e = Fisher–Yates permutation of 0..trainCount-1 driven by the SHA-256 counter stream
// ("gpuchain/epoch-perm", job seed, e). Each epoch visits every sample at most once; the
// trainCount mod B leftover rows of a permutation are skipped. Only (template, seed, step) is needed.
import { permutation, seedBytes, u32Stream } from "./prng.ts";
import type { Template } from "./types.ts";

const DOMAIN = "gpuchain/epoch-perm";
const permCache = new Map<string, Uint32Array>();
const PERM_CACHE_MAX = 4;

function epochPermutation(seed: string, epoch: number, n: number): Uint32Array {
  const key = `${seed.toLowerCase()}:${epoch}:${n}`;
  let p = permCache.get(key);
  if (!p) {
    p = permutation(u32Stream(DOMAIN, seed, epoch), n);
    if (permCache.size >= PERM_CACHE_MAX) permCache.delete(permCache.keys().next().value as string);
    permCache.set(key, p);
  }
  return p;
}

/** Training-row indices of logical step `step` (1-based) for the job `seed` (bytes32 hex). */
export function batchIndices(t: Template, seed: string, step: number): Uint32Array {
  seedBytes(seed); // validates the format
  if (!Number.isSafeInteger(step) || step < 1) throw new RangeError(`step must be an integer >= 1, got ${step}`);
  const B = t.descriptor.globalBatch;
  const n = t.descriptor.data.trainCount;
  const perEpoch = Math.floor(n / B);
  const epoch = Math.floor((step - 1) / perEpoch);
  const offset = ((step - 1) % perEpoch) * B;
  return epochPermutation(seed, epoch, n).slice(offset, offset + B);
}
