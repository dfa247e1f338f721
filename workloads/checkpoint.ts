// Checkpoint blob format (little-endian), version 3:
//   "GPUCKPT\0" | u16 version | templateId[32] | seed[32] | u64 step
//   | prevCheckpointHash[32] (zero if none) | u64 startStep | startStateHash[32]
//   | u32 segmentSteps (m) | maker[20] | u8 profileLength | profile (ASCII)
//   | u32 n | stepHashes[n][32]   (committed hashes of steps startStep+1 .. step, n = step - startStep)
//   | state blob (see state.ts) of the state at `step`
// The hash reported on chain is blobHash(checkpoint bytes), so it commits to every step's state hash. Only the
// states at segment boundaries (segments.ts storedSteps) are stored as blobs: a verifier fetches a boundary
// state, replays the whole segment after it and compares every step with its committed hash.
//
// Work is bound to its maker (issue 19). A step whose state is published (a stored boundary, the step before the
// last, the final embedded state) is committed by its plain state hash, which names its blob; every other step by
// workHash(maker, stateHash), a hash of a state nobody else has seen. So a copy of another provider's checkpoint
// cannot be re-signed as one's own: re-binding its hidden steps needs their states, which only replaying (the work
// itself) gives. The maker and its arithmetic profile are inside the reported hash, so the verifiers judge a replay
// mismatch against the profile the provider committed, not against what it says later.
import { createHash } from "node:crypto";
import { ByteReader, ByteWriter } from "./bytes.ts";
import { CheckpointFormatError } from "./errors.ts";
import { checkNumbers, readState, stateHash, writeState } from "./state.ts";
import type { TrainingState } from "./types.ts";

export const CHECKPOINT_MAGIC = Buffer.from("GPUCKPT\0", "ascii");
export const CHECKPOINT_VERSION = 3;
export const ZERO_HASH = "0x" + "00".repeat(32);
/** Longest arithmetic profile a checkpoint carries (workloads/profile.ts names are about 40 characters). */
export const MAX_PROFILE_LENGTH = 128;
const WORK_TAG = Buffer.from("GPUWORK\0", "ascii");

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
  /** committedHash after each step startStep+1 .. step, in order: plain for published steps, else bound to maker. */
  stepHashes: string[];
  state: TrainingState;
};

export function blobHash(bytes: Uint8Array): string {
  return "0x" + createHash("sha256").update(bytes).digest("hex");
}

/** The hash a hidden (unpublished) step's state is committed by: sha256("GPUWORK\0" ‖ maker ‖ stateHash). */
export function workHash(maker: string, stateHashHex: string): string {
  const h = createHash("sha256").update(WORK_TAG).update(addressBytes(maker)).update(hexToBytes(stateHashHex, 32));
  return "0x" + h.digest("hex");
}

/**
 * Whether the state after `step` is published (its blob stored, or embedded): the start, the segment boundaries
 * start + j·m, the step before the last and the last. Arithmetic form of segments.ts storedSteps.
 */
export function isPublishedStep(c: Pick<Checkpoint, "startStep" | "step" | "segmentSteps">, step: number): boolean {
  return step <= c.startStep || step >= c.step - 1 || (step - c.startStep) % c.segmentSteps === 0;
}

/** The hash the checkpoint must commit for `step` if that step's state hashes to `stateHashHex`. */
export function committedHashOf(c: Checkpoint, step: number, stateHashHex: string): string {
  return isPublishedStep(c, step) ? stateHashHex : workHash(c.maker, stateHashHex);
}

/** What the checkpoint committed for `step` (the start state's hash for its start step). */
export function committedAt(c: Checkpoint, step: number): string {
  return step === c.startStep ? c.startStateHash : c.stepHashes[step - c.startStep - 1];
}

/** Whether a state hashing to `stateHashHex` is the one the checkpoint committed for `step`. */
export function commitsTo(c: Checkpoint, step: number, stateHashHex: string): boolean {
  const committed = committedAt(c, step);
  return committed !== undefined && committed.toLowerCase() === committedHashOf(c, step, stateHashHex).toLowerCase();
}

function addressBytes(address: string): Buffer {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new CheckpointFormatError("INCONSISTENT", `maker ${address} is not an address`);
  return Buffer.from(address.slice(2), "hex");
}

function hexToBytes(hex: string, n: number): Buffer {
  const b = Buffer.from(hex.replace(/^0x/, ""), "hex");
  if (b.length !== n) throw new CheckpointFormatError("INCONSISTENT", `${hex} is not ${n} bytes`);
  return b;
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
  const state = readState(r);
  r.end();
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
  if (stateHash(state) !== last)
    throw new CheckpointFormatError("INCONSISTENT", "state does not match its committed hash");
  checkNumbers(state);
  return c;
}
