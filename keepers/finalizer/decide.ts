/**
 * The finalizer's decisions, pure: settle jobs whose dispute window passed (Settleable) or whose arbiter stayed
 * silent (ArbiterTimedOut), both permissionless, and release providers' unclaimed earnings on Settled or Cancelled
 * jobs (`claimEarnings`). Both are harmless when someone else got there first (the contract rejects the repeat).
 */
import { isFinished, isSettleable, type JobStatusName } from "../../sdk/rules/job.ts";
import { deadlinePassed, statusAtDeadline } from "../../sdk/rules/settleTiming.ts";

export interface FinalizerJob {
  jobId: bigint;
  status: JobStatusName;
  /** Unclaimed earnings per provider that ever had a checkpoint accepted on the job (earningsOf). */
  earnings: { provider: string; amount: bigint }[];
}

export type FinalizerAction =
  | { jobId: bigint; method: "settle"; args: [bigint]; reason: string }
  | {
      jobId: bigint;
      method: "claimEarnings";
      args: [bigint, string];
      provider: string;
      amount: bigint;
      reason: string;
    };

const SETTLE_REASON: Partial<Record<JobStatusName, string>> = {
  Settleable: "dispute window over",
  ArbiterTimedOut: "arbiter silent past the deadline; verdict stands, bond returned",
};

/**
 * Per job, in the order to send them: `settle` first when due, then one `claimEarnings` per provider with
 * earnings (claims become valid once the job is Settled or Cancelled).
 */
export function planFinalizer(jobs: FinalizerJob[]): FinalizerAction[][] {
  const plan: FinalizerAction[][] = [];
  for (const job of jobs) {
    const actions: FinalizerAction[] = [];
    const settleReason = SETTLE_REASON[job.status];
    if (settleReason) actions.push({ jobId: job.jobId, method: "settle", args: [job.jobId], reason: settleReason });
    if (settleReason || isFinished(job.status)) {
      for (const e of job.earnings) {
        if (e.amount <= 0n) continue;
        actions.push({
          jobId: job.jobId,
          method: "claimEarnings",
          args: [job.jobId, e.provider],
          provider: e.provider,
          amount: e.amount,
          reason: `unclaimed earnings on a ${settleReason ? "settling" : job.status} job`,
        });
      }
    }
    if (actions.length > 0) plan.push(actions);
  }
  return plan;
}

/** A job the finalizer never needs to read again: final (sdk/rules/job.ts `isFinished`), and nothing left to claim. */
export function nothingLeftToDo(job: FinalizerJob): boolean {
  return isFinished(job.status) && job.earnings.every((e) => e.amount === 0n);
}

/**
 * A status `statusOf` would return past a deadline, from the status last read and no event since: a dispute window
 * that ended is Settleable, an arbiter deadline that passed is ArbiterTimedOut (both: chain time > deadline), a
 * final status stays. Undefined when it cannot be told without a read (an unknown deadline, 0; any other status).
 */
export function derivedStatus(
  last: JobStatusName | undefined,
  deadline: bigint,
  now: bigint,
): JobStatusName | undefined {
  if (last === undefined || !deadlinePassed(deadline, now)) return undefined;
  if (isFinished(last)) return last;
  // The stored phase a clock-derived status came from, turned by the one deadline rule (sdk/rules/settleTiming.ts).
  const stored = last === "Settleable" ? "DisputeWindow" : last === "ArbiterTimedOut" ? "Disputed" : last;
  if (stored !== "DisputeWindow" && stored !== "Disputed") return undefined;
  return statusAtDeadline(stored, deadline, now);
}

/** Whether earnings can matter for a job in this status (the others are not read). */
export function earningsMatter(status: JobStatusName): boolean {
  return isSettleable(status) || isFinished(status);
}

/**
 * How far the wall clock may run past a deadline the chain's head has not reached before the finalizer asks the
 * node for a block: more than a public chain's block time (Base 2 s, Ethereum 12 s), so a chain that
 * mines on its own is never asked; a node that mines only on a transaction (stock anvil, a Hardhat node) is.
 */
export const STALE_HEAD_SLACK_S = 15n;

/**
 * The earliest deadline that the wall clock (`nowS`) passed more than STALE_HEAD_SLACK_S ago while the head (at
 * `headTime`) has not: the settlement waits on a block that may never come. Undefined when none. Pure.
 */
export function staleDeadline(deadlines: Iterable<bigint>, headTime: bigint, nowS: bigint): bigint | undefined {
  let earliest: bigint | undefined;
  for (const d of deadlines) {
    if (d === 0n || headTime > d || nowS <= d + STALE_HEAD_SLACK_S) continue;
    if (earliest === undefined || d < earliest) earliest = d;
  }
  return earliest;
}
