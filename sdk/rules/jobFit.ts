/**
 * Why a job waits: which active providers could take it on its price and budget, and if none, what stops each
 * kind of offer (price above every offer, budget short at the cheapest price, memory, or every fitting provider
 * waits for a re-stake after a slash: sdk/rules/restake.ts). Pure: `job create` warns with it, `explain` and the
 * coordinator's status say it.
 *
 * `termsRefusal` is the one home of "may this offer take a job on these terms": the coordinator's terms rules
 * (keepers/coordinator/decide.ts) call it, and `jobFit` groups offers by it, so `job create` cannot say a job fits
 * when the coordinator refuses every provider (it used to ignore the stake rule).
 */
import { formatPrice, formatUsdc } from "../words/format.ts";
import { restakeLine, type SlashMark } from "./restake.ts";
import { stakeNeeded, stakeShort } from "./stake.ts";

export interface Offer {
  address: string;
  pricePerStep: bigint;
  memoryMiB: number;
  active: boolean;
  /** Its latest slash when it has not re-staked since (sdk/rules/restake.ts): the coordinator does not assign it. */
  slashed?: SlashMark;
  /**
   * Stake it can still lock (registry `stakeOf`: deposited − locked − unbonding, sdk/rules/stake.ts freeStake). Absent:
   * not known, no stake rule.
   */
  stakeFree?: bigint;
}

export interface JobTerms {
  totalSteps: number;
  acceptedStep: number;
  maxPricePerStep: bigint;
  budget: bigint;
  paid: bigint;
  /** Device memory the job needs, MiB, when known (the coordinator's --min-memory / --template-memory). */
  memoryNeedMiB?: number;
  /** Steps per checkpoint: with `minStake`, the stake one hold locks (sdk/rules/stake.ts stakeNeeded). */
  checkpointInterval?: number;
  /** The registry's network minimum lock per job; absent (or no interval): no stake rule. */
  minStake?: bigint;
}

/** Why an offer cannot take a job on its terms (the coordinator's Exclusion words for the same rules). */
export type TermsRefusal = "price above max" | "budget short" | "memory too small" | "stake short";

/**
 * The escrow's `assign` rules about the job's terms and one offer, in the order the escrow checks them: price ≤ max,
 * remaining steps × price ≤ budget − paid, then memory (the coordinator's own rule), then the stake the hold locks ≤
 * the offer's free stake (JobEscrow `_lockFor`, registry `stakeQuote`). Undefined: it may take the job.
 */
export function termsRefusal(job: JobTerms, offer: Omit<Offer, "address" | "active">): TermsRefusal | undefined {
  if (offer.pricePerStep > job.maxPricePerStep) return "price above max";
  const needed = BigInt(job.totalSteps - job.acceptedStep) * offer.pricePerStep;
  if (needed > job.budget - job.paid) return "budget short";
  if (offer.memoryMiB < (job.memoryNeedMiB ?? 0)) return "memory too small";
  const lock = holdStake(job, offer);
  if (lock !== undefined && offer.stakeFree !== undefined && stakeShort(lock, offer.stakeFree)) return "stake short";
  return undefined;
}

/** The stake a hold of this job at this offer's price needs free; undefined when the terms carry no stake rule. */
export function holdStake(job: JobTerms, offer: Pick<Offer, "pricePerStep">): bigint | undefined {
  if (job.minStake === undefined || job.checkpointInterval === undefined) return undefined;
  return stakeNeeded(job.minStake, offer.pricePerStep, BigInt(job.checkpointInterval));
}

export type WaitReason =
  | { kind: "no active provider" }
  | { kind: "price above every offer"; cheapest: bigint; maxPricePerStep: bigint }
  | { kind: "budget short"; cheapest: bigint; needed: bigint; available: bigint; stepsAffordable: bigint }
  | { kind: "memory"; needMiB: number; largestMiB: number }
  | { kind: "stake short"; provider: string; needed: bigint; free: bigint }
  | { kind: "awaiting re-stake"; provider: string; slash: SlashMark };

export interface Fit {
  /** Active offers that fit price, budget, memory and stake, and do not wait for a re-stake. */
  fitting: Offer[];
  /** Empty when something fits. */
  reasons: WaitReason[];
  /** Active offers that fit price, budget and memory but wait for a re-stake after a slash (never in `fitting`). */
  awaitingRestake: Offer[];
}

/**
 * The escrow's `assign` rules (termsRefusal: price, budget, memory, stake), plus the coordinator's re-stake rule:
 * when the only offers that fit wait for a re-stake, one reason per such provider; when the only offers that fit
 * price, budget and memory lack free stake, one reason per such provider.
 */
export function jobFit(job: JobTerms, offers: readonly Offer[]): Fit {
  const active = offers.filter((o) => o.active);
  if (active.length === 0) return { fitting: [], reasons: [{ kind: "no active provider" }], awaitingRestake: [] };
  const remaining = BigInt(job.totalSteps - job.acceptedStep);
  const available = job.budget - job.paid;
  const refusal = new Map(active.map((o) => [o, termsRefusal(job, o)]));
  const past = (...not: TermsRefusal[]) => active.filter((o) => !not.includes(refusal.get(o)!));
  const priced = past("price above max");
  const affordable = past("price above max", "budget short");
  const need = job.memoryNeedMiB ?? 0;
  const staked = affordable.filter((o) => refusal.get(o) !== "memory too small");
  // A provider waiting for a re-stake is named for that (the coordinator's provider rule comes first), stake or not.
  const awaitingRestake = staked.filter((o) => o.slashed);
  const fitting = staked.filter((o) => !o.slashed && refusal.get(o) === undefined);
  if (fitting.length) return { fitting, reasons: [], awaitingRestake };
  const reasons: WaitReason[] = awaitingRestake.map((o) => ({
    kind: "awaiting re-stake",
    provider: o.address,
    slash: o.slashed!,
  }));
  for (const o of staked) {
    if (o.slashed || refusal.get(o) !== "stake short") continue;
    reasons.push({ kind: "stake short", provider: o.address, needed: holdStake(job, o)!, free: o.stakeFree! });
  }
  if (reasons.length) return { fitting, reasons, awaitingRestake };
  const cheapestOf = (list: Offer[]) =>
    list.reduce((m, o) => (o.pricePerStep < m ? o.pricePerStep : m), list[0].pricePerStep);
  if (priced.length === 0) {
    reasons.push({
      kind: "price above every offer",
      cheapest: cheapestOf(active),
      maxPricePerStep: job.maxPricePerStep,
    });
  } else if (affordable.length === 0) {
    const cheapest = cheapestOf(priced);
    reasons.push({
      kind: "budget short",
      cheapest,
      needed: remaining * cheapest,
      available,
      stepsAffordable: available / cheapest,
    });
  } else {
    reasons.push({ kind: "memory", needMiB: need, largestMiB: Math.max(...affordable.map((o) => o.memoryMiB)) });
  }
  return { fitting, reasons, awaitingRestake };
}

/** One sentence per reason, saying what would fit. */
export function describeWait(r: WaitReason): string {
  switch (r.kind) {
    case "no active provider":
      return "no provider is registered and active";
    case "price above every offer":
      return (
        `the max price ${formatPrice(r.maxPricePerStep)} is below every offer ` +
        `(the cheapest asks ${formatPrice(r.cheapest)})`
      );
    case "budget short":
      return (
        `the budget left (${formatUsdc(r.available)}) is short at the cheapest price ${formatPrice(r.cheapest)}: ` +
        `the remaining steps need ${formatUsdc(r.needed)} (it covers ${r.stepsAffordable} steps)`
      );
    case "memory":
      return `it needs ${r.needMiB} MiB of device memory; the largest fitting offer has ${r.largestMiB} MiB`;
    case "awaiting re-stake":
      return restakeLine(r.provider, r.slash);
    case "stake short":
      return (
        `provider ${r.provider} has ${formatUsdc(r.free)} of free stake; a hold of this job locks ` +
        `${formatUsdc(r.needed)} (its price × the checkpoint interval, at least the network minimum)`
      );
  }
}

/**
 * Where an offer stands among the current ones: how many of `others` ask strictly more than `mine` (an equal price
 * is not cheaper). Null when there is nothing to compare: no price above zero (unset, unparsable, zero or negative)
 * or no other offer.
 */
export function priceStanding(
  mine: bigint | null,
  others: readonly bigint[],
): { cheaperThan: number; of: number } | null {
  if (mine === null || mine <= 0n || others.length === 0) return null;
  return { cheaperThan: others.filter((x) => x > mine).length, of: others.length };
}
