// Shared helpers for the workload tests (no tests here).
import {
  createTrainer,
  stateHash,
  type ParamSpec,
  type Template,
  type Trainer,
  type TrainingState,
} from "../../workloads/index.ts";

export const SEED_A = "0x" + "a1".repeat(32);
export const SEED_B = "0x" + "b2".repeat(32);

/** Trains steps state.step+1 .. toStep; returns the final state and the hash after every step. */
export async function trainTo(
  tr: Trainer,
  state: TrainingState,
  seed: string,
  toStep: number,
  each?: (s: TrainingState) => Promise<void>,
): Promise<{ state: TrainingState; hashes: string[]; loss: number }> {
  const hashes: string[] = [];
  let loss = NaN;
  while (state.step < toStep) {
    ({ state, loss } = await tr.trainStep(state, seed, state.step + 1));
    hashes.push(stateHash(state));
    if (each) await each(state);
  }
  return { state, hashes, loss };
}

/** A seeded stream in [−1, 1) (a linear congruential generator): tiny fixtures that replay exactly. */
export function lcg(seed: number): () => number {
  let x = seed;
  return () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
}

/** Every parameter of `specs` filled from `next`, scaled by 0.5 (finite-difference fixtures). */
export const randomParams = (specs: ParamSpec[], next: () => number) =>
  specs.map((p) => ({
    name: p.name,
    dims: p.dims,
    data: Float32Array.from({ length: p.dims.reduce((a, b) => a * b, 1) }, () => next() * 0.5),
  }));

/** Cosine similarity of two gradients. */
export function cosine(a: Float64Array, b: Float64Array): number {
  let [dot, aa, bb] = [0, 0, 0];
  for (let k = 0; k < a.length; k++) [dot, aa, bb] = [dot + a[k] * b[k], aa + a[k] ** 2, bb + b[k] ** 2];
  return dot / Math.sqrt(aa * bb);
}

/** The state hashes of `steps` steps from SEED_A, once per micro-batch size (atoms per call). */
export async function microBatchHashes(t: Template, sizes: number[], steps: number): Promise<string[][]> {
  const hashes: string[][] = [];
  for (const m of sizes) {
    const tr = await createTrainer(t, { microBatchAtoms: m });
    hashes.push((await trainTo(tr, tr.initialState(SEED_A), SEED_A, steps)).hashes);
    await tr.close();
  }
  return hashes;
}
