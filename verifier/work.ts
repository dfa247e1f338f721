/**
 * Pure planning for the verifier runner: which decisions the chain is waiting for, what each decision's signed
 * message and collector body look like, and the verifier's secret sampling salt. No I/O.
 */
import { createHmac } from "node:crypto";
import { getBytes } from "ethers";
import {
  checkpointDecisionDigest,
  verdictDigest,
  type CheckpointDecision,
  type VerdictMessage,
} from "../sdk/verifierSignatures.ts";
import type { TypedDataDomain } from "ethers";
import { allStepsAccepted, isTraining, type JobView } from "../sdk/job.ts";

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

/** The body a verifier POSTs to the collector's /signatures (docs/ARCHITECTURE.md). */
export type SignatureBody =
  | { kind: "checkpoint"; message: CheckpointMessageJson; digest: string; signer: string; signature: string }
  | { kind: "verdict"; message: VerdictMessageJson; digest: string; signer: string; signature: string };

/** A signed decision, as cached (memory and file) and re-sent every tick until it is on chain. */
export type SignedDecision = { key: string; body: SignatureBody; decidedAt: number };

export function checkpointMessage(
  item: CheckpointItem,
  accept: boolean,
): { message: CheckpointMessageJson; typed: CheckpointDecision } {
  const typed = { jobId: item.jobId, epoch: item.epoch, step: item.step, checkpointHash: item.hash, accept };
  return {
    typed,
    message: {
      jobId: item.jobId.toString(),
      epoch: item.epoch.toString(),
      step: item.step,
      checkpointHash: item.hash,
      accept,
    },
  };
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

export function digestOf(
  domain: TypedDataDomain,
  body: { kind: "checkpoint"; typed: CheckpointDecision } | { kind: "verdict"; typed: VerdictMessage },
): string {
  return body.kind === "checkpoint" ? checkpointDecisionDigest(domain, body.typed) : verdictDigest(domain, body.typed);
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
