// Segment commitments: a checkpoint commits the hash of every step's state (stepHashes) but stores full states
// only at segment boundaries. Pure arithmetic shared by the provider (what to upload), the verifiers (what to
// fetch and replay) and the detection figures.
//
// A checkpoint over steps (start, end] with segment length m stores, besides its embedded final state:
//   - the state after every step start + j·m strictly inside (start, end − 1), and
//   - the state after step end − 1 (so the last step, the one that is paid for, replays from a stored state).
// The start state is not stored again: it is the previous checkpoint's embedded state (or the seed's initial one).
// Consecutive stored steps bound the segments; a verifier replays whole segments from their stored start and
// compares every step's hash, always including the final one-step segment (end − 1, end]. For a budget of k
// steps it replays k/m segments on average, so its expected compute (and its chance to catch one bad step,
// k/n) is the same as sampling k single steps with every state stored.
import { uniformInt, u32Stream } from "./prng.ts";

export type Span = { from: number; to: number };

/**
 * The template default: about a twentieth of the interval, so storage falls from n states to about n/m + 1.
 * Every verifier replays at least one whole segment besides the last step (segmentsForBudget), so m is also its
 * least replay cost: n/20 keeps that near 5 % of training (n/10 would make it 10 %). At least 2 (from
 * n = 3 on), so short intervals still store about half their states (the n/10 default stored 10 of 20).
 */
export function defaultSegmentSteps(n: number): number {
  return n <= 2 ? 1 : Math.max(2, Math.ceil(n / 20));
}

/** The longest segment a verifier accepts for an n-step checkpoint (longer would make checks cost more). */
export const maxSegmentSteps = defaultSegmentSteps;

/**
 * The shortest segment a verifier accepts: the default too, so m is fixed by n. Were it the provider's choice,
 * short segments would thin every verifier's sample (one of ≈ n/m segments replayed) while a fabricated span kept
 * its length. Fixed, the pool is at most POOL_SEGMENTS_MAX segments for every n, and each verifier replays a given
 * pool segment with probability at least 1/POOL_SEGMENTS_MAX whatever the provider does.
 */
export const minSegmentSteps = defaultSegmentSteps;

/** The most pool segments (all but the last one-step segment) any interval has at its fixed segment length. */
export const POOL_SEGMENTS_MAX = 20;

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

/**
 * Whole segments a verifier replays for a budget of k steps besides the last: k/m on average (floor(k/m), plus one
 * more with probability frac(k/m), `u` uniform in [0, 1) drawn from the verifier's secret salt), and never fewer
 * than one. With zero, a provider that fabricated every step but the last was caught only with
 * probability k/m (4 % per verifier at interval 1,000); with one, every fabricated segment is found by each
 * verifier with probability at least 1/(pool size), so the share of tainted segments bounds the chance of being
 * caught from below and fabricating never pays (docs/THREATS.md, test/adversary/cheatEconomics.ts).
 */
export function segmentsForBudget(k: number, m: number, u: number): number {
  const budget = Math.max(0, k);
  const whole = Math.floor(budget / m);
  return Math.max(1, whole + (u < budget / m - whole ? 1 : 0));
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
  const rng = u32Stream("gpuchain/sample-segments", salt, start);
  const take = Math.min(segmentsForBudget(k, m, rng() / 2 ** 32), pool.length);
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
  if (others === 0) return 0;
  const budget = Math.max(0, k);
  const whole = Math.floor(budget / m);
  const frac = budget / m - whole;
  const taken = (n: number) => Math.min(Math.max(1, n), others);
  const expected = (1 - frac) * taken(whole) + frac * taken(whole + 1);
  return expected / others;
}
