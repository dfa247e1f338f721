/**
 * Pure planning for the verifier runner: which decisions the chain is waiting for, what each decision's signed
 * message and collector body look like, and the verifier's secret sampling salt. No I/O.
 */
import { createHmac } from "node:crypto";
import { getBytes } from "ethers";
import {
  checkpointDecisionDigest,
  claimCheckDigest,
  faultRefusalDigest,
  verdictDigest,
  type CheckpointDecision,
  type ClaimCheck,
  type FaultRefusal,
  type VerdictMessage,
} from "../sdk/rules/verifierSignatures.ts";
import type { TypedDataDomain } from "ethers";
import { allStepsAccepted, isTraining, type JobView } from "../sdk/rules/job.ts";

export type CheckpointItem = {
  kind: "checkpoint";
  key: string;
  jobId: bigint;
  epoch: bigint;
  step: number;
  hash: string;
  templateId: string;
  seed: string;
  acceptedStep: number;
  acceptedHash: string;
  /** Who reported it (credited or slashed for it). */
  provider: string;
};

export type VerdictItem = {
  kind: "verdict";
  key: string;
  jobId: bigint;
  modelHash: string;
  templateId: string;
  seed: string;
  totalSteps: number;
};

export type WorkItem = CheckpointItem | VerdictItem;

/** The cache key of a checkpoint decision: a report is identified by (job, epoch, step, hash). */
export const checkpointKey = (jobId: bigint, epoch: bigint, step: number, hash: string) =>
  `checkpoint:${jobId}:${epoch}:${step}:${hash.toLowerCase()}`;
export const verdictKey = (jobId: bigint, modelHash: string) => `verdict:${jobId}:${modelHash.toLowerCase()}`;

/**
 * The decisions the chain is waiting for, in job order: the pending checkpoint of each Open or Running job (one
 * at most, on the epoch it was reported at: a report stays decidable after its reporter is unassigned, and a fenced
 * worker can never report), and a verdict for each Open or Running job whose every step is accepted.
 */
export function planWork(jobs: JobView[]): WorkItem[] {
  const items: WorkItem[] = [];
  for (const job of jobs) {
    const { jobId } = job;
    if (isTraining(job.status) && job.pendingStep !== 0) {
      items.push({
        kind: "checkpoint",
        key: checkpointKey(jobId, job.pendingEpoch, job.pendingStep, job.pendingHash),
        jobId,
        epoch: job.pendingEpoch,
        step: job.pendingStep,
        hash: job.pendingHash,
        templateId: job.templateId,
        seed: job.seed,
        acceptedStep: job.acceptedStep,
        acceptedHash: job.acceptedHash,
        provider: job.pendingProvider,
      });
    } else if (isTraining(job.status) && allStepsAccepted(job)) {
      items.push({
        kind: "verdict",
        key: verdictKey(jobId, job.acceptedHash),
        jobId,
        modelHash: job.acceptedHash,
        templateId: job.templateId,
        seed: job.seed,
        totalSteps: job.totalSteps,
      });
    }
  }
  return items;
}

/** JSON-safe messages: bigints as decimal strings. */
export type CheckpointMessageJson = {
  jobId: string;
  epoch: string;
  step: number;
  checkpointHash: string;
  accept: boolean;
};
export type VerdictMessageJson = { jobId: string; modelHash: string; metric: string; passed: boolean };
export type FaultJson = {
  step: number;
  inputHash: string;
  committedHash: string;
  replayedHash: string;
  finder: string;
};
export type FaultRefusalJson = Omit<CheckpointMessageJson, "accept"> & { fault: FaultJson };
export type ClaimCheckJson = Omit<CheckpointMessageJson, "accept"> & { claimDigest: string; reproduced: boolean };

type Signed<K extends string, M> = { kind: K; message: M; digest: string; signer: string; signature: string };

/**
 * The body a verifier POSTs to the collector (docs/ARCHITECTURE.md): checkpoint and verdict decisions to
 * /signatures; fault refusals (a claim when the signer is the finder, a confirmation otherwise) and claim checks
 * ("not reproduced") to /claims.
 */
export type SignatureBody =
  | Signed<"checkpoint", CheckpointMessageJson>
  | Signed<"verdict", VerdictMessageJson>
  | Signed<"fault", FaultRefusalJson>
  | Signed<"check", ClaimCheckJson>;
export type FaultBody = Signed<"fault", FaultRefusalJson>;

/** A signed decision, as cached (memory and file) and re-sent every tick until it is on chain. */
export type SignedDecision = { key: string; body: SignatureBody; decidedAt: number };

/** The checkpoint every checkpoint-level message names, typed and as JSON. */
function checkpointRef(item: CheckpointItem) {
  return {
    typed: { jobId: item.jobId, epoch: item.epoch, step: item.step, checkpointHash: item.hash },
    json: { jobId: item.jobId.toString(), epoch: item.epoch.toString(), step: item.step, checkpointHash: item.hash },
  };
}

export function checkpointMessage(
  item: CheckpointItem,
  accept: boolean,
): { message: CheckpointMessageJson; typed: CheckpointDecision } {
  const at = checkpointRef(item);
  return { typed: { ...at.typed, accept }, message: { ...at.json, accept } };
}

export function verdictMessage(
  item: VerdictItem,
  metric: bigint,
  passed: boolean,
): { message: VerdictMessageJson; typed: VerdictMessage } {
  const typed = { jobId: item.jobId, modelHash: item.modelHash, metric, passed };
  return {
    typed,
    message: { jobId: item.jobId.toString(), modelHash: item.modelHash, metric: metric.toString(), passed },
  };
}

/** The FaultRefusal a claim (or a confirmation of one) signs, as typed data and as JSON. */
export function faultMessage(message: FaultRefusalJson): FaultRefusal {
  const f = message.fault;
  return {
    jobId: BigInt(message.jobId),
    epoch: BigInt(message.epoch),
    step: message.step,
    checkpointHash: message.checkpointHash,
    fault: {
      step: f.step,
      inputHash: f.inputHash,
      committedHash: f.committedHash,
      replayedHash: f.replayedHash,
      finder: f.finder,
    },
  };
}

/** The claim `finder` makes on `item` for a replay fault. */
export function claimMessage(
  item: CheckpointItem,
  fault: { step: number; inputHash: string; committedHash: string; replayedHash: string },
  finder: string,
): FaultRefusalJson {
  const { step, inputHash, committedHash, replayedHash } = fault;
  return { ...checkpointRef(item).json, fault: { step, inputHash, committedHash, replayedHash, finder } };
}

/** "Checked: not reproduced" for the claim with `claimDigest` on `item`. */
export function checkMessage(
  item: CheckpointItem,
  claimDigest: string,
): { message: ClaimCheckJson; typed: ClaimCheck } {
  const at = checkpointRef(item);
  const answer = { claimDigest, reproduced: false };
  return { typed: { ...at.typed, ...answer }, message: { ...at.json, ...answer } };
}

export function digestOf(
  domain: TypedDataDomain,
  body:
    | { kind: "checkpoint"; typed: CheckpointDecision }
    | { kind: "verdict"; typed: VerdictMessage }
    | { kind: "fault"; typed: FaultRefusal }
    | { kind: "check"; typed: ClaimCheck },
): string {
  switch (body.kind) {
    case "checkpoint":
      return checkpointDecisionDigest(domain, body.typed);
    case "verdict":
      return verdictDigest(domain, body.typed);
    case "fault":
      return faultRefusalDigest(domain, body.typed);
    case "check":
      return claimCheckDigest(domain, body.typed);
  }
}

/**
 * The steps a verifier replays must be unknown to the provider when it commits, differ between verifiers, and stay
 * the same across this verifier's restarts (so a restart re-derives the same decision instead of possibly signing
 * the opposite one). HMAC-SHA256 keyed by the verifier's private key over the report gives all three.
 */
export function sampleSalt(privateKey: string, chainId: bigint, escrow: string, item: CheckpointItem): string {
  const data = [
    "gpuchain/verifier/sample-salt/v1",
    chainId,
    escrow.toLowerCase(),
    item.jobId,
    item.epoch,
    item.step,
    item.hash.toLowerCase(),
  ].join("|");
  return "0x" + createHmac("sha256", getBytes(privateKey)).update(data).digest("hex");
}
