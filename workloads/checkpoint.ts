// Checkpoint blob format (little-endian), version 2:
//   "GPUCKPT\0" | u16 version | templateId[32] | seed[32] | u64 step
//   | prevCheckpointHash[32] (zero if none) | u64 startStep | startStateHash[32]
//   | u32 segmentSteps (m; version 2 only, version 1 means 1)
//   | u32 n | stepHashes[n][32]   (h_{startStep+1} .. h_{step}, n = step - startStep)
//   | state blob (see state.ts) of the state at `step`
// The hash reported on chain is blobHash(checkpoint bytes), so it commits to every step's state hash. Only the
// states at segment boundaries (segments.ts storedSteps) are stored as blobs: a verifier fetches a boundary
// state, replays the whole segment after it and compares every step with its committed hash.
import { createHash } from "node:crypto";
import { ByteReader, ByteWriter } from "./bytes.ts";
import { CheckpointFormatError } from "./errors.ts";
import { checkNumbers, readState, stateHash, writeState } from "./state.ts";
import type { TrainingState } from "./types.ts";

export const CHECKPOINT_MAGIC = Buffer.from("GPUCKPT\0", "ascii");
export const CHECKPOINT_VERSION = 2;
export const ZERO_HASH = "0x" + "00".repeat(32);

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
  /** stateHash after each step startStep+1 .. step, in order. */
  stepHashes: string[];
  state: TrainingState;
};

export function blobHash(bytes: Uint8Array): string {
  return "0x" + createHash("sha256").update(bytes).digest("hex");
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
    .u32(c.stepHashes.length);
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
  if (version !== CHECKPOINT_VERSION && version !== 1) {
    throw new CheckpointFormatError("BAD_VERSION", `unsupported version ${version}`);
  }
  const templateId = r.hex32();
  const seed = r.hex32();
  const step = r.u64();
  const prevCheckpointHash = r.hex32();
  const startStep = r.u64();
  const startStateHash = r.hex32();
  const segmentSteps = version === 1 ? 1 : r.u32();
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
