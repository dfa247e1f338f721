// Checkpoint blob format (little-endian), version 3:
//   "GPUCKPT\0" | u16 version | templateId[32] | seed[32] | u64 step
//   | prevCheckpointHash[32] (zero if none) | u64 startStep | startStateHash[32]
//   | u32 segmentSteps (m) | maker[20] | u8 profileLength | profile (ASCII)
//   | u32 n | stepHashes[n][32]   (h_{startStep+1} .. h_{step}, n = step - startStep)
//   | state blob (see state.ts) of the state at `step`
// The hash reported on chain is blobHash(checkpoint bytes), so it commits to every step's state hash. Only the
// states at segment boundaries (segments.ts storedSteps) are stored as blobs: a verifier fetches a boundary
// state, replays the whole segment after it and compares every step with its committed hash.
//
// Work is bound to its maker. The checkpoint commits its maker and arithmetic profile (inside the
// reported hash), and its steps are trained on a data order drawn from the job's seed *and* the maker
// (workSeed): another identity that copies the checkpoint, or re-signs it with its own address, commits states
// that its own data order does not produce, so the always-replayed last step (and every sampled segment) refutes
// it. Taking over someone else's trained-ahead work costs the work itself. The verifiers judge a replay mismatch
// against the committed profile, not against what the provider says later.
import { createHash } from "node:crypto";
import { ByteReader, ByteWriter, hexToBytes32 } from "./bytes.ts";
import { CheckpointFormatError } from "./errors.ts";
import {
  checkLayoutNumbers,
  readStateLayout,
  stateHash,
  stateOfLayout,
  writeState,
  type StateLayout,
} from "./state.ts";
import type { TrainingState } from "./types.ts";

export const CHECKPOINT_MAGIC = Buffer.from("GPUCKPT\0", "ascii");
export const CHECKPOINT_VERSION = 3;
export const ZERO_HASH = "0x" + "00".repeat(32);
/** Longest arithmetic profile a checkpoint carries (workloads/profile.ts names are about 40 characters). */
export const MAX_PROFILE_LENGTH = 128;
const WORK_ORDER_TAG = Buffer.from("gpuchain/work-order\0", "ascii");

export type Checkpoint = {
  templateId: string;
  seed: string;
  step: number;
  /** blobHash of the previous accepted checkpoint, ZERO_HASH for the first one. */
  prevCheckpointHash: string;
  /** Step of the state this segment started from (the previous checkpoint's step, 0 at first). */
  startStep: number;
  startStateHash: string;
  /** Segment length m: states stored every m steps (segments.ts); 1 stores every state. */
  segmentSteps: number;
  /** The provider that trained it (0x address, lower case): the only one that may report it. */
  maker: string;
  /** The arithmetic profile it was trained with (workloads/profile.ts): what a replay mismatch is judged against. */
  profile: string;
  /** stateHash after each step startStep+1 .. step, in order. */
  stepHashes: string[];
  state: TrainingState;
};

export function blobHash(bytes: Uint8Array): string {
  return "0x" + createHash("sha256").update(bytes).digest("hex");
}

/**
 * The data-order seed of the steps a maker trains for a job: sha256("gpuchain/work-order\0" ‖ job seed ‖ maker).
 * Within one maker's tenure every epoch is still a permutation; across a failover the next maker draws its own.
 */
export function workSeed(jobSeed: string, maker: string): string {
  return (
    "0x" +
    createHash("sha256").update(WORK_ORDER_TAG).update(hexToBytes32(jobSeed)).update(addressBytes(maker)).digest("hex")
  );
}

/** The data-order seed this checkpoint's steps replay with. */
export const workSeedOf = (c: Pick<Checkpoint, "seed" | "maker">): string => workSeed(c.seed, c.maker);

/** What the checkpoint committed for `step` (the start state's hash for its start step). */
export function committedAt(c: Checkpoint, step: number): string {
  return step === c.startStep ? c.startStateHash : c.stepHashes[step - c.startStep - 1];
}

function addressBytes(address: string): Buffer {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new CheckpointFormatError("INCONSISTENT", `maker ${address} is not an address`);
  return Buffer.from(address.slice(2), "hex");
}

function profileBytes(profile: string): Buffer {
  const b = Buffer.from(profile, "ascii");
  if (b.length > MAX_PROFILE_LENGTH || !/^[\x20-\x7e]*$/.test(profile)) {
    throw new CheckpointFormatError("INCONSISTENT", `profile must be printable ASCII of at most ${MAX_PROFILE_LENGTH}`);
  }
  return b;
}

function checkStructure(c: Checkpoint): void {
  if (!Number.isSafeInteger(c.segmentSteps) || c.segmentSteps < 1 || c.segmentSteps > 0xffffffff) {
    throw new CheckpointFormatError("INCONSISTENT", `segment length ${c.segmentSteps} is not a positive u32`);
  }
  if (c.state.step !== c.step)
    throw new CheckpointFormatError("INCONSISTENT", `state step ${c.state.step} != ${c.step}`);
  if (c.step < c.startStep || c.stepHashes.length !== c.step - c.startStep) {
    throw new CheckpointFormatError(
      "INCONSISTENT",
      `${c.stepHashes.length} step hashes for steps ${c.startStep}..${c.step}`,
    );
  }
}

/** Encodes a checkpoint. Checks structure only, so fault injection can still build bad content. */
export function encodeCheckpoint(c: Checkpoint): Uint8Array {
  checkStructure(c);
  const w = new ByteWriter()
    .bytes(CHECKPOINT_MAGIC)
    .u16(CHECKPOINT_VERSION)
    .hex32(c.templateId)
    .hex32(c.seed)
    .u64(c.step)
    .hex32(c.prevCheckpointHash)
    .u64(c.startStep)
    .hex32(c.startStateHash)
    .u32(c.segmentSteps)
    .bytes(addressBytes(c.maker));
  const profile = profileBytes(c.profile);
  w.u8(profile.length).bytes(profile).u32(c.stepHashes.length);
  for (const h of c.stepHashes) w.hex32(h);
  writeState(w, c.state);
  return w.finish();
}

/**
 * Whether the state's bytes are its canonical encoding (what encodeState gives for the decoded state): every field
 * reads back to the same bytes except a tensor name that is not valid UTF-8. Then the state's hash is the hash of its
 * bytes as they lie in the blob, with no re-encoding.
 */
const canonicalNames = (l: StateLayout): boolean =>
  [...l.weights, ...l.momentum].every((t) => Buffer.from(t.name, "utf8").equals(t.nameBytes));

/**
 * Decodes and validates a checkpoint: magic, version, lengths, no trailing bytes, hash chain end
 * (last step hash, or the start hash for an empty segment, equals the embedded state's hash) and
 * no NaN/Inf. Throws CheckpointFormatError or NonFiniteError.
 */
export function decodeCheckpoint(bytes: Uint8Array): Checkpoint {
  const r = new ByteReader(bytes);
  if (!r.bytes(8).equals(CHECKPOINT_MAGIC)) throw new CheckpointFormatError("BAD_MAGIC", "not a GPUChain checkpoint");
  const version = r.u16();
  // Versions 1 and 2 bound no maker: any identity could report them, so they are no longer accepted.
  if (version !== CHECKPOINT_VERSION) throw new CheckpointFormatError("BAD_VERSION", `unsupported version ${version}`);
  const templateId = r.hex32();
  const seed = r.hex32();
  const step = r.u64();
  const prevCheckpointHash = r.hex32();
  const startStep = r.u64();
  const startStateHash = r.hex32();
  const segmentSteps = r.u32();
  const maker = "0x" + r.bytes(20).toString("hex");
  const profileLength = r.u8();
  const profile = r.bytes(profileLength).toString("latin1");
  profileBytes(profile);
  const n = r.u32();
  if (n * 32 > r.remaining) throw new CheckpointFormatError("TRUNCATED", `step hash list of ${n} cut short`);
  const stepHashes = Array.from({ length: n }, () => r.hex32());
  const stateAt = r.pos;
  const layout = readStateLayout(r);
  r.end();
  const state = stateOfLayout(layout);
  const c: Checkpoint = {
    templateId,
    seed,
    step,
    prevCheckpointHash,
    startStep,
    startStateHash,
    segmentSteps,
    maker,
    profile,
    stepHashes,
    state,
  };
  checkStructure(c);
  const last = n > 0 ? stepHashes[n - 1] : startStateHash;
  const hash = canonicalNames(layout) ? blobHash(bytes.subarray(stateAt)) : stateHash(state);
  if (hash !== last) throw new CheckpointFormatError("INCONSISTENT", "state does not match its committed hash");
  checkLayoutNumbers(layout);
  return c;
}
