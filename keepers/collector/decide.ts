/**
 * The verdict collector's decisions, pure: parse a verifier's submission, group signatures by digest (a signer
 * counts once), tell when `threshold` current owners signed, whether a decision still applies to the job as
 * it is on chain now (so a decision already on chain is never sent twice), whether an entry may stay in the pool
 * (`poolAction`), which submissions an owner may not add (`conflictReason`: one claim per owner per checkpoint,
 * one verdict per owner per job), whether a plain checkpoint decision must wait for a fault claim on that
 * checkpoint to be checked (`holdReason`, bounded per checkpoint), and for which owners' word it waits
 * (`silenceReason`, `silentOwners`) — and, composed of these, the whole decision on one pooled decision that has
 * its threshold (`nextStep`): the collector only reads the chain before it and acts on its answer.
 */
import { getAddress, isHexString } from "ethers";
import { DECISION_TIMEOUT_S } from "../coordinator/decide.ts";
import { isTraining, type JobView } from "../../sdk/rules/job.ts";
import type {
  CheckpointDecision,
  ClaimCheck,
  FaultRefusal,
  VerdictMessage,
} from "../../sdk/rules/verifierSignatures.ts";

/**
 * What the verifiers sign: a decision on one checkpoint, a refusal of it for a proven fault (a claim, when its
 * signer is the fault's finder), or the verdict on the final model.
 */
export type VerifierDecision =
  | { kind: "checkpoint"; message: CheckpointDecision }
  | { kind: "fault"; message: FaultRefusal }
  | { kind: "verdict"; message: VerdictMessage };

/** A verifier's signed "checked: not reproduced" answer to a claim (off chain only). */
export interface CheckSubmission {
  message: ClaimCheck;
  digest: string; // lower-case 0x…
  signer: string; // checksummed
  signature: string;
}

export interface Submission {
  decision: VerifierDecision;
  digest: string; // lower-case 0x…
  signer: string; // checksummed
  signature: string;
}

export interface Pending {
  digest: string;
  decision: VerifierDecision;
  /** lower-case signer → its signature (the first one received). */
  signatures: Map<string, { signer: string; signature: string }>;
}

export type Pool = Map<string, Pending>;

type Parsed<T> = T | string;

/** The submission in a POST /signatures or POST /claims body, or why it is not one. Digest and signature are
 * checked later. */
export function parseSubmission(body: unknown): Submission | string {
  const env = parseEnvelope(body, ["checkpoint", "verdict", "fault"]);
  if (typeof env === "string") return env;
  const { kind, m, jobId } = env;
  let decision: VerifierDecision;
  if (kind === "checkpoint" || kind === "fault") {
    const at = parseCheckpointRef(m);
    if (typeof at === "string") return at;
    if (kind === "checkpoint") {
      if (typeof m.accept !== "boolean") return "message.accept must be a boolean";
      decision = { kind, message: { jobId, ...at, accept: m.accept } };
    } else {
      const fault = parseFault(m.fault);
      if (typeof fault === "string") return fault;
      decision = { kind, message: { jobId, ...at, fault } };
    }
  } else {
    const metric = uint(m.metric, 256);
    if (!isHexString(m.modelHash, 32)) return "message.modelHash must be 32 bytes of hex";
    if (metric === undefined) return "message.metric must be an integer below 2^256";
    if (typeof m.passed !== "boolean") return "message.passed must be a boolean";
    decision = {
      kind: "verdict",
      message: { jobId, modelHash: String(m.modelHash).toLowerCase(), metric, passed: m.passed },
    };
  }
  return { decision, digest: env.digest, signer: env.signer, signature: env.signature };
}

/** A "not reproduced" check in a POST /claims body, or why it is not one. */
export function parseCheck(body: unknown): CheckSubmission | string {
  const env = parseEnvelope(body, ["check"]);
  if (typeof env === "string") return env;
  const at = parseCheckpointRef(env.m);
  if (typeof at === "string") return at;
  if (!isHexString(env.m.claimDigest, 32)) return "message.claimDigest must be 32 bytes of hex";
  if (env.m.reproduced !== false) return "message.reproduced must be false (a reproduced claim is signed instead)";
  const claimDigest = String(env.m.claimDigest).toLowerCase();
  const message = { jobId: env.jobId, ...at, claimDigest, reproduced: false };
  return { message, digest: env.digest, signer: env.signer, signature: env.signature };
}

type Envelope = {
  kind: string;
  m: Record<string, unknown>;
  jobId: bigint;
  digest: string;
  signer: string;
  signature: string;
};

/** The fields every signed body shares. */
function parseEnvelope(body: unknown, kinds: string[]): Parsed<Envelope> {
  if (!body || typeof body !== "object") return "body must be a JSON object";
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== "string" || !kinds.includes(b.kind))
    return `kind must be ${kinds.map((k) => `"${k}"`).join(" or ")}`;
  if (!isHexString(b.digest, 32)) return "digest must be 32 bytes of hex";
  if (!isHexString(b.signature, 65)) return "signature must be 65 bytes of hex";
  let signer: string;
  try {
    signer = getAddress(String(b.signer));
  } catch {
    return "signer is not an address";
  }
  const m = b.message as Record<string, unknown> | undefined;
  if (!m || typeof m !== "object") return "message must be an object";
  const jobId = uint(m.jobId, 256);
  if (jobId === undefined || jobId === 0n) return "message.jobId must be a positive integer below 2^256";
  return { kind: b.kind, m, jobId, digest: String(b.digest).toLowerCase(), signer, signature: String(b.signature) };
}

/** The checkpoint a message is about: epoch, step, checkpoint hash. */
function parseCheckpointRef(
  m: Record<string, unknown>,
): Parsed<{ epoch: bigint; step: number; checkpointHash: string }> {
  const epoch = uint(m.epoch, 64);
  const step = uint(m.step, 32);
  if (epoch === undefined) return "message.epoch must be an integer below 2^64";
  if (step === undefined || step === 0n) return "message.step must be a uint32 above 0";
  if (!isHexString(m.checkpointHash, 32)) return "message.checkpointHash must be 32 bytes of hex";
  return { epoch, step: Number(step), checkpointHash: String(m.checkpointHash).toLowerCase() };
}

function parseFault(v: unknown): Parsed<FaultRefusal["fault"]> {
  if (!v || typeof v !== "object") return "message.fault must be an object";
  const f = v as Record<string, unknown>;
  const step = uint(f.step, 32);
  if (step === undefined || step === 0n) return "message.fault.step must be a uint32 above 0";
  for (const k of ["inputHash", "committedHash", "replayedHash"] as const)
    if (!isHexString(f[k], 32)) return `message.fault.${k} must be 32 bytes of hex`;
  let finder: string;
  try {
    finder = getAddress(String(f.finder));
  } catch {
    return "message.fault.finder is not an address";
  }
  const hex = (k: "inputHash" | "committedHash" | "replayedHash") => String(f[k]).toLowerCase();
  return {
    step: Number(step),
    inputHash: hex("inputHash"),
    committedHash: hex("committedHash"),
    replayedHash: hex("replayedHash"),
    finder,
  };
}

/** A non-negative integer that fits the signed message's uintN field (out of range: undefined, a 400). */
function uint(v: unknown, bits: number): bigint | undefined {
  let n: bigint | undefined;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) n = BigInt(v);
  else if (typeof v === "string" && /^\d{1,78}$/.test(v)) n = BigInt(v);
  return n !== undefined && n < 1n << BigInt(bits) ? n : undefined;
}

/** Adds a verified submission to the pool. The same signer twice counts once. */
export function addSignature(pool: Pool, s: Submission): { added: boolean; count: number } {
  let entry = pool.get(s.digest);
  if (!entry) {
    entry = { digest: s.digest, decision: s.decision, signatures: new Map() };
    pool.set(s.digest, entry);
  }
  const key = s.signer.toLowerCase();
  const added = !entry.signatures.has(key);
  if (added) entry.signatures.set(key, { signer: s.signer, signature: s.signature });
  return { added, count: entry.signatures.size };
}

/**
 * `threshold` signatures from current owners (lower-case set), lowest addresses first, or undefined when fewer
 * signed. Signers who are no longer owners do not count.
 */
export function readySignatures(
  entry: Pending,
  owners: Set<string>,
  threshold: number,
): { signer: string; signature: string }[] | undefined {
  const valid = [...entry.signatures.entries()]
    .filter(([signer]) => owners.has(signer))
    .sort(([a], [b]) => (BigInt(a) < BigInt(b) ? -1 : 1))
    .map(([, s]) => s);
  return threshold > 0 && valid.length >= threshold ? valid.slice(0, threshold) : undefined;
}

/** The parts of a job (sdk/rules/job.ts) the collector compares a decision with (`reportedAt`: for the window). */
export type JobState = Pick<
  JobView,
  "status" | "epoch" | "totalSteps" | "acceptedStep" | "acceptedHash" | "pendingStep" | "pendingHash" | "pendingEpoch"
> &
  Partial<Pick<JobView, "reportedAt">>;

export type Applicability = { action: "send" | "wait" | "stale"; reason: string };

/**
 * Whether the decision can land now (send), may later (wait), or not as things stand (stale: drop it; `poolAction`
 * tells whether for good). With the chain's time (seconds) and the job's `reportedAt`, a pending checkpoint whose
 * decision window closed (`reportedAt + DECISION_TIMEOUT`) is stale too: it lapsed, nothing can decide it now.
 */
export function applicability(d: VerifierDecision, job: JobState, chainTimeS?: bigint): Applicability {
  if (d.kind === "checkpoint" || d.kind === "fault") {
    const m = d.message;
    // A checkpoint stays decidable, on the epoch it was reported at, after its reporter is unassigned.
    if (!isTraining(job.status)) return { action: "stale", reason: `job is ${job.status}` };
    if (job.pendingStep === m.step && eqHash(job.pendingHash, m.checkpointHash) && job.pendingEpoch === m.epoch) {
      if (chainTimeS !== undefined && job.reportedAt !== undefined && chainTimeS > job.reportedAt + DECISION_TIMEOUT_S)
        return { action: "stale", reason: "the checkpoint's decision window closed (lapsed)" };
      return { action: "send", reason: "pending checkpoint matches" };
    }
    if (job.epoch !== m.epoch) return { action: "stale", reason: `epoch moved on to ${job.epoch}` };
    if (job.pendingStep === 0 && job.acceptedStep < m.step)
      return { action: "wait", reason: "checkpoint not reported yet" };
    return {
      action: "stale",
      reason: `pending checkpoint is now step ${job.pendingStep}, accepted ${job.acceptedStep}`,
    };
  }
  const m = d.message;
  if (!isTraining(job.status)) return { action: "stale", reason: `job is ${job.status}` };
  if (job.acceptedStep < job.totalSteps) {
    return { action: "wait", reason: `training incomplete (${job.acceptedStep}/${job.totalSteps} accepted)` };
  }
  if (!eqHash(job.acceptedHash, m.modelHash))
    return { action: "stale", reason: "model hash is not the final checkpoint" };
  return { action: "send", reason: "final checkpoint accepted; no verdict yet" };
}

/**
 * Whether a pooled entry may stay in the pool (and the state file, and `GET /claims`) given the job as it is on
 * chain now: `keep` while it can land now (its checkpoint pending and decidable) or, for a verdict, while it may
 * still apply; otherwise it goes. `done` (dropped and answered "done" when re-sent) only when it can never apply
 * again: a job past training, a checkpoint of an older epoch or at or below the accepted step, a verdict on
 * another model than the final one. `forget` (dropped, pooled again if re-sent) when it is not pending now but a
 * later chain state could make it so: a checkpoint not reported (yet), another hash than the pending one, one
 * whose decision window closed (lapsed: the same report may come again), a job that does not exist (yet).
 */
export function poolAction(d: VerifierDecision, job: JobState, chainTimeS?: bigint): "keep" | "forget" | "done" {
  const a = applicability(d, job, chainTimeS);
  if (a.action === "send") return "keep";
  if (d.kind === "verdict") return a.action === "wait" ? "keep" : job.status === "None" ? "forget" : "done";
  if (job.status === "None") return "forget";
  const m = d.message;
  const final = !isTraining(job.status) || m.epoch < job.epoch || (m.epoch === job.epoch && m.step <= job.acceptedStep);
  return final ? "done" : "forget";
}

function eqHash(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The escrow call that carries a decision and its packed signatures. */
export function decisionCall(d: VerifierDecision, packed: string): { method: string; args: unknown[] } {
  if (d.kind === "fault") {
    const m = d.message;
    return { method: "refuseWithFault", args: [m.jobId, m.epoch, m.step, m.checkpointHash, { ...m.fault }, packed] };
  }
  if (d.kind === "checkpoint") {
    const m = d.message;
    return {
      method: m.accept ? "acceptCheckpoint" : "refuseCheckpoint",
      args: [m.jobId, m.epoch, m.step, m.checkpointHash, packed],
    };
  }
  const m = d.message;
  return { method: "submitVerdict", args: [m.jobId, m.modelHash, m.metric, m.passed, packed] };
}

export function describeDecision(d: VerifierDecision): Record<string, unknown> {
  if (d.kind === "fault") {
    const m = d.message;
    const f = m.fault;
    return {
      job: m.jobId,
      epoch: m.epoch,
      step: m.step,
      action: "refuse-with-fault",
      faultStep: f.step,
      finder: f.finder,
    };
  }
  if (d.kind === "checkpoint") {
    const m = d.message;
    return { job: m.jobId, epoch: m.epoch, step: m.step, action: m.accept ? "accept" : "refuse" };
  }
  const m = d.message;
  return { job: m.jobId, action: "verdict", passed: m.passed, metric: m.metric };
}

/** The checkpoint a decision is about, as a key (verdicts: undefined). */
export function checkpointOf(d: VerifierDecision): string | undefined {
  if (d.kind === "verdict") return undefined;
  const m = d.message;
  return `${m.jobId}:${m.epoch}:${m.step}:${m.checkpointHash.toLowerCase()}`;
}

/**
 * Whether a fault refusal entry is a claim: its finder signed it (the finder's own word). Only a claim holds
 * plain decisions and is listed by `GET /claims`; a fault refusal its finder did not sign (a confirmation of a
 * claim, or a refusal naming another address as finder) only counts toward its own threshold.
 */
export function isClaim(entry: Pending): boolean {
  return entry.decision.kind === "fault" && entry.signatures.has(entry.decision.message.fault.finder.toLowerCase());
}

/**
 * Why `s` may not be pooled (a 409), or undefined. One claim per owner per checkpoint, whatever its finder field
 * says: a fault refusal is the signer's claim unless it confirms another owner's claim (the same digest, already
 * signed by its finder), and a signer whose claim on the checkpoint is pooled gets no second one (another digest:
 * another fault, another finder). One verdict per owner per job: an owner signs one verdict on a job's final model.
 * A re-sent signature (same digest, same signer) is never a conflict.
 */
export function conflictReason(pool: Pool, s: Submission): string | undefined {
  const d = s.decision;
  if (d.kind === "checkpoint") return undefined;
  const signer = s.signer.toLowerCase();
  const same = pool.get(s.digest);
  if (same?.signatures.has(signer)) return undefined; // a re-send
  if (d.kind === "verdict") {
    for (const p of pool.values())
      if (p.digest !== s.digest && p.decision.kind === "verdict" && p.decision.message.jobId === d.message.jobId)
        if (p.signatures.has(signer))
          return `${s.signer} already signed a verdict on job ${d.message.jobId} (${p.digest}): one per owner per job`;
    return undefined;
  }
  const finder = d.message.fault.finder.toLowerCase();
  if (same && finder !== signer && isClaim(same)) return undefined; // a confirmation of another owner's claim
  const at = checkpointOf(d);
  for (const p of pool.values()) {
    if (p.digest === s.digest || p.decision.kind !== "fault" || checkpointOf(p.decision) !== at) continue;
    if (claimantOf(p) === signer || (p.signatures.has(signer) && !isClaim(p)))
      return `${s.signer} already has a fault claim on this checkpoint (${p.digest}): one per owner per checkpoint, whatever its finder`;
  }
  return undefined;
}

/** The owner whose claim an entry is (its finder, when it signed), or undefined. */
function claimantOf(p: Pending): string | undefined {
  return isClaim(p) && p.decision.kind === "fault" ? p.decision.message.fault.finder.toLowerCase() : undefined;
}

/** What the hold rule knows about one fault refusal: its entry, when it became a claim, who answered "no". */
export type ClaimState = { entry: Pending; firstSeenMs: number; notReproduced: Set<string> };

/**
 * Why a plain checkpoint decision (accept or refuse) must not be sent yet, or undefined. It waits while a fault
 * refusal of the same checkpoint has its threshold (that one goes first: the slash), and while a claim on it (a
 * fault refusal signed by its finder: `isClaim`; other fault refusals hold nothing) is unchecked: some current
 * owner other than the finder has neither signed the claim's fault refusal nor answered "not reproduced".
 *
 * The bound is per checkpoint, not per claim: nothing holds once `holdMs` passed since the checkpoint's hold
 * clock started, the earliest of when the first claim on it was seen (`firstSeenMs`) and `sinceMs` (when a plain
 * decision on it first had its threshold), whatever is posted later.
 */
export function holdReason(
  d: VerifierDecision,
  claims: ClaimState[],
  owners: Set<string>,
  threshold: number,
  nowMs: number,
  holdMs: number,
  sinceMs = Infinity,
): string | undefined {
  if (d.kind !== "checkpoint") return undefined;
  const at = checkpointOf(d);
  const onIt = claims.filter((c) => c.entry.decision.kind === "fault" && checkpointOf(c.entry.decision) === at);
  const start = Math.min(sinceMs, ...onIt.filter((c) => isClaim(c.entry)).map((c) => c.firstSeenMs));
  if (nowMs - start >= holdMs) return undefined;
  if (onIt.some((c) => readySignatures(c.entry, owners, threshold)))
    return "a fault refusal of this checkpoint goes first";
  for (const c of onIt) {
    if (!isClaim(c.entry) || c.entry.decision.kind !== "fault") continue;
    const finder = c.entry.decision.message.fault.finder.toLowerCase();
    const waiting = [...owners].filter((o) => o !== finder && !c.entry.signatures.has(o) && !c.notReproduced.has(o));
    if (waiting.length)
      return `fault claim by ${c.entry.decision.message.fault.finder} unchecked by ${waiting.join(", ")}`;
  }
  return undefined;
}

/**
 * What the collector knows of an owner's liveness: when it last posted a valid signed body (any kind, even one
 * about a decision already on chain), and how many checkpoints the collector had seen decided by then.
 */
export type Word = { atMs: number; decided: number };

/** An owner is silent once both have passed since its last word: `afterDecided` decided checkpoints, `afterMs`. */
export type SilenceRule = { afterDecided: number; afterMs: number };

export const SILENCE_DEFAULTS: SilenceRule = { afterDecided: 3, afterMs: 60_000 };

/**
 * Whether an owner whose last word is `last` is silent `now`: the collector saw at least `afterDecided`
 * checkpoints decided (ones it saw pending) since that word, AND at least `afterMs` passed. Both: an idle network
 * (no checkpoint) makes no one silent, and a verifier that is alive but ticks slowly while many jobs' checkpoints
 * are decided is not silent either. The next word ends it at once.
 */
export function isSilent(last: Word, now: Word, rule: SilenceRule): boolean {
  return now.decided - last.decided >= rule.afterDecided && now.atMs - last.atMs >= rule.afterMs;
}

/** The current owners that are silent now; an owner never heard from counts as having spoken at `start`. */
export function silentOwners(
  owners: Iterable<string>,
  words: ReadonlyMap<string, Word>,
  start: Word,
  now: Word,
  rule: SilenceRule,
): Set<string> {
  const out = new Set<string>();
  for (const o of owners) if (isSilent(words.get(o) ?? start, now, rule)) out.add(o);
  return out;
}

/**
 * Why a plain checkpoint decision that has its threshold waits for the owners that have not spoken on the
 * checkpoint yet (signed nothing about it: no decision, no claim), or undefined. One of them may be the only
 * verifier whose sample caught a fabricated step, about to claim it; so the decision waits for every current
 * owner's word, at most `waitMs` after it first had its threshold (`readySinceMs`) — except the owners in
 * `silent` (`silentOwners`: down, by the rule), which it does not wait for.
 */
export function silenceReason(
  d: VerifierDecision,
  pool: Pool,
  owners: Set<string>,
  readySinceMs: number,
  nowMs: number,
  waitMs: number,
  silent: ReadonlySet<string> = new Set(),
): string | undefined {
  if (d.kind !== "checkpoint" || nowMs - readySinceMs >= waitMs) return undefined;
  const at = checkpointOf(d);
  const spoke = new Set<string>(silent);
  for (const p of pool.values()) if (checkpointOf(p.decision) === at) for (const s of p.signatures.keys()) spoke.add(s);
  const waiting = [...owners].filter((o) => !spoke.has(o));
  return waiting.length ? `waiting up to ${waitMs} ms for ${waiting.join(", ")} (a claim may come)` : undefined;
}

/** What the collector knows when it decides on one pooled decision that has its threshold. */
export interface StepContext {
  /** The job at the head, and the head's time (seconds). */
  job: JobState;
  chainTimeS?: bigint;
  pool: Pool;
  claims: ClaimState[];
  owners: Set<string>;
  threshold: number;
  nowMs: number;
  /** How long fault claims may hold a plain decision, per checkpoint, and when its hold clock started (holdReason). */
  holdMs: number;
  holdSinceMs?: number;
  /** How long a decision waits for owners that have not spoken, and since when it waits (silenceReason). */
  quorumWaitMs: number;
  readySinceMs: number;
  silent: ReadonlySet<string>;
}

/**
 * What to do with it: `drop` it (stale; `remember` it as done when it can never apply again, poolAction), `wait`
 * for the chain (not applicable yet), for a fault claim on its checkpoint to be checked (`claim`) or for an owner
 * that has not spoken (`owner`), or `send` it. From `claim` on it is applicable now: the collector starts its clocks.
 */
export type Step =
  | { action: "drop"; remember: boolean; reason: string }
  | { action: "wait"; on: "chain" | "claim" | "owner"; reason: string }
  | { action: "send"; reason: string };

/** The collector's decision on `d`, pure: applicability, then the claim hold, then the quorum wait. */
export function nextStep(d: VerifierDecision, c: StepContext): Step {
  const a = applicability(d, c.job, c.chainTimeS);
  if (a.action === "stale")
    return { action: "drop", remember: poolAction(d, c.job, c.chainTimeS) === "done", reason: a.reason };
  if (a.action === "wait") return { action: "wait", on: "chain", reason: a.reason };
  const hold = holdReason(d, c.claims, c.owners, c.threshold, c.nowMs, c.holdMs, c.holdSinceMs);
  if (hold) return { action: "wait", on: "claim", reason: hold };
  const silent = silenceReason(d, c.pool, c.owners, c.readySinceMs, c.nowMs, c.quorumWaitMs, c.silent);
  if (silent) return { action: "wait", on: "owner", reason: silent };
  return { action: "send", reason: a.reason };
}
