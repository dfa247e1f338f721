/**
 * The agent's decisions, apart from I/O: what to send to the registry, which jobs are ours, whether we are fenced,
 * how far the next segment goes, and whether a trained segment may be reported now. Every input is chain state
 * read fresh (the agent never trusts its own memory across a tick), so a restarted agent decides the same.
 */
import { getAddress } from "ethers";
import { isRunning, type JobView } from "../sdk/rules/job.ts";
import { ZERO_HASH } from "../workloads/index.ts";

// ---------------------------------------------------------------- registry

/** IProviderRegistry.Provider, as read from `providerOf`. */
export interface ProviderRecord {
  name: string;
  deviceModel: string;
  pricePerStep: bigint;
  memoryMiB: number;
  kind: number;
  active: boolean;
  registeredAt: bigint;
}

export interface Offer {
  name: string;
  pricePerStep: bigint;
  kind: 0 | 1;
  deviceModel: string;
  memoryMiB: number;
}

export type RegistrationCall =
  | { fn: "register"; args: [string, bigint, 0 | 1, string, number] }
  | { fn: "update"; args: [bigint, 0 | 1, string, number] }
  | { fn: "reactivate"; args: [] };

export interface RegistrationPlan {
  calls: RegistrationCall[];
  notes: string[];
}

export function toProviderRecord(raw: {
  name: string;
  deviceModel: string;
  pricePerStep: bigint;
  memoryMiB: bigint | number;
  kind: bigint | number;
  active: boolean;
  registeredAt: bigint | number;
}): ProviderRecord {
  return {
    name: raw.name,
    deviceModel: raw.deviceModel,
    pricePerStep: BigInt(raw.pricePerStep),
    memoryMiB: Number(raw.memoryMiB),
    kind: Number(raw.kind),
    active: raw.active,
    registeredAt: BigInt(raw.registeredAt),
  };
}

/** Idempotent: the same offer sends nothing; another offer updates; an inactive provider is reactivated. */
export function decideRegistration(current: ProviderRecord | undefined, offer: Offer): RegistrationPlan {
  const update = { fn: "update", args: [offer.pricePerStep, offer.kind, offer.deviceModel, offer.memoryMiB] } as const;
  if (!current || current.registeredAt === 0n) {
    return {
      calls: [
        { fn: "register", args: [offer.name, offer.pricePerStep, offer.kind, offer.deviceModel, offer.memoryMiB] },
      ],
      notes: [],
    };
  }
  const calls: RegistrationCall[] = [];
  const notes: string[] = [];
  const same =
    current.pricePerStep === offer.pricePerStep &&
    current.kind === offer.kind &&
    current.deviceModel === offer.deviceModel &&
    current.memoryMiB === offer.memoryMiB;
  if (!same) calls.push({ fn: "update", args: [...update.args] });
  if (!current.active) calls.push({ fn: "reactivate", args: [] });
  if (current.name !== offer.name) {
    notes.push(`registered as "${current.name}"; the registry cannot rename, so --name "${offer.name}" is ignored`);
  }
  return { calls, notes };
}

// ---------------------------------------------------------------- jobs

const same = (a: string, b: string) => getAddress(a) === getAddress(b);

/** Running jobs currently assigned to `me`, lowest id first (the agent works one at a time). */
export function assignedJobs(jobs: JobView[], me: string): JobView[] {
  return jobs.filter((j) => isRunning(j.status) && same(j.provider, me)).sort((a, b) => (a.jobId < b.jobId ? -1 : 1));
}

/** Why `me` may no longer write to `jobId` at `epoch` (undefined: still the assignee). */
export function fenceReason(job: JobView, epoch: bigint, me: string): string | undefined {
  if (job.epoch !== epoch) return `epoch moved on (${epoch} -> ${job.epoch})`;
  if (!isRunning(job.status)) return `job is no longer running (status ${job.status})`;
  if (!same(job.provider, me)) return `job is assigned to ${job.provider}`;
  return undefined;
}

export type JobPlan =
  | { kind: "train" }
  | { kind: "wait-final" } // the final checkpoint is pending
  | { kind: "done" }; // every step accepted; the verdict is the verifiers' business

export function planJob(job: JobView): JobPlan {
  if (job.acceptedStep >= job.totalSteps) return { kind: "done" };
  if (job.pendingStep >= job.totalSteps) return { kind: "wait-final" };
  return { kind: "train" };
}

/** A resumed job's first segment is this fraction of an interval (a takeover is confirmed sooner). */
export const RESUME_SEGMENT_DIVISOR = 10;

/**
 * The step the next segment ends at: one checkpoint interval past its start, or the last step. `resuming`: the
 * first segment of a job taken over with progress on it (after a failover or a restart) is a tenth of an interval,
 * so the new holder's first checkpoint is accepted seconds after it starts (one checkpoint more per takeover).
 */
export function segmentTarget(baseStep: number, interval: number, totalSteps: number, resuming = false): number {
  // Only where an interval is long enough for a tenth of it to be worth a checkpoint of its own (≥ 2 steps).
  const short = resuming && interval >= 2 * RESUME_SEGMENT_DIVISOR;
  const steps = short ? Math.ceil(interval / RESUME_SEGMENT_DIVISOR) : interval;
  return Math.min(baseStep + steps, totalSteps);
}

/** Whether the pending checkpoint is one we may build on: undecided, at our epoch (so ours), and not the last. */
export function pendingUsable(job: JobView): boolean {
  return job.pendingStep !== 0 && job.pendingStep < job.totalSteps;
}

export type ReportDecision =
  | { kind: "report" }
  | { kind: "wait"; reason: string }
  | { kind: "discard"; reason: string }
  | { kind: "fenced"; reason: string };

/** A trained segment (startStep → step, built on prevHash) may be reported once its base is the accepted one. */
export function reportDecision(
  job: JobView,
  ctx: { epoch: bigint; me: string; startStep: number; prevHash: string; step: number },
): ReportDecision {
  const fenced = fenceReason(job, ctx.epoch, ctx.me);
  if (fenced) return { kind: "fenced", reason: fenced };
  if (job.pendingStep !== 0) return { kind: "wait", reason: `checkpoint at step ${job.pendingStep} is undecided` };
  const accepted = job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash;
  if (job.acceptedStep !== ctx.startStep || accepted !== ctx.prevHash.toLowerCase()) {
    return {
      kind: "discard",
      reason: `segment starts at step ${ctx.startStep}, but the accepted checkpoint is at step ${job.acceptedStep}`,
    };
  }
  if (
    ctx.step <= job.acceptedStep ||
    ctx.step > job.acceptedStep + job.checkpointInterval ||
    ctx.step > job.totalSteps
  ) {
    return { kind: "discard", reason: `step ${ctx.step} is not reportable after step ${job.acceptedStep}` };
  }
  return { kind: "report" };
}

/** On-chain heartbeat period: a third of the lease, so two may fail before it lapses. */
export function leaseHeartbeatMs(leaseDurationSeconds: bigint): number {
  return Math.max(1_000, Number(leaseDurationSeconds * 1000n) / 3);
}

// ---------------------------------------------------------------- training ahead (never waiting on the protocol)

/** Finished segments the agent keeps trained ahead of the chain (unreported, each built on the one before). */
export const MAX_AHEAD = 2;

/** A checkpoint by its step and hash (the reported/committed one a segment builds on, or a segment's own). */
export interface Link {
  step: number;
  hash: string;
}

/** A segment trained ahead: built on `prev`, ending at `step` with checkpoint `hash`. */
export interface AheadLink extends Link {
  prev: Link;
}

/**
 * What the next segment builds on, as the chain says: the live pending checkpoint (anyone's at this epoch; it is
 * reported only once accepted), else the accepted one. The final checkpoint pending means nothing is left to train.
 */
export function chainTip(job: JobView): Link {
  if (job.pendingStep !== 0) return { step: job.pendingStep, hash: job.pendingHash.toLowerCase() };
  return { step: job.acceptedStep, hash: job.acceptedStep === 0 ? ZERO_HASH : job.acceptedHash.toLowerCase() };
}

/**
 * How many queued segments still chain from `tip` (in order: the first built on the tip, each next on the one
 * before). The rest were built on a state the chain no longer holds (the checkpoint under them was refused, or
 * lapsed): they are dropped and retrained from the chain's tip.
 */
export function aheadKept(tip: Link, queue: AheadLink[]): number {
  let at = tip;
  for (let i = 0; i < queue.length; i++) {
    const q = queue[i];
    if (q.prev.step !== at.step || q.prev.hash.toLowerCase() !== at.hash.toLowerCase()) return i;
    at = q;
  }
  return queue.length;
}

/** Whether a segment being trained on `base` still builds on something the chain or the kept queue holds. */
export function baseLive(base: Link, tip: Link, kept: Link[]): boolean {
  const same = (a: Link) => a.step === base.step && a.hash.toLowerCase() === base.hash.toLowerCase();
  return same(tip) || kept.some(same);
}

/** What became of a checkpoint this agent reported, as the chain now says (undefined: still undecided). */
export function reportedOutcome(job: JobView, r: Link): "accepted" | "dropped" | undefined {
  if (job.acceptedStep >= r.step) return "accepted";
  if (job.pendingStep === r.step && job.pendingHash.toLowerCase() === r.hash.toLowerCase()) return undefined;
  return "dropped"; // refused, lapsed, or discarded by an unassign
}
