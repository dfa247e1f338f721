/**
 * Plain-language accounts of a job, from the ledger alone (sdk/rules/ledger.ts): what happened, in order, and why each
 * provider earned what it did. Pure: `gpuchain explain`, `gpuchain wallet` and `npm start` print these.
 */
import { earnedOn, type LedgerEntry, type LedgerJob } from "../rules/ledger.ts";
import { formatUsdc } from "./format.ts";
import { holdEndText, UnassignReason, unassignReason, type UnassignReasonText } from "../rules/job.ts";
import { describeEvent, nameFrom, type MetricWords } from "./sentences.ts";

export interface ProviderSummary {
  provider: string;
  assignments: number;
  stepsAccepted: number;
  checkpointsRefused: number;
  /** Credited for accepted steps (0 when an upheld dispute voided the job's payments). */
  earned: bigint;
  /** Already moved to the provider's withdrawable balance. */
  released: bigint;
  lostAssignment: UnassignReasonText["lost"] | null;
  /** Stake slashed on this job for a proven fault (its unclaimed earnings there were voided too). */
  slashed: bigint;
  slash: { faultStep: number; finder: string } | null;
  /** Stake forfeited to the client on this job: holds that ended without an accepted checkpoint on probation. */
  forfeited: bigint;
  /** How the latest forfeited hold ended (sdk/rules/job.ts holdEndText), when any. */
  forfeitedHow: string | null;
  why: string;
}

const arg = (e: LedgerEntry, k: string) => e.args[k];
const addr = (e: LedgerEntry, k: string) => String(arg(e, k)).toLowerCase();

/**
 * Names for the verifier Safe's owners, in the Safe's order: "verifier1", "verifier2", … as `npm start` names them
 * (keys lowercase). The dashboard names them the same way (dashboard/src/model/state.ts).
 */
export function verifierNames(owners: string[]): Record<string, string> {
  return Object.fromEntries(owners.map((o, i) => [o.toLowerCase(), `verifier${i + 1}`]));
}

/** "name (address)" when the address has a name in `names`, else the address. */
export const labelOf = (address: string, names: Record<string, string> = {}) => {
  const name = names[address.toLowerCase()];
  return name ? `${name} (${address})` : address;
};

/**
 * Per provider that ever held the job: accepted steps, refusals, earnings and why. `names` (lowercase address →
 * name) names the finder of a slash, e.g. the verifier Safe's owners (verifierNames).
 */
export function providerSummaries(job: LedgerJob, names: Record<string, string> = {}): ProviderSummary[] {
  const rows = new Map<string, ProviderSummary>();
  const row = (provider: string) => {
    if (!rows.has(provider)) {
      rows.set(provider, {
        provider,
        assignments: 0,
        stepsAccepted: 0,
        checkpointsRefused: 0,
        earned: 0n,
        released: 0n,
        lostAssignment: null,
        slashed: 0n,
        slash: null,
        forfeited: 0n,
        forfeitedHow: null,
        why: "",
      });
    }
    return rows.get(provider)!;
  };
  for (const e of job.history) {
    if (e.event === "ProviderAssigned") row(addr(e, "provider")).assignments += 1;
    if (e.event === "CheckpointAccepted") {
      const r = row(addr(e, "provider"));
      r.stepsAccepted += Number(arg(e, "stepsCredited"));
    }
    if (e.event === "CheckpointRefused") row(addr(e, "provider")).checkpointsRefused += 1;
    if (e.event === "ProviderUnassigned") {
      row(addr(e, "provider")).lostAssignment = unassignReason(arg(e, "reason")).lost;
    }
    if (e.event === "EarningsReleased") row(addr(e, "provider")).released += BigInt(arg(e, "amount") as bigint);
    if (e.event === "HoldForfeited") {
      const r = row(addr(e, "provider"));
      r.forfeited += BigInt(arg(e, "amount") as bigint);
      r.forfeitedHow = holdEndText(arg(e, "how"));
    }
    if (e.event === "ProviderSlashed") {
      const r = row(addr(e, "provider"));
      r.slashed += BigInt(arg(e, "slashed") as bigint);
      r.slash = { faultStep: Number(arg(e, "faultStep")), finder: addr(e, "finder") };
    }
  }
  const voided = job.dispute?.upheld === true;
  for (const r of rows.values()) {
    r.earned = earnedOn(job, r.provider); // the one rule (sdk/rules/ledger.ts): voided by a slash or an upheld dispute
    r.why = whyOf(r, voided, names);
  }
  return [...rows.values()];
}

function whyOf(r: ProviderSummary, voided: boolean, names: Record<string, string>): string {
  const why = whyOfWork(r, voided, names);
  if (r.forfeited === 0n) return why;
  return `${why}; on probation, forfeited ${formatUsdc(r.forfeited)} of stake to the client (${r.forfeitedHow})`;
}

function whyOfWork(r: ProviderSummary, voided: boolean, names: Record<string, string>): string {
  if (voided) return "the arbiter upheld the client's dispute: this job's payments are void";
  if (r.slash) {
    const finder = labelOf(r.slash.finder, names);
    return `slashed: fault at step ${r.slash.faultStep}, found by ${finder}; ${formatUsdc(r.slashed)} of stake lost, unclaimed earnings voided`;
  }
  if (r.checkpointsRefused > 0 && r.stepsAccepted === 0) return "refused by the Quality Guard; fenced off the job";
  if (r.checkpointsRefused > 0) return "paid for its accepted steps, then refused by the Quality Guard and fenced";
  if (r.lostAssignment === "heartbeats" || r.lostAssignment === "lease") {
    const how = unassignReason(
      r.lostAssignment === "lease" ? UnassignReason.LeaseLapsed : UnassignReason.Coordinator,
    ).why;
    return r.stepsAccepted > 0
      ? `${how}; paid exactly for its accepted checkpoints`
      : `${how} before any accepted checkpoint`;
  }
  if (r.stepsAccepted > 0) return "paid for every step it trained that the Quality Guard accepted";
  return "no accepted checkpoint";
}

/** One line per event of the job, in chain order, naming addresses through `names` where known (sdk/words/sentences.ts). */
export function jobNarrative(
  job: LedgerJob,
  names: Record<string, string> = {},
  now?: bigint,
  metric?: MetricWords,
): string[] {
  const name = nameFrom(names);
  return job.history.map(
    (e) =>
      `block ${String(e.blockNumber).padStart(6)}  ${describeEvent({ name: e.event, args: e.args }, name, now, metric)}`,
  );
}
