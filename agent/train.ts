/**
 * Trains one segment (checkpoint interval) step by step, as its behaviour says (honest unless a fault was injected,
 * agent/behaviour.ts). The hooks let the
 * agent check fencing and the stop signal between steps and show progress; verifier tests call it without hooks.
 */
import { workSeed, type Trainer, type TrainingState } from "../workloads/index.ts";
import { HONEST, type ProviderBehaviour } from "./behaviour.ts";
import type { Segment, SegmentStart } from "./segment.ts";

export interface TrainHooks {
  /** Called before each step; return false to abandon the segment (fenced, stopping). */
  beforeStep?: (step: number) => boolean | Promise<boolean>;
  /** Called after each trained step, with the state it produced. */
  afterStep?: (step: number, loss: number, state: TrainingState) => void | Promise<void>;
  /** die-at:N: called right after step N (the default throws; the agent kills its process). */
  die?: (step: number) => void;
  /**
   * Called on each state once the next one is trained (it is no longer an input): what the segment keeps of it.
   * The agent keeps only a hash of states it will never upload (segment.ts `hashedOnly`); default: all of it.
   */
  retire?: (state: TrainingState) => TrainingState;
}

/** Returned when a hook abandoned the segment before its end. */
export interface Abandoned {
  abandoned: true;
  atStep: number;
}

export async function trainSegment(
  trainer: Trainer,
  start: SegmentStart,
  toStep: number,
  behaviour: ProviderBehaviour = HONEST,
  hooks: TrainHooks = {},
): Promise<Segment | Abandoned> {
  const from = start.start.step;
  if (toStep <= from) throw new RangeError(`segment must end after step ${from}, got ${toStep}`);
  const claimed = toStep - from;
  const toTrain = behaviour.stepsToTrain(claimed);
  // The data order is the job's and the maker's (workloads/checkpoint.ts workSeed): work bound to who did it.
  const seed = workSeed(start.seed, start.maker);
  const opts = behaviour.stepOptions(seed);
  const states: TrainingState[] = [];
  let state = start.start;
  let loss = Number.NaN;
  for (let i = 0; i < toTrain; i++) {
    const step = from + i + 1;
    if (hooks.beforeStep && !(await hooks.beforeStep(step))) return { abandoned: true, atStep: state.step };
    ({ state, loss } = await trainer.trainStep(state, seed, step, opts));
    if (hooks.retire && states.length) states[states.length - 1] = hooks.retire(states[states.length - 1]);
    states.push(state);
    await hooks.afterStep?.(step, loss, state);
    if (behaviour.diesAfter(step)) {
      (
        hooks.die ??
        ((s: number) => {
          throw new Error(`die-at:${s}`);
        })
      )(step);
    }
  }
  states.push(...behaviour.fabricate(start.start, states, claimed));
  return { ...start, states, trainedSteps: toTrain, loss };
}

export function isAbandoned(r: Segment | Abandoned): r is Abandoned {
  return (r as Abandoned).abandoned === true;
}
