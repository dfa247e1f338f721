/**
 * Each provider's stake folded from the registry's stake events (the one fold, sdk/rules/stake.ts), so a restarted
 * coordinator needs no `stakeOf` per provider (1,000 providers: 2,000 reads, ~0.7 s of its first tick). Every
 * change to a stake emits one of these events with what the fold needs (ProviderRegistry.sol), and a provider's
 * stake history starts at its registration: so a provider whose ProviderRegistered the scan saw has its whole history
 * in the scan. The others are read (chainView.ts). A wrong fold could only mis-rank a provider: `assign` checks the
 * stake on chain.
 */
import { applyStakeEvent, emptyStakeBook, freeStake, type StakeBook, type StakeEvent } from "../../sdk/rules/stake.ts";

/** The books of every provider registered in the scan (lower-case address). */
export class StakeBooks {
  private readonly books = new Map<string, StakeBook>();

  /** A ProviderRegistered seen: its stake is zero and every later change is in the scan. */
  registered(provider: string): void {
    if (!this.books.has(provider)) this.books.set(provider, emptyStakeBook());
  }

  /** What `provider` can still lock (sdk/rules/stake.ts `freeStake`; 0 when not known). */
  free(provider: string): bigint {
    const st = this.books.get(provider);
    return st ? freeStake(st) : 0n;
  }

  /** One stake event of `provider`, in chain order. A provider not registered in the scan is left to be read. */
  apply(provider: string, e: StakeEvent): void {
    const st = this.books.get(provider);
    if (st) applyStakeEvent(st, e);
  }
}
