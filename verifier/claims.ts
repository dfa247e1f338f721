/**
 * Fault claims among verifiers (docs/ARCHITECTURE.md, "Fault claims"): when a claim may be made, and how another
 * verifier re-checks one with a single step's replay. A claim is a FaultRefusal signed by its finder; the finder
 * stores the committed input state and its recomputed output state under their state hashes (the store is content
 * addressed, so `inputHash` and `replayedHash` are where they lie).
 *
 * Only a provable, deterministic fault makes a claim: a replay mismatch from the committed input state to a finite
 * state, on a provider whose arithmetic profile is proven bit-compatible with this verifier's. A committed state
 * whose own bytes are defective (undecodable, other shapes, another step label, non-finite where honest training
 * does not make it) becomes such a mismatch: the finder replays up to it (verifier/checks.ts proveDefect). A missing
 * blob, an unreachable store, a blob that hashes wrong or an accuracy dip never do (they refuse, or abstain).
 */
import {
  committedAt,
  getState,
  mismatchIsEvidence,
  NotFoundError,
  putState,
  replayStep,
  stateHash,
  StoreUnavailableError,
  type CheckpointStore,
  type Template,
  type TrainingState,
  workSeedOf,
} from "../workloads/index.ts";
import {
  acceptedState,
  isFiniteState,
  loadReported,
  stateBytesOf,
  StoreOutageError,
  type ReplayContext,
  type ReplayFault,
} from "./checks.ts";
import type { CheckpointItem, FaultRefusalJson } from "./work.ts";

/** Why a replay mismatch against this provider is no evidence (undefined when it is). Pure. */
export function claimUnprovenReason(
  template: Template,
  providerProfile: string | undefined,
  verifierProfile: string,
): string | undefined {
  if (mismatchIsEvidence(template, providerProfile, verifierProfile)) return undefined;
  return providerProfile === undefined
    ? "the provider's arithmetic profile is not known"
    : `provider profile ${providerProfile} is not proven bit-compatible with ${verifierProfile}`;
}

/** Whether a claim's message is about this very checkpoint (the collector lists every pending claim). */
export function claimIsFor(m: FaultRefusalJson, item: CheckpointItem): boolean {
  return (
    m.jobId === item.jobId.toString() &&
    m.epoch === item.epoch.toString() &&
    m.step === item.step &&
    m.checkpointHash.toLowerCase() === item.hash.toLowerCase()
  );
}

/** Stores the fault's input and replayed states so other verifiers can re-check it with one step. */
export async function publishEvidence(store: CheckpointStore, fault: ReplayFault): Promise<void> {
  const states = [fault.input, fault.replayed].filter((s): s is TrainingState => s !== undefined);
  try {
    for (const s of states) await putState(store, s);
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw new StoreOutageError(`storing claim evidence: ${err.message}`);
    throw err;
  }
}

export type RecheckInput = ReplayContext & {
  item: CheckpointItem;
  claim: FaultRefusalJson;
  /** The re-checking verifier's own arithmetic profile (a mismatch is evidence only against a compatible one). */
  verifierProfile: string;
};

export type RecheckResult = { reproduced: boolean; why: string };

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Re-checks a claim with one step's replay: the checkpoint must commit the claim's input and output hashes at the
 * fault step, the committed input state (from the store, its hash checked) replayed for that step must give the
 * claim's replayed hash, not the committed one. Throws StoreOutageError when the store cannot answer (no answer
 * is given then: an I/O failure is evidence of nothing).
 */
export async function recheckClaim(input: RecheckInput): Promise<RecheckResult> {
  const { trainer, store, item, claim } = input;
  const f = claim.fault;
  const no = (why: string): RecheckResult => ({ reproduced: false, why });
  if (!claimIsFor(claim, item)) return no("the claim is about another checkpoint");
  if (f.step <= item.acceptedStep || f.step > item.step)
    return no(`fault step ${f.step} is outside (${item.acceptedStep}, ${item.step}]`);
  if (same(f.committedHash, f.replayedHash)) return no("the claimed replay equals the committed hash");
  let c;
  try {
    c = await loadReported(store, item.hash);
  } catch (err) {
    if (err instanceof StoreOutageError) throw err;
    return no(`the checkpoint cannot be read: ${(err as Error).message}`);
  }
  const unproven = claimUnprovenReason(input.template, c.profile, input.verifierProfile);
  if (unproven) return no(unproven);
  if (!same(c.maker, item.provider)) return no(`the checkpoint is made by ${c.maker}, reported by ${item.provider}`);
  const i = f.step - c.startStep - 1;
  if (c.startStep !== item.acceptedStep || i < 0 || i >= c.stepHashes.length)
    return no(`the checkpoint does not cover step ${f.step}`);
  const committedInput = committedAt(c, f.step - 1);
  if (!same(committedInput, f.inputHash)) return no(`input hash ${f.inputHash} is not the committed ${committedInput}`);
  if (!same(committedAt(c, f.step), f.committedHash))
    return no(`committed hash ${f.committedHash} is not the checkpoint's ${committedAt(c, f.step)}`);
  const state = await inputState(input, i === 0, f.inputHash);
  if (typeof state === "string") return no(state);
  const next = await replayStep(trainer, state, workSeedOf(c), f.step);
  if (!isFiniteState(next)) return no(`step ${f.step} replays to a non-finite state: its NaN bits are no evidence`);
  const replayed = stateHash(next);
  if (same(replayed, f.committedHash)) return no(`step ${f.step} replays to the committed hash ${replayed}`);
  if (!same(replayed, f.replayedHash))
    return no(`step ${f.step} replays to ${replayed}, neither the committed nor the claimed ${f.replayedHash}`);
  return { reproduced: true, why: `step ${f.step} replays to ${replayed}, committed ${f.committedHash}` };
}

/** The committed state before the fault step: the job's accepted state, or the stored one (its hash checked). */
async function inputState(input: RecheckInput, isStart: boolean, hash: string): Promise<TrainingState | string> {
  const { template, store, item, cache } = input;
  try {
    const s = isStart
      ? (await acceptedState(template, store, item, cache)).state
      : await getState(store, hash, stateBytesOf(template));
    const actual = stateHash(s);
    return same(actual, hash) ? s : `the stored input state hashes to ${actual}, not ${hash}`;
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw new StoreOutageError(`claim input state: ${err.message}`);
    if (err instanceof StoreOutageError) throw err;
    if (err instanceof NotFoundError) return `the input state ${hash} is not in the store`;
    return `the input state ${hash} cannot be read: ${(err as Error).message}`;
  }
}
