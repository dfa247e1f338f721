/** Jobs as the escrow's `jobOf` returns them, for the pure tests of what keepers, agent and verifier decide. */
import { ZeroAddress } from "ethers";
import type { CoordinatorJob } from "../../keepers/coordinator/decide.ts";
import { JobStatus, toJobView, type JobStatusName, type JobView, type RawJob } from "../../sdk/rules/job.ts";

const ZERO = "0x" + "00".repeat(32);

/** A `jobOf` record: an Open 30-step job with nothing accepted, unless `over` says otherwise. */
export function rawJob(over: Partial<RawJob> = {}): RawJob {
  return {
    client: ZeroAddress,
    epoch: 1n,
    templateId: ZERO,
    seed: ZERO,
    totalSteps: 30n,
    checkpointInterval: 10n,
    acceptedStep: 0n,
    pendingStep: 0n,
    leaseExpiresAt: 0n,
    disputeWindow: 3_600n,
    provider: ZeroAddress,
    lastProgressAt: 0n,
    pricePerStep: 0n,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    paid: 0n,
    acceptedHash: ZERO,
    pendingHash: ZERO,
    ...over,
  };
}

/** The job model's view of job `jobId` in `status`, read from `raw`. */
export const jobView = (jobId: bigint, status: JobStatusName, raw: RawJob = rawJob()): JobView =>
  toJobView(jobId, JobStatus[status], raw);

/** The coordinator's view of an Open 100-step job with nothing accepted, unless `over` says otherwise. */
export function openJob(over: Partial<CoordinatorJob> = {}): CoordinatorJob {
  return {
    jobId: 1n,
    status: "Open",
    epoch: 0n,
    templateId: ZERO,
    totalSteps: 100,
    acceptedStep: 0,
    pendingStep: 0,
    maxPricePerStep: 1_000n,
    checkpointInterval: 10,
    budget: 100_000n,
    paid: 0n,
    provider: ZeroAddress,
    leaseExpiresAt: 0n,
    ...over,
  };
}
