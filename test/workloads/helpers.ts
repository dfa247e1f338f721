// Shared helpers for the workload tests (no tests here).
import { stateHash, type Trainer, type TrainingState } from "../../workloads/index.ts";

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
