/**
 * Each provider's stake folded from the registry's stake events, so a restarted coordinator needs no `stakeOf`
 * per provider (1,000 providers: 2,000 reads, ~0.7 s of its first tick). Every change to a stake emits one of
 * these events with what the fold needs (ProviderRegistry.sol), and a provider's stake history starts at its
 * registration: so a provider whose ProviderRegistered the scan saw has its whole history in the scan. The others
 * are read (chainView.ts). A wrong fold could only mis-rank a provider: `assign` checks the stake on chain.
 */

/** The registry events that move a stake, and their data fields (the job, when named, is the second topic). */
export const STAKE_EVENTS = [
  "StakeDeposited", // (amount, deposited: the whole deposit after)
  "UnbondingStarted", // (amount, unbonding: the whole unbonding after, readyAt)
  "StakeWithdrawn", // (amount: the unbonding paid out, leaving the deposit)
  "StakeLocked", // job; (amount: the job's whole lock after)
  "StakeReleased", // job; (amount: the job's lock, now 0)
  "StakeSlashed", // job; (amount: the job's lock, now 0, gone from the deposit)
] as const;

export type StakeEventName = (typeof STAKE_EVENTS)[number];

export const isStakeEvent = (name: string): name is StakeEventName =>
  (STAKE_EVENTS as readonly string[]).includes(name);

export interface StakeEvent {
  name: StakeEventName;
  jobId?: bigint;
  amount?: bigint;
  deposited?: bigint;
  unbonding?: bigint;
}

interface Stake {
  deposited: bigint;
  locked: bigint;
  unbonding: bigint;
}

/** Stakes per provider (lower-case address) and locks per provider and job, as the registry keeps them. */
export class StakeBook {
  private readonly stakes = new Map<string, Stake>();
  /** `provider:jobId` → the job's lock; deleted once released or slashed (bounded by the open locks). */
  private readonly locks = new Map<string, bigint>();

  /** A ProviderRegistered seen: its stake is zero and every later change is in the scan. */
  registered(provider: string): void {
    if (!this.stakes.has(provider)) this.stakes.set(provider, { deposited: 0n, locked: 0n, unbonding: 0n });
  }

  /** What `provider` can still lock: deposited − locked − unbonding (0 when not known). */
  free(provider: string): bigint {
    const st = this.stakes.get(provider);
    return st ? st.deposited - st.locked - st.unbonding : 0n;
  }

  /** One stake event of `provider`, in chain order. A provider not registered in the scan is left to be read. */
  apply(provider: string, e: StakeEvent): void {
    const st = this.stakes.get(provider);
    if (!st) return;
    const lockKey = `${provider}:${e.jobId}`;
    const lock = this.locks.get(lockKey) ?? 0n;
    const amount = e.amount ?? 0n;
    switch (e.name) {
      case "StakeDeposited":
        st.deposited = e.deposited ?? st.deposited + amount;
        break;
      case "UnbondingStarted":
        st.unbonding = e.unbonding ?? st.unbonding + amount;
        break;
      case "StakeWithdrawn":
        st.deposited -= amount;
        st.unbonding = 0n;
        break;
      case "StakeLocked":
        st.locked += amount - lock;
        this.locks.set(lockKey, amount);
        break;
      case "StakeReleased":
      case "StakeSlashed":
        st.locked -= amount;
        if (e.name === "StakeSlashed") st.deposited -= amount;
        this.locks.delete(lockKey);
        break;
    }
  }
}
