/**
 * The one off-chain model of a job: IJobEscrow.JobStatus mirrored once (test/helpers/jobModel.ts checks it against
 * the compiled ABI), named predicates over it, and the one reader of a job's on-chain state (`readJob`) that the
 * keepers, the agent and the verifier use. Pure except `readJob`, which only calls the two escrow views it is given,
 * and `readJobsBatched`, the same two views for many jobs through Multicall3.
 */
import type { Interface } from "ethers";
import { valueOf, type BatchReader, type ViewCall } from "./multicall.ts";

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

/** The two escrow views a job is read from (a connected JobEscrow satisfies it). */
export interface JobReader {
  statusOf(...args: [bigint] | [bigint, { blockTag: number }]): Promise<bigint>;
  jobOf(...args: [bigint] | [bigint, { blockTag: number }]): Promise<RawJob>;
}

/** Reads one job, both views at the same block when `blockTag` is given (so status and fields agree). */
export async function readJob(escrow: JobReader, jobId: bigint, blockTag?: number): Promise<JobView> {
  const [status, raw] =
    blockTag === undefined
      ? await Promise.all([escrow.statusOf(jobId), escrow.jobOf(jobId)])
      : await Promise.all([escrow.statusOf(jobId, { blockTag }), escrow.jobOf(jobId, { blockTag })]);
  return toJobView(jobId, status, raw);
}

/** The job ids 1..jobCount that `skip` does not rule out (e.g. jobs already known to be past training). */
export function jobIds(jobCount: bigint, skip: (jobId: bigint) => boolean = () => false): bigint[] {
  const ids: bigint[] = [];
  for (let id = 1n; id <= jobCount; id++) if (!skip(id)) ids.push(id);
  return ids;
}

// ---------------------------------------------------------------- many jobs in one request

/** What `readJobsBatched` needs: a Multicall3 reader (sdk/multicall.ts) and the escrow's address and ABI. */
export interface BatchedJobSource {
  reader: BatchReader;
  escrow: string;
  iface: Interface;
}

/** `statusOf` + `jobOf` of every id at `blockTag` through Multicall3 (2 reads per job, 200 reads per eth_call). */
export async function readJobsBatched(src: BatchedJobSource, ids: bigint[], blockTag: number): Promise<JobView[]> {
  const calls: ViewCall[] = ids.flatMap((id) => [
    { target: src.escrow, iface: src.iface, fn: "statusOf", args: [id] },
    { target: src.escrow, iface: src.iface, fn: "jobOf", args: [id] },
  ]);
  const results = await src.reader.read(calls, blockTag);
  return ids.map((id, i) => {
    const status = valueOf(results[2 * i])[0] as bigint;
    const raw = valueOf(results[2 * i + 1])[0] as RawJob;
    return toJobView(id, status, raw);
  });
}
