/**
 * The probation rule in words, for the people it applies to (`gpuchain provide`, the dashboard). A provider with
 * no accepted checkpoint yet is on probation: a hold that ends without one by its own failure (lease lapsed,
 * checkpoint refused, no progress for the job's progress timeout) forfeits the stake it locked for that hold,
 * max(minStake, price × checkpoint interval), to the job's client (contracts/JobEscrow.sol `_endHold`). Pure and
 * browser-safe.
 */
import { formatUsdc } from "../words/format.ts";
import { stakeNeeded } from "./stake.ts";

/**
 * The stake one hold locks (JobEscrow `_lockFor`, the registry's `_extraNeeded`): the provider's price × the job's
 * checkpoint interval, at least the registry's minimum. What `assign` needs free, and what probation puts at risk.
 */
export function holdLock(minStake: bigint, pricePerStep: bigint, interval: bigint): bigint {
  return stakeNeeded(minStake, pricePerStep, interval);
}

/** `gpuchain provide`'s line at start: what probation puts at risk per hold. */
export function probationLine(minStake: bigint): string {
  return (
    "probation: until your first accepted checkpoint, a hold that ends without one forfeits its lock " +
    `(at least ${formatUsdc(minStake)}; price × the job's checkpoint interval when larger) to the job's client`
  );
}

/**
 * The Provide compute page's sentence: the lock at risk at `pricePerStep` (null: not a valid price yet). The lock is
 * minStake up to minStake / price steps per checkpoint interval, price × interval above that.
 */
export function probationNote(minStake: bigint, pricePerStep: bigint | null): string {
  const head =
    "On probation (until your provider's first accepted checkpoint), a hold that ends without an accepted " +
    `checkpoint forfeits its lock to the job's client: at least ${formatUsdc(minStake)}`;
  if (!pricePerStep || pricePerStep <= 0n) return `${head}.`;
  const steps = minStake / pricePerStep;
  if (steps === 0n) return `${head}, your price × the job's checkpoint interval.`;
  return `${head} (for a checkpoint interval of up to ${steps} steps at your price; price × interval beyond).`;
}
