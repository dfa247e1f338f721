/**
 * How a provider behaves, injected: honest by default (`HONEST`); each fault mode of `gpuchain provide --fault` is
 * another implementation (agent/faults.ts `behaviourOf`). The agent asks its behaviour at each point where a faulty
 * provider differs and never branches on a fault itself.
 */
import type { StepOptions, TrainingState } from "../workloads/index.ts";
import type { FencedWriter } from "./fenced.ts";
import { honestUpload, type Segment, type Upload } from "./segment.ts";
import type { JobView } from "../sdk/rules/job.ts";

/** A committed checkpoint (hash and blob) a `replay-old` provider can report again. */
export interface OldCheckpoint {
  hash: string;
  bytes: Uint8Array;
}

export interface ProviderBehaviour {
  /** The injected fault as written on the command line (logs, badges); undefined when honest. */
  readonly fault?: string;
  /** Options for every trainer step (wrong-data: another data seed). */
  stepOptions(seed: string): StepOptions;
  /** How many of `claimed` steps are really trained (skip-steps: half). */
  stepsToTrain(claimed: number): number;
  /** The states claimed after the `trained` ones, up to `claimed` (honest: none). */
  fabricate(start: TrainingState, trained: TrainingState[], claimed: number): TrainingState[];
  /** Whether the process dies right after training `step` (die-at:N). */
  diesAfter(step: number): boolean;
  /** What is uploaded and reported for a trained segment. */
  upload(seg: Segment, old?: OldCheckpoint): Upload;
  /** Whether heartbeats go on after being fenced (write-after-fence). */
  readonly ignoresFence: boolean;
  /** Runs once the agent found itself fenced off `job` at `epoch` (honest: nothing more is written). */
  afterFenced(w: FencedWriter, job: JobView, epoch: bigint, last?: { step: number; hash: string }): Promise<void>;
}

export const HONEST: ProviderBehaviour = {
  fault: undefined,
  stepOptions: () => ({}),
  stepsToTrain: (claimed) => claimed,
  fabricate: () => [],
  diesAfter: () => false,
  upload: (seg) => honestUpload(seg),
  ignoresFence: false,
  afterFenced: async () => {},
};
