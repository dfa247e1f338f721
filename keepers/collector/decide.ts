/**
 * The verdict collector's decisions, pure: parse a verifier's submission, group signatures by digest (a signer
 * counts once), tell when `threshold` current owners signed, and whether a decision still applies to the job as
 * it is on chain now (so a decision already on chain is never sent twice).
 */
import { getAddress, isHexString } from "ethers";
import { isTraining, type JobView } from "../../sdk/job.ts";
import type { CheckpointDecision, VerdictMessage } from "../../sdk/verifierSignatures.ts";

/** What the verifiers sign: a decision on one checkpoint, or the verdict on the final model. */
export type VerifierDecision =
  { kind: "checkpoint"; message: CheckpointDecision } | { kind: "verdict"; message: VerdictMessage };

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

/** The submission in a POST /signatures body, or why it is not one. Digest and signature are checked later. */
export function parseSubmission(body: unknown): Submission | string {
  if (!body || typeof body !== "object") return "body must be a JSON object";
  const b = body as Record<string, unknown>;
  if (b.kind !== "checkpoint" && b.kind !== "verdict") return 'kind must be "checkpoint" or "verdict"';
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
  let decision: VerifierDecision;
  if (b.kind === "checkpoint") {
    const epoch = uint(m.epoch, 64);
    const step = uint(m.step, 32);
    if (epoch === undefined) return "message.epoch must be an integer below 2^64";
    if (step === undefined || step === 0n || step > 0xffffffffn) return "message.step must be a uint32 above 0";
    if (!isHexString(m.checkpointHash, 32)) return "message.checkpointHash must be 32 bytes of hex";
    if (typeof m.accept !== "boolean") return "message.accept must be a boolean";
    decision = {
      kind: "checkpoint",
      message: {
        jobId,
        epoch,
        step: Number(step),
        checkpointHash: String(m.checkpointHash).toLowerCase(),
        accept: m.accept,
      },
    };
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
  return { decision, digest: String(b.digest).toLowerCase(), signer, signature: String(b.signature) };
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

/** The parts of a job (sdk/job.ts) the collector compares a decision with. */
export type JobState = Pick<
  JobView,
  "status" | "epoch" | "totalSteps" | "acceptedStep" | "acceptedHash" | "pendingStep" | "pendingHash" | "pendingEpoch"
>;

export type Applicability = { action: "send" | "wait" | "stale"; reason: string };

/** Whether the decision can land now (send), may later (wait), or never again (stale: drop it). */
export function applicability(d: VerifierDecision, job: JobState): Applicability {
  if (d.kind === "checkpoint") {
    const m = d.message;
    // A checkpoint stays decidable, on the epoch it was reported at, after its reporter is unassigned.
    if (!isTraining(job.status)) return { action: "stale", reason: `job is ${job.status}` };
    if (job.pendingStep === m.step && eqHash(job.pendingHash, m.checkpointHash) && job.pendingEpoch === m.epoch) {
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

function eqHash(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The escrow call that carries a decision and its packed signatures. */
export function decisionCall(d: VerifierDecision, packed: string): { method: string; args: unknown[] } {
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
  if (d.kind === "checkpoint") {
    const m = d.message;
    return { job: m.jobId, epoch: m.epoch, step: m.step, action: m.accept ? "accept" : "refuse" };
  }
  const m = d.message;
  return { job: m.jobId, action: "verdict", passed: m.passed, metric: m.metric };
}
