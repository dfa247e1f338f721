/**
 * The one off-chain model of a provider's stake in the registry, as sdk/rules/job.ts is for jobs: the stake events and
 * what each carries, the one fold of them into a provider's books (the ledger's, sdk/rules/ledger.ts, and the
 * coordinator's, keepers/coordinator/stakeBook.ts), and the one free-stake rule (what `assign` can still lock).
 * Pure and browser-safe.
 */

/** The registry events that move a stake, and their data fields (the job, when named, is the second topic). */
export const STAKE_EVENTS = [
  "StakeDeposited", // (amount, deposited: the whole deposit after)
  "UnbondingStarted", // (amount, unbonding: the whole unbonding after, readyAt)
  "StakeWithdrawn", // (amount: the unbonding paid out, leaving the deposit)
  "StakeLocked", // job; (amount: the job's whole lock after)
  "StakeReleased", // job; (amount: the job's lock, now 0)
  "StakeSlashed", // job; (amount: the job's lock, now 0, gone from the deposit)
  "StakeForfeited", // job; (amount: the job's lock, now 0, gone from the deposit to the job's client: probation)
] as const;

export type StakeEventName = (typeof STAKE_EVENTS)[number];

export const isStakeEvent = (name: string): name is StakeEventName =>
  (STAKE_EVENTS as readonly string[]).includes(name);

/** One stake event's fields (the absolute `deposited` / `unbonding`, when given, win over the running sums). */
export interface StakeEvent {
  name: StakeEventName;
  jobId?: bigint;
  amount?: bigint;
  deposited?: bigint;
  unbonding?: bigint;
}

/** A provider's stake as the registry's `stakeOf` reads it (deposited includes what is locked or unbonding). */
export interface Stake {
  deposited: bigint;
  locked: bigint;
  unbonding: bigint;
}

/**
 * The names of a provider's stake figures, one meaning each, for every surface that shows them (`npm start`'s
 * table, `gpuchain wallet`, the dashboard's wallet and settlement card): "paid in" is Σ StakeDeposited (never
 * lowered by a slash), "held" is the registry's `stakeOf.deposited` now (paid in − slashed − forfeited − withdrawn).
 */
export const STAKE_LABELS = {
  paidIn: "paid in",
  held: "held now",
  locked: "locked",
  unbonding: "unbonding",
  slashed: "slashed",
  forfeited: "forfeited on probation",
} as const;

/**
 * A provider's books: its stake, what it ever paid in (Σ StakeDeposited: `deposited` is what is left of it after
 * slashes, forfeits and withdrawals), what was slashed from it (proven faults) and forfeited (holds that ended
 * without an accepted checkpoint while on probation) so far, and its current lock per job id.
 */
export interface StakeBook extends Stake {
  paidIn: bigint;
  slashed: bigint;
  forfeited: bigint;
  locks: Map<bigint, bigint>;
}

export const emptyStakeBook = (): StakeBook => ({
  deposited: 0n,
  locked: 0n,
  unbonding: 0n,
  paidIn: 0n,
  slashed: 0n,
  forfeited: 0n,
  locks: new Map(),
});

/** The free-stake rule: what `assign` can still lock, deposited − locked − unbonding. */
export const freeStake = (st: Stake): bigint => st.deposited - st.locked - st.unbonding;

/**
 * The stake `assign` still needs free for one hold (JobEscrow `assign` → registry `stakeQuote`): the hold's lock
 * (JobEscrow `_lockFor`: price × the job's checkpoint interval, capped at 2^128 − 1), raised to the network minimum
 * (`_extraNeeded`), less what the provider still locks on this very job. The one home of the stake rule: the
 * coordinator's "stake short", `gpuchain job create` / `explain` (sdk/rules/jobFit.ts) and the dashboard call it.
 */
export function stakeNeeded(minStake: bigint, pricePerStep: bigint, interval: bigint, currentLock = 0n): bigint {
  const byPrice = pricePerStep * interval;
  const lock = byPrice > UINT128_MAX ? UINT128_MAX : byPrice;
  const target = lock < minStake ? minStake : lock;
  return target > currentLock ? target - currentLock : 0n;
}

const UINT128_MAX = (1n << 128n) - 1n;

/** Whether `assign` would revert with JobEscrowStakeShort: the stake it needs exceeds the free stake. */
export const stakeShort = (needed: bigint, free: bigint): boolean => needed > free;

/**
 * Folds one stake event of the book's provider into it, in chain order. Returns how the registry's total staked
 * (Σ deposits) moved: + a deposit, − a withdrawal, a slash or a forfeit.
 */
export function applyStakeEvent(st: StakeBook, e: StakeEvent): bigint {
  const amount = e.amount ?? 0n;
  const jobId = e.jobId ?? 0n;
  switch (e.name) {
    case "StakeDeposited":
      st.deposited = e.deposited ?? st.deposited + amount;
      st.paidIn += amount;
      return amount;
    case "UnbondingStarted":
      st.unbonding = e.unbonding ?? st.unbonding + amount;
      return 0n;
    case "StakeWithdrawn":
      st.deposited -= amount;
      st.unbonding = 0n;
      return -amount;
    case "StakeLocked":
      st.locked += amount - (st.locks.get(jobId) ?? 0n);
      st.locks.set(jobId, amount);
      return 0n;
    case "StakeReleased":
      st.locked -= amount;
      st.locks.delete(jobId);
      return 0n;
    case "StakeSlashed":
    case "StakeForfeited":
      st.locked -= amount;
      st.locks.delete(jobId);
      st.deposited -= amount;
      if (e.name === "StakeSlashed") st.slashed += amount;
      else st.forfeited += amount;
      return -amount;
  }
}

/** How many network-minimum job locks a provider agent keeps deposited as stake (an identity without stake takes no work). */
export const STAKE_LOCKS = 5n;

/** Stake to deposit so that `STAKE_LOCKS` minimum locks fit in the free stake (0: enough already). */
export function stakeTopUp(stake: Stake, minStake: bigint): bigint {
  const free = freeStake(stake);
  const target = STAKE_LOCKS * minStake;
  return free >= target ? 0n : target - free;
}
