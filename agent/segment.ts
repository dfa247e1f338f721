/**
 * One checkpoint interval ("segment") of training and what gets uploaded for it. Pure: no chain, no files.
 *
 * A segment starts from a committed state (the last accepted checkpoint's state, or the seed's initial state) and
 * holds the state after every step. The upload is the checkpoint blob (workloads' format, with one state hash per
 * step), the hash reported on chain, and every state of the segment as its own blob, so a verifier can fetch the
 * state before any sampled step, replay it and compare with the committed hash.
 */
import {
  blobHash, encodeCheckpoint, encodeState, stateHash, type Checkpoint, type TrainingState,
} from "../workloads/index.ts";

export interface SegmentStart {
  templateId: string;
  seed: string;
  /** blobHash of the last accepted checkpoint (ZERO_HASH before the first). */
  prevCheckpointHash: string;
  /** The committed state the segment starts from (its step is the accepted step). */
  start: TrainingState;
}

export interface Segment extends SegmentStart {
  /** The state after each step start.step+1 .. end, in order (what the provider claims it computed). */
  states: TrainingState[];
  /** Steps actually run through the trainer (equals states.length for honest work). */
  trainedSteps: number;
  /** Mean loss of the last trained step (reported in heartbeats and progress only). */
  loss: number;
}

export interface Upload {
  checkpoint: Checkpoint;
  /** The checkpoint blob put in the store. */
  checkpointBytes: Uint8Array;
  /** The hash reported on chain. Honest uploads: blobHash(checkpointBytes). */
  reportedHash: string;
  /** State blobs to put first: the start state and the state after each step. */
  stateBlobs: Uint8Array[];
  /** For hash-mismatch: place checkpointBytes under reportedHash's name instead of its own content hash. */
  placeUnderReportedHash: boolean;
  /** Step reported on chain (the segment's end). */
  step: number;
  /** Fault notes ("what this upload lies about"); empty for honest work. */
  faults: string[];
}

export function segmentEnd(seg: Segment): number {
  return seg.start.step + seg.states.length;
}

/**
 * The checkpoint a segment commits to (hash chain over every state in order). `hashes` (start state first, then
 * each step) may be passed when already computed; stateHash(s) = blobHash(encodeState(s)).
 */
export function buildCheckpoint(seg: Segment, hashes?: string[]): Checkpoint {
  const end = segmentEnd(seg);
  const last = seg.states.length ? seg.states[seg.states.length - 1] : seg.start;
  const h = hashes ?? [seg.start, ...seg.states].map(stateHash);
  return {
    templateId: seg.templateId,
    seed: seg.seed,
    step: end,
    prevCheckpointHash: seg.prevCheckpointHash,
    startStep: seg.start.step,
    startStateHash: h[0],
    stepHashes: h.slice(1),
    state: last,
  };
}

/** The honest upload for a segment (each state encoded once: its blob, and its hash from the blob). */
export function honestUpload(seg: Segment): Upload {
  const stateBlobs = [seg.start, ...seg.states].map(encodeState);
  const checkpoint = buildCheckpoint(seg, stateBlobs.map(blobHash));
  const checkpointBytes = encodeCheckpoint(checkpoint);
  return {
    checkpoint,
    checkpointBytes,
    reportedHash: blobHash(checkpointBytes),
    stateBlobs,
    placeUnderReportedHash: false,
    step: checkpoint.step,
    faults: [],
  };
}
