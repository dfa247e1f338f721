// Public API of the workload layer (used by the agent and the verifiers).
export {
  loadTemplate,
  listTemplates,
  buildTemplate,
  computeTemplateId,
  canonicalJson,
  DESCRIPTORS,
} from "./templates.ts";
export {
  createTrainer,
  evalResultOf,
  replayStep,
  microBatchForMemory,
  oneAtomMemoryMiB,
  stepMemoryBytes,
} from "./trainer.ts";
export type { Trainer, TrainerOptions, StepOptions, StepResult, EvalResult } from "./trainer.ts";
export { batchIndices } from "./order.ts";
export { initialState, encodeState, decodeState, stateHash, checkNumbers } from "./state.ts";
export {
  encodeCheckpoint,
  decodeCheckpoint,
  blobHash,
  ZERO_HASH,
  CHECKPOINT_VERSION,
  MAX_PROFILE_LENGTH,
  workSeed,
  workSeedOf,
  committedAt,
} from "./checkpoint.ts";
export type { Checkpoint } from "./checkpoint.ts";
export {
  FsCheckpointStore,
  putState,
  getState,
  BlobStore,
  FsBackend,
  S3Backend,
  openStore,
  parseStoreUrl,
  StoreUrlError,
  StoreConfigError,
  StoreCorruptionError,
  StoreUnavailableError,
  ShortReadError,
  DEFAULT_RETRY,
} from "./store.ts";
export type { BlobBackend, CheckpointStore, StoreEvent, StoreOptions, RetryPolicy } from "./store.ts";
export { sampleSteps, detectionProbability, replayCommittedStep, committedState, chainProblems } from "./replay.ts";
export {
  defaultSegmentSteps,
  maxSegmentSteps,
  storedSteps,
  segmentSpans,
  segmentsForBudget,
  sampleSpans,
  spanDetectionProbability,
} from "./segments.ts";
export type { Span } from "./segments.ts";
export type { StepCheck } from "./replay.ts";
export * from "./errors.ts";
export type * from "./types.ts";
export type { ExecutionProvider } from "./runtime.ts";
export {
  cpuFamily,
  deviceSlug,
  localProfile,
  isProvenProfile,
  mismatchIsEvidence,
  PROVEN_PROFILES,
  replayUnprovenReason,
} from "./profile.ts";
export type { ArithmeticProfile } from "./profile.ts";
export { createSampler, SAMPLE_PROMPT } from "./sample.ts";
export type { Sampler } from "./sample.ts";
