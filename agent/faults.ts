/**
 * Injected faults (`gpuchain provide --fault KIND[:ARG]`): real misbehaviour of a running provider, each one a
 * ProviderBehaviour (agent/behaviour.ts) built by `behaviourOf`, and the same functions for verifier tests that
 * need faulty checkpoints without a chain.
 *
 * Kinds and where each one acts:
 * - training time (asked by agent/train.ts `trainSegment`):
 *   - `wrong-data`   every step draws its batch from another seed (`wrongDataSeed`); hashes are self-consistent,
 *                    replaying any step from the job seed differs.
 *   - `skip-steps`   trains only `stepsToTrain(n)` of the n claimed steps, then fabricates the rest of the hash
 *                    chain by relabelling the last trained state (`fabricateSkipped`); replaying a fabricated step
 *                    differs.
 *   - `die-at:N`     the process kills itself right after training step N (mid-interval, nothing uploaded).
 * - segment (state) level, after training (`applyStateFault`, in the behaviour's `upload`):
 *   - `garbage-weights` the final state's weights are random (`garbageState`); the last step hash is recomputed so
 *                    the blob decodes, but replaying the last step and evaluating both fail.
 *   - `nan`          a NaN in the final state's weights (`nanState`); `checkNumbers`/`decodeCheckpoint` throw.
 * - upload level (the behaviour's `upload`):
 *   - `hash-mismatch` reports the honest hash but uploads different bytes under that name (`hashMismatch`).
 *   - `replay-old`   reports the last accepted checkpoint's hash/blob again for the new step (`replayOld`).
 * - chain level (agent/fenced.ts): `write-after-fence` keeps reporting and heartbeating at its old epoch after it
 *   was fenced; the escrow must reject every write, and the agent logs each rejection.
 *
 * Verifier tests: `trainSegment(trainer, start, toStep, behaviourOf(fault))` then `faultyUpload(segment, fault, { old })`
 * gives the bytes to put, the hash to report and the state blobs, exactly as the agent would produce them.
 */
import { createHash } from "node:crypto";
import { blobHash, decodeCheckpoint, type TrainingState } from "../workloads/index.ts";
import { u32Stream, uniformSymmetric } from "../workloads/prng.ts";
import { HONEST, type OldCheckpoint, type ProviderBehaviour } from "./behaviour.ts";
import { writeAfterFence } from "./fenced.ts";
import { honestUpload, type Segment, type Upload } from "./segment.ts";

export type { OldCheckpoint };

export const FAULT_KINDS = [
  "garbage-weights",
  "skip-steps",
  "wrong-data",
  "nan",
  "hash-mismatch",
  "replay-old",
  "write-after-fence",
  "die-at",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  kind: FaultKind;
  /** die-at: the step after which the process dies. */
  atStep?: number;
}

export class FaultSpecError extends Error {}

/** Parses `KIND[:ARG]`; undefined when no fault was asked for. */
export function parseFault(spec: string | undefined): Fault | undefined {
  if (spec === undefined || spec === "") return undefined;
  const [kind, arg, ...rest] = spec.split(":");
  if (!(FAULT_KINDS as readonly string[]).includes(kind) || rest.length) {
    throw new FaultSpecError(`unknown fault "${spec}"; one of: ${FAULT_KINDS.join(", ")} (die-at:N)`);
  }
  if (kind === "die-at") {
    const n = Number(arg);
    if (!Number.isSafeInteger(n) || n <= 0) throw new FaultSpecError(`die-at needs a positive step, e.g. die-at:7`);
    return { kind, atStep: n };
  }
  if (arg !== undefined) throw new FaultSpecError(`fault ${kind} takes no argument`);
  return { kind: kind as FaultKind };
}

export function describeFault(f: Fault): string {
  return f.kind === "die-at" ? `die-at:${f.atStep}` : f.kind;
}

// ---------------------------------------------------------------- training time

/** The other data seed a `wrong-data` provider trains with (derived, so tests can reproduce it). */
export function wrongDataSeed(seed: string): string {
  return "0x" + createHash("sha256").update("gpuchain/fault/wrong-data\0").update(seed.toLowerCase()).digest("hex");
}

/**
 * skip-steps: the claimed states after `trained`: the last really computed state (or `start`) relabelled with each
 * skipped step number. Self-consistent hashes, but replaying any of these steps gives another state.
 */
export function fabricateSkipped(start: TrainingState, trained: TrainingState[], claimed: number): TrainingState[] {
  const last = trained.length ? trained[trained.length - 1] : start;
  const out: TrainingState[] = [];
  for (let i = trained.length; i < claimed; i++) out.push({ ...last, step: start.step + i + 1 });
  return out;
}

// ---------------------------------------------------------------- state level

/** The same state with random weights (deterministic in seed and step; momentum unchanged). */
export function garbageState(state: TrainingState, seed: string): TrainingState {
  const rng = u32Stream("gpuchain/fault/garbage-weights", seed, state.step);
  const weights = state.weights.map((w) => {
    const data = new Float32Array(w.data.length);
    for (let i = 0; i < data.length; i++) data[i] = uniformSymmetric(rng);
    return { ...w, dims: w.dims.slice(), data };
  });
  return { ...state, weights };
}

/** The same state with a NaN in its first weight tensor. */
export function nanState(state: TrainingState): TrainingState {
  const weights = state.weights.map((w, i) => {
    const data = new Float32Array(w.data);
    if (i === 0) data[0] = Number.NaN;
    return { ...w, dims: w.dims.slice(), data };
  });
  return { ...state, weights };
}

/** garbage-weights / nan: replaces the segment's final state (its hash follows, so the chain stays consistent). */
export function applyStateFault(fault: Fault | undefined, seg: Segment): Segment {
  if (fault?.kind !== "garbage-weights" && fault?.kind !== "nan") return seg;
  if (seg.states.length === 0) return seg;
  const states = seg.states.slice();
  const last = states[states.length - 1];
  states[states.length - 1] = fault.kind === "nan" ? nanState(last) : garbageState(last, seg.seed);
  return { ...seg, states };
}

// ---------------------------------------------------------------- upload level

/** A copy of `bytes` with its last byte flipped (changes the content hash; still the same length). */
export function corruptBytes(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes);
  out[out.length - 1] ^= 0xff;
  return out;
}

/** hash-mismatch: report the honest hash, upload other bytes under that name. */
export function hashMismatch(upload: Upload): Upload {
  return {
    ...upload,
    checkpointBytes: corruptBytes(upload.checkpointBytes),
    placeUnderReportedHash: true,
    faults: [...upload.faults, "hash-mismatch: the blob under the reported hash has other content"],
  };
}

/** replay-old: report an old checkpoint (hash and blob) again for the new step. Without one, honest. */
export function replayOld(upload: Upload, old: OldCheckpoint | undefined): Upload {
  if (!old) return upload;
  if (blobHash(old.bytes) !== old.hash.toLowerCase()) throw new Error("replay-old: old bytes do not match old hash");
  return {
    ...upload,
    checkpoint: decodeCheckpoint(old.bytes),
    checkpointBytes: old.bytes,
    reportedHash: old.hash.toLowerCase(),
    stateBlobs: [],
    faults: [...upload.faults, `replay-old: reports checkpoint ${old.hash} again at step ${upload.step}`],
  };
}

// ---------------------------------------------------------------- behaviours

/** The fault's own lines in the upload's `faults` notes (what it did, for the logs). */
function noted(upload: Upload, note: string): Upload {
  return { ...upload, faults: [...upload.faults, note] };
}

/** The behaviour of a provider with `fault` injected (undefined: HONEST). Each differs from HONEST where it acts. */
export function behaviourOf(fault: Fault | undefined): ProviderBehaviour {
  if (!fault) return HONEST;
  const base = { ...HONEST, fault: describeFault(fault) };
  switch (fault.kind) {
    case "wrong-data":
      return {
        ...base,
        stepOptions: (seed) => ({ dataSeedOverride: wrongDataSeed(seed) }),
        upload: (seg) => noted(honestUpload(seg), `wrong-data: trained with data seed ${wrongDataSeed(seg.seed)}`),
      };
    case "skip-steps":
      return {
        ...base,
        stepsToTrain: (claimed) => Math.floor(claimed / 2),
        fabricate: fabricateSkipped,
        upload: (seg) =>
          noted(honestUpload(seg), `skip-steps: trained ${seg.trainedSteps} of ${seg.states.length} claimed steps`),
      };
    case "garbage-weights":
    case "nan":
      return {
        ...base,
        upload: (seg) => noted(honestUpload(applyStateFault(fault, seg)), `${fault.kind}: final state replaced`),
      };
    case "hash-mismatch":
      return { ...base, upload: (seg) => hashMismatch(honestUpload(seg)) };
    case "replay-old":
      return { ...base, upload: (seg, old) => replayOld(honestUpload(seg), old) };
    case "die-at":
      return { ...base, diesAfter: (step) => step === fault.atStep };
    case "write-after-fence":
      return {
        ...base,
        ignoresFence: true,
        afterFenced: (w, job, epoch, last) => writeAfterFence(w, job, epoch, last),
      };
  }
}

/** Everything a (possibly faulty) provider uploads and reports for a trained segment. */
export function faultyUpload(seg: Segment, fault: Fault | undefined, ctx: { old?: OldCheckpoint } = {}): Upload {
  return behaviourOf(fault).upload(seg, ctx.old);
}
