/**
 * Fabricating uploads for the cheating figures and the adversary tests: a provider that trains an honest prefix
 * and copies the rest (bench/cheat.ts, test/adversary/partialFabrication.ts). Pure apart from the trainer.
 */
import { honestUpload, type Upload } from "../agent/segment.ts";
import { initialState, ZERO_HASH, type Trainer, type TrainingState, workSeed } from "../workloads/index.ts";
import { localProfile } from "../workloads/profile.ts";

/**
 * How a prefix-then-copy provider commits the states after its trained prefix (steps prefix+1 .. n−1; the state
 * after n − 1 is always the prefix's state relabelled n − 1, and step n is trained from it, so the always-replayed
 * last step reproduces):
 * - `prefix-copy`: the prefix's last state itself, still labelled with the prefix's step (the finding);
 * - `relabelled`: the prefix's last state relabelled with each step (well formed; only a replay tells);
 * - `poisoned`: relabelled, with a NaN in its first weight (a non-finite boundary).
 */
export type CopyVariant = "prefix-copy" | "relabelled" | "poisoned";

/** The prefix-then-copy upload for steps 0..n of a fresh job: `prefix` steps trained, the rest copied. */
export async function prefixCopyUpload(
  trainer: Trainer,
  seed: string,
  n: number,
  prefix: number,
  maker: string,
  variant: CopyVariant,
): Promise<Upload> {
  const start = initialState(trainer.template, seed);
  const order = workSeed(seed, maker);
  const states: TrainingState[] = [];
  let s = start;
  for (let step = 1; step <= prefix; step++) states.push((s = (await trainer.trainStep(s, order, step)).state));
  const copyOf = (step: number): TrainingState => {
    if (variant === "prefix-copy") return s;
    const relabelled = { ...s, step };
    if (variant === "relabelled") return relabelled;
    const [first, ...rest] = s.weights;
    return { ...relabelled, weights: [{ ...first, data: first.data.map((v, i) => (i === 0 ? NaN : v)) }, ...rest] };
  };
  for (let step = prefix + 1; step < n - 1; step++) states.push(copyOf(step));
  if (prefix < n - 1) states.push({ ...s, step: n - 1 });
  states.push((await trainer.trainStep(states[states.length - 1] ?? start, order, n)).state);
  return freshJobUpload(trainer, seed, maker, states, prefix + 1);
}

/** The upload of `states` (steps 1..n) from a fresh job's initial state, as the agent commits it (bench uploads). */
export function freshJobUpload(
  trainer: Trainer,
  seed: string,
  maker: string,
  states: TrainingState[],
  trainedSteps: number,
): Upload {
  return honestUpload({
    templateId: trainer.template.templateId,
    seed,
    prevCheckpointHash: ZERO_HASH,
    start: initialState(trainer.template, seed),
    maker,
    profile: localProfile(),
    states,
    trainedSteps,
    loss: 0,
  });
}
