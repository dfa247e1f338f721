/**
 * Why a job waits: which active providers could take it on its price and budget, and if none, what stops each
 * kind of offer (price above every offer, budget short at the cheapest price, memory). Pure: `job create` warns
 * with it, `explain` and the coordinator's status say it.
 */
import { formatPrice, formatUsdc } from "./format.ts";

export interface Offer {
  address: string;
  pricePerStep: bigint;
  memoryMiB: number;
  active: boolean;
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
  | { kind: "memory"; needMiB: number; largestMiB: number };

export interface Fit {
  /** Active offers that fit price, budget and memory. */
  fitting: Offer[];
  /** Empty when something fits. */
  reasons: WaitReason[];
}

/** The escrow's `assign` rules (price ≤ max, remaining steps × price ≤ budget − paid), plus memory. */
export function jobFit(job: JobTerms, offers: readonly Offer[]): Fit {
  const active = offers.filter((o) => o.active);
  if (active.length === 0) return { fitting: [], reasons: [{ kind: "no active provider" }] };
  const remaining = BigInt(job.totalSteps - job.acceptedStep);
  const available = job.budget - job.paid;
  const priced = active.filter((o) => o.pricePerStep <= job.maxPricePerStep);
  const affordable = priced.filter((o) => remaining * o.pricePerStep <= available);
  const need = job.memoryNeedMiB ?? 0;
  const fitting = affordable.filter((o) => o.memoryMiB >= need);
  if (fitting.length) return { fitting, reasons: [] };
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
  return { fitting, reasons };
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
  }
}
