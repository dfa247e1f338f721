// Segment commitments: a checkpoint commits the hash of every step's state (stepHashes) but stores full states
// only at segment boundaries. Pure arithmetic shared by the provider (what to upload), the verifiers (what to
// fetch and replay) and the detection figures.
//
// A checkpoint over steps (start, end] with segment length m stores, besides its embedded final state:
//   - the state after every step start + j·m strictly inside (start, end − 1), and
//   - the state after step end − 1 (so the last step, the one that is paid for, replays from a stored state).
// The start state is not stored again: it is the previous checkpoint's embedded state (or the seed's initial one).
// Consecutive stored steps bound the segments; a verifier replays whole segments from their stored start and
// compares every step's hash, always including the final one-step segment (end − 1, end].
import { uniformInt, u32Stream } from "./prng.ts";

export type Span = { from: number; to: number };

/** The template default: about a tenth of the interval, so storage falls from n states to about n/m + 1. */
export function defaultSegmentSteps(n: number): number {
  return Math.max(1, Math.ceil(n / 10));
}

/** The longest segment a verifier accepts for an n-step checkpoint (longer would make checks cost more). */
export const maxSegmentSteps = defaultSegmentSteps;

/** Steps whose state is stored as its own blob, ascending. */
export function storedSteps(start: number, end: number, m: number): number[] {
  if (!Number.isSafeInteger(m) || m < 1) throw new RangeError(`segment length must be a positive integer, got ${m}`);
  const out: number[] = [];
  for (let s = start + m; s < end - 1; s += m) out.push(s);
  if (end - 1 > start) out.push(end - 1);
  return out;
}

/** The segments (from, to] between consecutive stored states, in order; the last is (end − 1, end]. */
export function segmentSpans(start: number, end: number, m: number): Span[] {
  const bounds = [start, ...storedSteps(start, end, m), end];
  return bounds.slice(1).map((to, i) => ({ from: bounds[i], to }));
}

/** Whole segments a verifier samples for a budget of k steps besides the last: at least one when k > 0. */
export function segmentsForBudget(k: number, m: number): number {
  return k <= 0 ? 0 : Math.max(1, Math.ceil(k / m));
}

/**
 * The spans a verifier replays: the final one-step segment, plus segmentsForBudget(k, m) of the others chosen by
 * the counter stream ("gpuchain/sample-segments", salt, start), which the provider cannot predict.
 */
export function sampleSpans(salt: string, start: number, end: number, m: number, k: number): Span[] {
  const spans = segmentSpans(start, end, m);
  if (spans.length === 0) return [];
  const last = spans[spans.length - 1];
  const pool = spans.slice(0, -1);
  const take = Math.min(segmentsForBudget(k, m), pool.length);
  const rng = u32Stream("gpuchain/sample-segments", salt, start);
  for (let i = 0; i < take; i++) {
    const j = i + uniformInt(rng, pool.length - i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return [...pool.slice(0, take).sort((a, b) => a.from - b.from), last];
}

/** P(one verifier replays a given bad step), over its secret salt. */
export function spanDetectionProbability(start: number, end: number, m: number, k: number, badStep: number): number {
  const spans = segmentSpans(start, end, m);
  const last = spans[spans.length - 1];
  if (badStep > last.from) return 1;
  const others = spans.length - 1;
  return others === 0 ? 0 : Math.min(segmentsForBudget(k, m), others) / others;
}
