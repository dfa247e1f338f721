// Public API of the workload layer (used by the agent and the verifiers).
export { loadTemplate, listTemplates, buildTemplate, computeTemplateId, canonicalJson, DESCRIPTORS } from "./templates.ts";
export { createTrainer, replayStep, microBatchForMemory, stepMemoryBytes } from "./trainer.ts";
export type { Trainer, TrainerOptions, StepOptions, StepResult, EvalResult } from "./trainer.ts";
export { batchIndices } from "./order.ts";
export { initialState, encodeState, decodeState, stateHash, checkNumbers } from "./state.ts";
export { encodeCheckpoint, decodeCheckpoint, blobHash, ZERO_HASH, CHECKPOINT_VERSION } from "./checkpoint.ts";
export type { Checkpoint } from "./checkpoint.ts";
export { FsCheckpointStore, putState, getState } from "./store.ts";
export type { CheckpointStore } from "./store.ts";
export { sampleSteps, detectionProbability, replayCommittedStep, chainProblems } from "./replay.ts";
export type { StepCheck } from "./replay.ts";
export * from "./errors.ts";
export type * from "./types.ts";
export type { ExecutionProvider } from "./runtime.ts";
export { cpuFamily, localProfile, isProvenProfile, mismatchIsEvidence, PROVEN_PROFILES } from "./profile.ts";
export type { ArithmeticProfile } from "./profile.ts";
