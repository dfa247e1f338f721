/**
 * Why a job waits: which active providers could take it on its price and budget, and if none, what stops each
 * kind of offer (price above every offer, budget short at the cheapest price, memory, or every fitting provider
 * waits for a re-stake after a slash: sdk/restake.ts). Pure: `job create` warns with it, `explain` and the
 * coordinator's status say it.
 */
import { formatPrice, formatUsdc } from "./format.ts";
import { restakeLine, type SlashMark } from "./restake.ts";

export interface Offer {
  address: string;
  pricePerStep: bigint;
  memoryMiB: number;
  active: boolean;
  /** Its latest slash when it has not re-staked since (sdk/restake.ts): the coordinator does not assign it. */
  slashed?: SlashMark;
}

export interface JobTerms {
  totalSteps: number;
  acceptedStep: number;
  maxPricePerStep: bigint;
  budget: bigint;
  paid: bigint;
  /** Device memory the job needs, MiB, when known (the coordinator's --min-memory / --template-memory). */
  memoryNeedMiB?: number;
}

export type WaitReason =
  | { kind: "no active provider" }
  | { kind: "price above every offer"; cheapest: bigint; maxPricePerStep: bigint }
  | { kind: "budget short"; cheapest: bigint; needed: bigint; available: bigint; stepsAffordable: bigint }
  | { kind: "memory"; needMiB: number; largestMiB: number }
  | { kind: "awaiting re-stake"; provider: string; slash: SlashMark };

export interface Fit {
  /** Active offers that fit price, budget and memory, and do not wait for a re-stake. */
  fitting: Offer[];
  /** Empty when something fits. */
  reasons: WaitReason[];
  /** Active offers that fit price, budget and memory but wait for a re-stake after a slash (never in `fitting`). */
  awaitingRestake: Offer[];
}

/**
 * The escrow's `assign` rules (price ≤ max, remaining steps × price ≤ budget − paid), plus memory, plus the
 * coordinator's re-stake rule: when the only offers that fit wait for a re-stake, one reason per such provider.
 */
export function jobFit(job: JobTerms, offers: readonly Offer[]): Fit {
  const active = offers.filter((o) => o.active);
  if (active.length === 0) return { fitting: [], reasons: [{ kind: "no active provider" }], awaitingRestake: [] };
  const remaining = BigInt(job.totalSteps - job.acceptedStep);
  const available = job.budget - job.paid;
  const priced = active.filter((o) => o.pricePerStep <= job.maxPricePerStep);
  const affordable = priced.filter((o) => remaining * o.pricePerStep <= available);
  const need = job.memoryNeedMiB ?? 0;
  const onTerms = affordable.filter((o) => o.memoryMiB >= need);
  const fitting = onTerms.filter((o) => !o.slashed);
  const awaitingRestake = onTerms.filter((o) => o.slashed);
  if (fitting.length) return { fitting, reasons: [], awaitingRestake };
  if (awaitingRestake.length) {
    const reasons = awaitingRestake.map((o): WaitReason => ({
      kind: "awaiting re-stake",
      provider: o.address,
      slash: o.slashed!,
    }));
    return { fitting, reasons, awaitingRestake };
  }
  const cheapestOf = (list: Offer[]) =>
    list.reduce((m, o) => (o.pricePerStep < m ? o.pricePerStep : m), list[0].pricePerStep);
  const reasons: WaitReason[] = [];
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
