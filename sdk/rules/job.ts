/**
 * The one off-chain model of a job: IJobEscrow.JobStatus mirrored once (test/helpers/jobModel.ts checks it against
 * the compiled ABI), named predicates over it, and the one reader of a job's on-chain state (`readJob`) that the
 * keepers, the agent and the verifier use. Pure except `readJob`, which only calls the two escrow views it is given,
 * and `readJobsBatched`, the same two views for many jobs through Multicall3.
 */

/** IJobEscrow.JobStatus, numbered as on chain. `statusOf` derives Settleable and ArbiterTimedOut from the clock. */
export const JobStatus = {
  None: 0,
  Open: 1,
  Running: 2,
  DisputeWindow: 3,
  Settleable: 4,
  Disputed: 5,
  ArbiterTimedOut: 6,
  Settled: 7,
  Cancelled: 8,
} as const;
export type JobStatusName = keyof typeof JobStatus;
export type JobStatusValue = (typeof JobStatus)[JobStatusName];

/** Status names by enum value. */
export const JOB_STATUS = Object.keys(JobStatus) as JobStatusName[];

/** The name of an on-chain status value; throws on a value the enum does not have (a newer contract). */
export function statusName(value: bigint | number): JobStatusName {
  const name = JOB_STATUS[Number(value)];
  if (name === undefined) throw new RangeError(`unknown JobStatus ${value} (the escrow is newer than this code)`);
  return name;
}

/** IJobEscrow.UnassignReason, numbered as on chain. */
export const UnassignReason = { Coordinator: 0, LeaseLapsed: 1, Refused: 2 } as const;

/**
 * Each unassign reason as people read it, the one table: `lost` names it in `gpuchain explain --json`, `short` on
 * the dashboard's timeline ("failover: alice taken away by the coordinator"), `why` inside a sentence.
 */
const UNASSIGN_REASONS = [
  // The chain records only that the coordinator did it; its reason (no heartbeat, or no progress within its
  // bounds) is the coordinator's to tell (GET /unassignments), so the sentence does not guess which.
  {
    lost: "heartbeats",
    short: "taken away by the coordinator",
    why: "the coordinator took the job away (no heartbeat or no progress within its bounds)",
  },
  { lost: "lease", short: "lease lapsed", why: "its on-chain lease lapsed" },
  { lost: "refused", short: "refused", why: "its checkpoint was refused by the Quality Guard" },
] as const;
export type UnassignReasonText = (typeof UNASSIGN_REASONS)[number];

/** The reason's texts; one this code does not know reads as the coordinator's, with an honest `why`. */
export function unassignReason(
  reason: unknown,
): UnassignReasonText | (Omit<UnassignReasonText, "why"> & { why: string }) {
  return (
    UNASSIGN_REASONS[Number(reason)] ?? {
      ...UNASSIGN_REASONS[0],
      why: `reason ${String(reason)}, unknown to this code`,
    }
  );
}

/** IJobEscrow.HoldEnd, numbered as on chain: how a hold ended without an accepted checkpoint. */
export const HoldEnd = { Unassigned: 0, LeaseLapsed: 1, Refused: 2 } as const;

/** How a forfeited hold ended, inside a sentence ("forfeited its 1.000000 USDC lock: …"). */
const HOLD_ENDS = [
  "no progress for the job's progress timeout, then the coordinator took the job away",
  "its lease lapsed before an accepted checkpoint",
  "its checkpoint was refused",
] as const;

/** The sentence part for a HoldEnd value; one this code does not know says so. */
export function holdEndText(how: unknown): string {
  return HOLD_ENDS[Number(how)] ?? `hold end ${String(how)}, unknown to this code`;
}

// ---------------------------------------------------------------- predicates (one meaning each, repo-wide)

/** Waiting for a provider. */
export const isOpen = (s: JobStatusName): boolean => s === "Open";
/** A provider holds the current epoch. */
export const isRunning = (s: JobStatusName): boolean => s === "Running";
/** Open or Running: steps may still be trained, reported and accepted, or the verdict submitted. */
export const isTraining = (s: JobStatusName): boolean => s === "Open" || s === "Running";
/** Past training (verdict submitted, or cancelled): no provider, coordinator or verifier ever acts on it again. */
export const isTrainingOver = (s: JobStatusName): boolean => s !== "None" && !isTraining(s);
/** Anyone may `settle` it now (the dispute window passed, or the arbiter stayed silent past the deadline). */
export const isSettleable = (s: JobStatusName): boolean => s === "Settleable" || s === "ArbiterTimedOut";
/** Final: the status never changes again (Settled or Cancelled). */
export const isFinished = (s: JobStatusName): boolean => s === "Settled" || s === "Cancelled";

// ---------------------------------------------------------------- the job as read from the chain

/** What `jobOf` returns (an ethers Result or a plain object with the same fields). */
export interface RawJob {
  client: string;
  epoch: bigint | number;
  templateId: string;
  seed: string;
  totalSteps: bigint | number;
  checkpointInterval: bigint | number;
  acceptedStep: bigint | number;
  pendingStep: bigint | number;
  leaseExpiresAt: bigint | number;
  disputeWindow: bigint | number;
  provider: string;
  lastProgressAt: bigint | number;
  pricePerStep: bigint | number;
  maxPricePerStep: bigint | number;
  budget: bigint | number;
  paid: bigint | number;
  acceptedHash: string;
  pendingHash: string;
  /** Who reported the pending checkpoint and at which epoch (it stays decidable after its reporter leaves). */
  pendingProvider?: string;
  pendingEpoch?: bigint | number;
  reportedAt?: bigint | number;
  progressTimeout?: bigint | number;
}

/** A job's on-chain state at one block, as plain values: hashes and ids lower-case, steps as numbers. */
export interface JobView {
  jobId: bigint;
  /** `statusOf` (the derived status), not the stored phase. */
  status: JobStatusName;
  client: string;
  provider: string;
  epoch: bigint;
  templateId: string;
  seed: string;
  totalSteps: number;
  checkpointInterval: number;
  acceptedStep: number;
  acceptedHash: string;
  pendingStep: number;
  pendingHash: string;
  /** The pending checkpoint's reporter and epoch: decisions name this epoch, acceptance credits this reporter. */
  pendingProvider: string;
  pendingEpoch: bigint;
  /** The pending checkpoint may be decided until reportedAt + DECISION_TIMEOUT. */
  reportedAt: bigint;
  /** This job's bound on an assignee's time without progress. */
  progressTimeout: bigint;
  leaseExpiresAt: bigint;
  disputeWindow: bigint;
  lastProgressAt: bigint;
  pricePerStep: bigint;
  maxPricePerStep: bigint;
  budget: bigint;
  paid: bigint;
}

export function toJobView(jobId: bigint, status: bigint | number, raw: RawJob): JobView {
  return {
    jobId,
    status: statusName(status),
    client: raw.client,
    provider: raw.provider,
    epoch: BigInt(raw.epoch),
    templateId: raw.templateId.toLowerCase(),
    seed: raw.seed.toLowerCase(),
    totalSteps: Number(raw.totalSteps),
    checkpointInterval: Number(raw.checkpointInterval),
    acceptedStep: Number(raw.acceptedStep),
    acceptedHash: raw.acceptedHash.toLowerCase(),
    pendingStep: Number(raw.pendingStep),
    pendingHash: raw.pendingHash.toLowerCase(),
    // Older fixtures omit them: a pending checkpoint then belongs to the current epoch and holder.
    pendingProvider: raw.pendingProvider ?? raw.provider,
    pendingEpoch: BigInt(raw.pendingEpoch ?? raw.epoch),
    reportedAt: BigInt(raw.reportedAt ?? 0),
    progressTimeout: BigInt(raw.progressTimeout ?? 0),
    leaseExpiresAt: BigInt(raw.leaseExpiresAt),
    disputeWindow: BigInt(raw.disputeWindow),
    lastProgressAt: BigInt(raw.lastProgressAt),
    pricePerStep: BigInt(raw.pricePerStep),
    maxPricePerStep: BigInt(raw.maxPricePerStep),
    budget: BigInt(raw.budget),
    paid: BigInt(raw.paid),
  };
}

/** Every step accepted: only the verdict is left (or already given). */
export const allStepsAccepted = (j: Pick<JobView, "acceptedStep" | "totalSteps">): boolean =>
  j.totalSteps > 0 && j.acceptedStep >= j.totalSteps;

/** The job ids 1..jobCount that `skip` does not rule out (e.g. jobs already known to be past training). */
export function jobIds(jobCount: bigint, skip: (jobId: bigint) => boolean = () => false): bigint[] {
  const ids: bigint[] = [];
  for (let id = 1n; id <= jobCount; id++) if (!skip(id)) ids.push(id);
  return ids;
}
