// Verifier helpers: which steps to replay, how likely sampling is to catch bad steps, replaying
// one committed step, and checking that a checkpoint continues the previous accepted one.
import { committedAt, decodeCheckpoint, workSeedOf, ZERO_HASH, type Checkpoint } from "./checkpoint.ts";
import { segmentSpans } from "./segments.ts";
import { uniformInt, u32Stream } from "./prng.ts";
import { stateHash } from "./state.ts";
import { getState, type CheckpointStore } from "./store.ts";
import { replayStep, type Trainer } from "./trainer.ts";
import type { TrainingState } from "./types.ts";

/**
 * k distinct steps of (startStep, endStep], chosen by the counter stream
 * ("gpuchain/sample-steps", salt, startStep). The salt must be unknown to the provider when it
 * commits (e.g. the verifier's own randomness), or the provider could fake only unsampled steps.
 */
export function sampleSteps(salt: string, startStep: number, endStep: number, k: number): number[] {
  const n = endStep - startStep;
  const pool = Array.from({ length: n }, (_, i) => startStep + 1 + i);
  const rng = u32Stream("gpuchain/sample-steps", salt, startStep);
  const take = Math.min(k, n);
  for (let i = 0; i < take; i++) {
    const j = i + uniformInt(rng, n - i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, take).sort((a, b) => a - b);
}

/** P(at least one of `bad` wrong steps among n is in a uniform sample of k) = 1 - C(n-bad,k)/C(n,k). */
export function detectionProbability(n: number, k: number, bad: number): number {
  if (bad <= 0) return 0;
  if (k + bad > n) return 1;
  let miss = 1;
  for (let i = 0; i < k; i++) miss *= (n - bad - i) / (n - i);
  return 1 - miss;
}

export type StepCheck = { step: number; ok: boolean; expected: string; actual: string };

/** The committed state after `step` (a stored boundary, or the segment's start from its previous checkpoint). */
export async function committedState(
  tr: Trainer,
  store: CheckpointStore,
  c: Checkpoint,
  step: number,
): Promise<TrainingState> {
  if (step > c.startStep) return getState(store, committedAt(c, step));
  if (c.prevCheckpointHash === ZERO_HASH) return tr.initialState(c.seed);
  return decodeCheckpoint(await store.get(c.prevCheckpointHash)).state;
}

/**
 * Replays the segment holding `step` from its stored start up to `step`, comparing every step on the way with
 * its committed hash; the check is for the first step that differs (or `step` when all match).
 */
export async function replayCommittedStep(
  tr: Trainer,
  store: CheckpointStore,
  c: Checkpoint,
  step: number,
): Promise<StepCheck> {
  if (step <= c.startStep || step > c.step) throw new RangeError(`step ${step} outside (${c.startStep}, ${c.step}]`);
  const span = segmentSpans(c.startStep, c.step, c.segmentSteps).find((s) => step <= s.to)!;
  let state = await committedState(tr, store, c, span.from);
  const startHash = committedAt(c, span.from);
  if (state.step !== span.from || stateHash(state) !== startHash) {
    return { step, ok: false, expected: startHash, actual: `state ${stateHash(state)} at step ${state.step}` };
  }
  for (let s = span.from + 1; s <= step; s++) {
    state = await replayStep(tr, state, workSeedOf(c), s);
    const actual = stateHash(state);
    const expected = committedAt(c, s);
    if (actual !== expected || s === step) return { step: s, ok: actual === expected, expected, actual };
  }
  throw new Error("unreachable");
}

/**
 * Problems (empty = none) with `cur` as the successor of the accepted checkpoint `prev` whose
 * blob hash is `prevHash` (pass prev = undefined for a job's first checkpoint).
 */
export function chainProblems(cur: Checkpoint, prev?: Checkpoint, prevHash?: string): string[] {
  const out: string[] = [];
  if (!prev) {
    if (cur.prevCheckpointHash !== ZERO_HASH) out.push("first checkpoint must have a zero previous hash");
    if (cur.startStep !== 0) out.push("first checkpoint must start at step 0");
    return out;
  }
  if (cur.prevCheckpointHash !== prevHash) out.push("does not link to the previous accepted checkpoint");
  if (cur.templateId !== prev.templateId) out.push("template changed");
  if (cur.seed !== prev.seed) out.push("seed changed");
  if (cur.startStep !== prev.step) out.push(`starts at step ${cur.startStep}, previous ended at ${prev.step}`);
  if (cur.startStateHash !== stateHash(prev.state))
    out.push("start state differs from the previous checkpoint's state");
  if (cur.step <= prev.step) out.push("makes no progress (old or replayed checkpoint)");
  return out;
}
