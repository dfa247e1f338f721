/**
 * The expected step time of a known template on a device with a given memory (decide.ts `expectedStepMs`, the
 * progress rule's input): its multiply-adds per step and how many micro-batches that memory forces. Templates
 * never change at run time, so answers are remembered (bounded).
 */
import { expectedStepMs, PROGRESS } from "./decide.ts";
import {
  loadTemplate,
  microBatchForMemory,
  oneAtomMemoryMiB,
  UnknownTemplateError,
  type Template,
} from "../../workloads/index.ts";

/** Multiply-adds of one step, forward and backward, as the template's model family counts them. */
export const macsPerStep = (t: Template): number => t.family.macsPerStep(t.descriptor);

/** Micro-batches per step on `memoryMiB` (every atom on its own when even one does not fit: the slowest case). */
export function microBatches(t: Template, memoryMiB: number): number {
  try {
    return t.atomsPerStep / microBatchForMemory(t, memoryMiB);
  } catch (e) {
    if (e instanceof RangeError) return t.atomsPerStep;
    throw e;
  }
}

const known = new Map<string, number | undefined>();

/** Expected ms per step, or undefined for a template this node does not know. */
export function templateStepMs(templateId: string, memoryMiB: number): number | undefined {
  const key = `${templateId.toLowerCase()}|${memoryMiB}`;
  if (known.has(key)) return known.get(key);
  let ms: number | undefined;
  try {
    const t = loadTemplate(templateId);
    ms = expectedStepMs(macsPerStep(t), microBatches(t, memoryMiB));
  } catch (e) {
    if (!(e instanceof UnknownTemplateError)) throw e;
  }
  if (known.size >= 1_024) known.clear(); // memory sizes come from registrations: keep the cache bounded
  known.set(key, ms);
  return ms;
}

/**
 * The least device memory a known template can train in, MiB (one atom per micro-batch: workloads/trainer.ts);
 * 0 for a template this node does not know (the operator's --min-memory then decides alone).
 */
export function templateMemoryMiB(templateId: string): number {
  try {
    return oneAtomMemoryMiB(loadTemplate(templateId));
  } catch (e) {
    if (e instanceof UnknownTemplateError) return 0;
    throw e;
  }
}

/** JobEscrow's bounds on a template's step bound (`setTemplateStepBound`): [1, MAX_SECONDS_PER_STEP × 1000] ms. */
export const STEP_BOUND_MAX_MS = 30_000;

/**
 * The step bound to set on chain for a template (`JobEscrow.setTemplateStepBound`, ms): the progress rule's bound on
 * one step (PROGRESS.STEP_FACTOR × the expected time) on the slowest device that may take it (every atom its own
 * micro-batch), so a job's on-chain progress timeout is never shorter than the coordinator's own report bound for any
 * holder (up to the contract's maximum, MAX_SECONDS_PER_STEP, its default). It is what prices a newcomer's stalled hold (decide.ts decideProbation).
 */
export function templateStepBoundMs(t: Template): number {
  const slowest = expectedStepMs(macsPerStep(t), t.atomsPerStep);
  return Math.min(STEP_BOUND_MAX_MS, Math.max(1, Math.ceil(PROGRESS.STEP_FACTOR * slowest)));
}

/** templateStepBoundMs of a template this node knows by id, or undefined. */
export function knownStepBound(templateId: string): number | undefined {
  try {
    return templateStepBoundMs(loadTemplate(templateId));
  } catch (e) {
    if (e instanceof UnknownTemplateError) return undefined;
    throw e;
  }
}
