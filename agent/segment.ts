/**
 * One checkpoint interval ("segment" here; workloads/segments.ts splits it into replay segments of m steps) of
 * training and what gets uploaded for it. Pure: no chain, no files.
 *
 * A segment starts from a committed state (the last accepted checkpoint's state, or the seed's initial state) and
 * holds the state after every step. The upload is the checkpoint blob (workloads' format: one state hash per
 * step, so it commits to every state), the hash reported on chain, and the states at the segment boundaries
 * (every m steps, and the one before the last) as their own blobs: a verifier fetches a boundary, replays the
 * m steps after it and compares every step's hash. About n/m + 1 states are stored instead of n.
 */
import {
  blobHash,
  defaultSegmentSteps,
  encodeCheckpoint,
  encodeState,
  stateHash,
  storedSteps,
  type Checkpoint,
  type TrainingState,
} from "../workloads/index.ts";

export interface SegmentStart {
  templateId: string;
  seed: string;
  /** blobHash of the last accepted checkpoint (ZERO_HASH before the first). */
  prevCheckpointHash: string;
  /** The committed state the segment starts from (its step is the accepted step). */
  start: TrainingState;
  /** The provider training it (its address) and its arithmetic profile: committed in the checkpoint. */
  maker: string;
  profile: string;
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
  /** State blobs to put first: the states at the segment boundaries (workloads/segments.ts storedSteps). */
  stateBlobs: Uint8Array[];
  /** blobHash of each state blob, when known (same length as stateBlobs; saves re-hashing on upload). */
  stateHashes?: string[];
  /** For hash-mismatch: place checkpointBytes under reportedHash's name instead of its own content hash. */
  placeUnderReportedHash: boolean;
  /** Step reported on chain (the segment's end). */
  step: number;
  /** Fault notes ("what this upload lies about"); empty for honest work. */
  faults: string[];
}

/**
 * Encodings made while training, by state object (states are never mutated): the agent hashes each state as it is
 * trained, so building the checkpoint never blocks for an interval's worth of hashing at its end (at
 * interval 500 on a loaded machine that stalled heartbeats past the coordinator's timeout). Boundary states keep
 * their bytes for the upload. A state a fault replaced is a new object: hashed afresh.
 */
const encoded = new WeakMap<TrainingState, { hash: string; bytes?: Uint8Array }>();

/** Remembers `state`'s hash, and with `keep` its bytes too (returned: a boundary state's upload). */
export function noteState(state: TrainingState, keep: boolean): Uint8Array | undefined {
  if (!keep) {
    encoded.set(state, { hash: stateHash(state) });
    return undefined;
  }
  const bytes = encodeState(state);
  encoded.set(state, { hash: blobHash(bytes), bytes });
  return bytes;
}

/**
 * A noted state without its tensors, for a segment to keep in its place: its hash is all a checkpoint needs of a
 * state it will not upload. Keeping 500 states of 400 kB each for an interval made the garbage collector cost the
 * trainer a quarter of its speed (MNIST, 2-core machine: 101 → 76 steps/s with hashing). Unnoted: kept whole.
 */
export function hashedOnly(state: TrainingState): TrainingState {
  const noted = encoded.get(state);
  if (!noted || noted.bytes) return state;
  const slim: TrainingState = { step: state.step, weights: [], momentum: [] };
  encoded.set(slim, { hash: noted.hash });
  return slim;
}

const hashOf = (s: TrainingState) => encoded.get(s)?.hash ?? blobHash(encodeState(s));
const bytesOf = (s: TrainingState) => encoded.get(s)?.bytes ?? encodeState(s);

export function segmentEnd(seg: Segment): number {
  return seg.start.step + seg.states.length;
}

/**
 * The checkpoint a segment commits to (every state's hash, in order). `hashes` (start state first, then each
 * step) may be passed when already computed; stateHash(s) = blobHash(encodeState(s)).
 */
export function buildCheckpoint(
  seg: Segment,
  hashes?: string[],
  m = defaultSegmentSteps(seg.states.length),
): Checkpoint {
  const end = segmentEnd(seg);
  const last = seg.states.length ? seg.states[seg.states.length - 1] : seg.start;
  const h = hashes ?? [seg.start, ...seg.states].map((s) => blobHash(encodeState(s)));
  return {
    templateId: seg.templateId,
    seed: seg.seed,
    step: end,
    prevCheckpointHash: seg.prevCheckpointHash,
    startStep: seg.start.step,
    startStateHash: h[0],
    segmentSteps: m,
    maker: seg.maker.toLowerCase(),
    profile: seg.profile,
    stepHashes: h.slice(1),
    state: last,
  };
}

/** The honest upload for a segment (each state encoded once, or already while training: noteState). */
export function honestUpload(seg: Segment, m = defaultSegmentSteps(seg.states.length)): Upload {
  const all = [seg.start, ...seg.states];
  const checkpoint = buildCheckpoint(seg, all.map(hashOf), m);
  const checkpointBytes = encodeCheckpoint(checkpoint);
  const from = seg.start.step;
  const stored = storedSteps(from, checkpoint.step, m);
  return {
    checkpoint,
    checkpointBytes,
    reportedHash: blobHash(checkpointBytes),
    stateBlobs: stored.map((step) => bytesOf(all[step - from])),
    stateHashes: stored.map((step) => checkpoint.stepHashes[step - from - 1]),
    placeUnderReportedHash: false,
    step: checkpoint.step,
    faults: [],
  };
}
