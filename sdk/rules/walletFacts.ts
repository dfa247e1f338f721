/**
 * What one address is owed and why, as a person reads it: the one home of these facts for `gpuchain wallet` and the
 * dashboard's "Check any wallet" (live and recorded), so the two cannot drift (the page once hid a provider's
 * stake and a client's slash compensation that the CLI showed). Pure: folded from the escrow's and registry's events
 * (sdk/rules/ledger.ts); the callers add what they read on chain to check the fold against.
 */
import { getAddress } from "ethers";
import { formatUsdc } from "../words/format.ts";
import { clientCompensation, stakeBookOf, walletOf, type Ledger } from "./ledger.ts";
import { providerSummaries } from "../words/narrative.ts";
import { STAKE_LABELS } from "./stake.ts";

export interface StakeFacts {
  deposited: bigint;
  locked: bigint;
  unbonding: bigint;
  slashed: bigint;
  /** Forfeited to clients while on probation (holds that ended without an accepted checkpoint). */
  forfeited: bigint;
}

export interface JobFacts {
  jobId: bigint;
  /** Its part as a provider of the job, when it had one. */
  provider?: { stepsAccepted: number; refused: number; earned: bigint; why: string };
  /** Its part as the job's client. */
  client?: { budget: bigint; paid: bigint; refund: bigint | null; compensation: bigint };
}

export interface WalletFacts {
  who: string;
  withdrawable: bigint;
  withdrawn: bigint;
  claimable: { jobId: bigint; amount: bigint }[];
  pending: { jobId: bigint; amount: bigint }[];
  /** Its stake in the registry as the events tell; null when it never staked and was never slashed. */
  stake: StakeFacts | null;
  jobs: JobFacts[];
}

/** The facts of `account` from the books; `names` turns addresses in the why-sentences into names. */
export function walletFacts(ledger: Ledger, account: string, names: Record<string, string> = {}): WalletFacts {
  const who = getAddress(account);
  const book = stakeBookOf(ledger, who);
  const stake = book.deposited > 0n || book.slashed > 0n || book.forfeited > 0n ? book : null;
  const jobs: JobFacts[] = [];
  for (const job of ledger.jobs.values()) {
    const mine = providerSummaries(job, names).find((s) => s.provider === who.toLowerCase());
    const facts: JobFacts = { jobId: job.jobId };
    if (mine) {
      const { stepsAccepted, checkpointsRefused: refused, earned, why } = mine;
      facts.provider = { stepsAccepted, refused, earned, why };
    }
    if (job.client === who) {
      const compensation = clientCompensation(job);
      const refund = job.settlement ? job.settlement.refund : null;
      facts.client = { budget: job.budget, paid: job.paid, refund, compensation };
    }
    if (facts.provider || facts.client) jobs.push(facts);
  }
  return { who, ...walletOf(ledger, who), stake, jobs };
}

/**
 * "held now 4.000000 USDC, locked 0.000000 USDC; slashed so far: 1.000000 USDC" (unbonding only when some is). "held
 * now" is the registry's `stakeOf.deposited`, not what was paid in (sdk/rules/stake.ts STAKE_LABELS: one word, one number).
 */
export function stakeSentence(s: StakeFacts): string {
  const L = STAKE_LABELS;
  const parts = [`${L.held} ${formatUsdc(s.deposited)}`, `${L.locked} ${formatUsdc(s.locked)}`];
  if (s.unbonding > 0n) parts.push(`${L.unbonding} ${formatUsdc(s.unbonding)}`);
  const forfeited = s.forfeited > 0n ? `; ${L.forfeited}: ${formatUsdc(s.forfeited)}` : "";
  return `${parts.join(", ")}; ${L.slashed} so far: ${formatUsdc(s.slashed)}${forfeited}`;
}

/** One sentence per part the address had in a job ("job 1 as provider: …", "job 1 as client: …"). */
export function jobSentences(j: JobFacts): string[] {
  const out: string[] = [];
  if (j.provider) {
    const counts = `${j.provider.stepsAccepted} steps accepted, ${j.provider.refused} refused`;
    out.push(`job ${j.jobId} as provider: ${counts} — ${j.provider.why}`);
  }
  if (j.client) {
    const c = j.client;
    const refund = c.refund === null ? "budget still locked" : `refund ${formatUsdc(c.refund)} released`;
    const compensation =
      c.compensation > 0n ? `, ${formatUsdc(c.compensation)} compensation (slashed and forfeited stake)` : "";
    out.push(
      `job ${j.jobId} as client: budget ${formatUsdc(c.budget)}, paid ${formatUsdc(c.paid)} to providers, ${refund}` +
        compensation,
    );
  }
  return out;
}
