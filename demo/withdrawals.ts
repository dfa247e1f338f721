/**
 * After settlement, every provider and the client pull their money, as they would on their own machines.
 *
 * The finalizer claims each provider's earnings right after it settles the job. A provider that claimed at the same
 * moment would race it for the same claim: both pass their simulation against the last block, both land in the next
 * one, and the second reverts (gas lost, a "money transaction reverted" in the rehearsal's audit; a CI run caught
 * the keepers' claim losing that race). So the providers leave the claims to the finalizer for `claimWaitMs` and
 * claim only what it left, then withdraw.
 */
import type { Signer } from "ethers";
import { claimUnlessClaimed } from "../sdk/node/claims.ts";
import type { Protocol } from "../sdk/node/contracts.ts";
import { sleep } from "../sdk/run/retry.ts";
import { mined } from "../sdk/node/txManager.ts";

type Escrow = Protocol["escrow"];
type Account = Signer & { address: string };

export interface WithdrawOptions {
  /** How long the finalizer gets to claim for the providers before they claim themselves. */
  claimWaitMs: number;
  pollMs?: number;
  signal?: AbortSignal;
  /** Told when a provider claims for itself (the finalizer left its earnings). */
  note?: (line: string) => void;
  /** An address's name in `note`'s lines (lower-case keys). */
  names?: Record<string, string>;
}

/** The default wait: the finalizer claims in the tick that settles, seconds after; two minutes cover a lagging one. */
export const FINALIZER_CLAIM_WAIT_MS = 120_000;

export async function withdrawAll(escrow: Escrow, accounts: Account[], jobId: bigint, o: WithdrawOptions) {
  const left = await unclaimedAfter(escrow, accounts, jobId, o);
  for (const account of accounts) {
    const mine = escrow.connect(account);
    if (left.has(account.address)) {
      const who = o.names?.[account.address.toLowerCase()] ?? account.address;
      o.note?.(`${who} claims its own earnings: the finalizer left them unclaimed for ${o.claimWaitMs / 1000} s`);
      const claim = () => mined(mine.claimEarnings(jobId, account.address));
      await claimUnlessClaimed(escrow, jobId, account.address, claim, { waitMs: o.claimWaitMs });
    }
    if ((await escrow.owed(account.address)) > 0n) await mined(mine.withdraw());
  }
}

/** The accounts whose earnings on `jobId` are still unclaimed once the finalizer had `claimWaitMs` to claim them. */
async function unclaimedAfter(escrow: Escrow, accounts: Account[], jobId: bigint, o: WithdrawOptions) {
  const deadline = Date.now() + o.claimWaitMs;
  for (;;) {
    const left = new Set<string>();
    for (const a of accounts) if ((await escrow.earningsOf(jobId, a.address)) > 0n) left.add(a.address);
    if (left.size === 0 || Date.now() >= deadline) return left;
    await sleep(o.pollMs ?? 250, o.signal);
  }
}
