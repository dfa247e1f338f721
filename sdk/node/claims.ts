/**
 * Claiming a provider's earnings when someone else may claim them at the same moment: `claimEarnings` is
 * permissionless and the finalizer sends it for every provider right after it settles a job, so a provider's own
 * claim can find nothing left (its estimate, against the pool, fails with JobEscrowNoEarnings) or lose the race
 * inside a block (a reverted receipt, which carries no reason). Either way the money goes where the provider wanted
 * it, into what the escrow owes it, once the other claim is mined: so a lost race waits for that.
 */
import { decodeCustomError } from "./errors.ts";
import type { Protocol } from "./contracts.ts";
import { sleep } from "../run/retry.ts";

export type ClaimOutcome = "claimed" | "claimed by someone else" | "someone else's claim not mined yet";

export interface ClaimWait {
  /** How long a lost race waits for the other claim to be mined. */
  waitMs: number;
  pollMs?: number;
  /** Called once when the other claim is still in the pool (a long wait should say so). */
  onWaiting?: () => void;
}

/** Runs `send` (the provider's claimEarnings, sent and mined); a lost race ends once the other claim is mined. */
export async function claimUnlessClaimed(
  escrow: Protocol["escrow"],
  jobId: bigint,
  provider: string,
  send: () => Promise<unknown>,
  wait: ClaimWait,
): Promise<ClaimOutcome> {
  const unclaimed = async () => (await escrow.earningsOf(jobId, provider)) > 0n; // at the latest block
  try {
    await send();
    return "claimed";
  } catch (err) {
    const noEarnings = decodeCustomError(err, escrow.interface)?.name === "JobEscrowNoEarnings";
    // Without the escrow's reason (a reverted receipt), the chain's own answer decides whether this was the race.
    if (!noEarnings && (await unclaimed())) throw err;
  }
  if (!(await unclaimed())) return "claimed by someone else";
  wait.onWaiting?.();
  const deadline = Date.now() + wait.waitMs;
  while (Date.now() < deadline) {
    await sleep(wait.pollMs ?? 500);
    if (!(await unclaimed())) return "claimed by someone else";
  }
  return "someone else's claim not mined yet";
}
