/**
 * Plain-language accounts of a job, from the ledger alone (sdk/ledger.ts): what happened, in order, and why each
 * provider earned what it did. Pure: `gpuchain explain`, `gpuchain wallet` and `npm start` print these.
 */
import { UnassignReason, type LedgerEntry, type LedgerJob } from "./ledger.ts";
import { formatDeadline, formatPrice, formatTime, formatUsdc } from "./format.ts";

export interface ProviderSummary {
  provider: string;
  assignments: number;
  stepsAccepted: number;
  checkpointsRefused: number;
  /** Credited for accepted steps (0 when an upheld dispute voided the job's payments). */
  earned: bigint;
  /** Already moved to the provider's withdrawable balance. */
  released: bigint;
  lostAssignment: "refused" | "heartbeats" | "lease" | null;
  /** Stake slashed on this job for a proven fault (its unclaimed earnings there were voided too). */
  slashed: bigint;
  slash: { faultStep: number; finder: string } | null;
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
      r.earned += BigInt(arg(e, "amount") as bigint);
    }
    if (e.event === "CheckpointRefused") row(addr(e, "provider")).checkpointsRefused += 1;
    if (e.event === "ProviderUnassigned") {
      const reason = Number(arg(e, "reason"));
      row(addr(e, "provider")).lostAssignment =
        reason === UnassignReason.Refused ? "refused" : reason === UnassignReason.LeaseLapsed ? "lease" : "heartbeats";
    }
    if (e.event === "EarningsReleased") row(addr(e, "provider")).released += BigInt(arg(e, "amount") as bigint);
    if (e.event === "ProviderSlashed") {
      const r = row(addr(e, "provider"));
      r.slashed += BigInt(arg(e, "slashed") as bigint);
      r.earned -= BigInt(arg(e, "earningsVoided") as bigint);
      r.slash = { faultStep: Number(arg(e, "faultStep")), finder: addr(e, "finder") };
    }
  }
  const voided = job.dispute?.upheld === true;
  for (const r of rows.values()) {
    if (voided) r.earned = 0n;
    r.why = whyOf(r, voided, names);
  }
  return [...rows.values()];
}

function whyOf(r: ProviderSummary, voided: boolean, names: Record<string, string>): string {
  if (voided) return "the arbiter upheld the client's dispute: this job's payments are void";
  if (r.slash) {
    const finder = labelOf(r.slash.finder, names);
    return `slashed: fault at step ${r.slash.faultStep}, found by ${finder}; ${formatUsdc(r.slashed)} of stake lost, unclaimed earnings voided`;
  }
  if (r.checkpointsRefused > 0 && r.stepsAccepted === 0) return "refused by the Quality Guard; fenced off the job";
  if (r.checkpointsRefused > 0) return "paid for its accepted steps, then refused by the Quality Guard and fenced";
  if (r.lostAssignment === "heartbeats" || r.lostAssignment === "lease") {
    const how = r.lostAssignment === "lease" ? "its on-chain lease lapsed" : "it stopped heartbeating";
    return r.stepsAccepted > 0
      ? `${how}; paid exactly for its accepted checkpoints`
      : `${how} before any accepted checkpoint`;
  }
  if (r.stepsAccepted > 0) return "paid for every step it trained that the Quality Guard accepted";
  return "no accepted checkpoint";
}

/** One line per event of the job, in chain order, naming addresses through `names` where known. */
export function jobNarrative(job: LedgerJob, names: Record<string, string> = {}, now?: bigint): string[] {
  const who = (a: unknown) => names[String(a).toLowerCase()] ?? String(a);
  return job.history.map((e) => `block ${String(e.blockNumber).padStart(6)}  ${describe(e, who, now)}`);
}

function describe(e: LedgerEntry, who: (a: unknown) => string, now?: bigint): string {
  const a = e.args;
  const usdc = (k: string) => formatUsdc(BigInt(a[k] as bigint));
  const price = (k: string) => formatPrice(BigInt(a[k] as bigint));
  // A deadline still ahead says how long is left; a past one is just its time.
  const when = (k: string) => {
    const at = BigInt(a[k] as bigint);
    return now === undefined ? formatTime(at) : formatDeadline(at, now);
  };
  switch (e.event) {
    case "JobCreated":
      return `created by ${who(a.client)}: ${a.totalSteps} steps, checkpoint every ${a.checkpointInterval}, ≤ ${price("maxPricePerStep")}, budget ${usdc("budget")} locked`;
    case "ProviderAssigned":
      return `assigned to ${who(a.provider)} at epoch ${a.epoch} for ${price("pricePerStep")}, resuming from step ${a.resumeStep}`;
    case "ProviderUnassigned":
      return `${who(a.provider)} unassigned (${["the coordinator saw no heartbeats", "its on-chain lease lapsed", "its checkpoint was refused"][Number(a.reason)]}); epoch is now ${a.newEpoch}, so its further writes are rejected`;
    case "LeaseExtended":
      return `${who(a.provider)} renewed its lease (epoch ${a.epoch})`;
    case "CheckpointReported":
      return `${who(a.provider)} reported step ${a.step} (epoch ${a.epoch}), blob ${a.checkpointHash}`;
    case "CheckpointAccepted":
      return `Quality Guard accepted step ${a.step} from ${who(a.provider)}: ${a.stepsCredited} steps credited, ${usdc("amount")}`;
    case "CheckpointRefused":
      return `Quality Guard refused step ${a.step} from ${who(a.provider)}: nothing credited, provider fenced off the job`;
    case "VerdictSubmitted":
      return `verdict on model ${a.modelHash}: metric ${a.metric} (${(Number(a.metric) / 100).toFixed(2)} % held-out accuracy), ${a.passed ? "passed" : "failed"}; dispute window until ${when("disputeDeadline")}; epoch → ${a.newEpoch}`;
    case "DisputeOpened":
      return `${who(a.client)} disputed with a ${usdc("bond")} bond; the arbiter may decide until ${when("arbiterDeadline")}`;
    case "DisputeResolved":
      return a.upheld
        ? `arbiter ${who(a.arbiter)} upheld the dispute: provider payments void`
        : `arbiter ${who(a.arbiter)} rejected the dispute: the verdict stands, the bond is forfeited`;
    case "ArbiterTimedOut":
      return `the arbiter stayed silent 3 days: the verdict stands, the bond goes back (settled by ${who(a.by)})`;
    case "JobSettled":
      return `settled: client refund ${usdc("refund")}, providers ${usdc("providersPaid")}, bond returned ${usdc("bondReturned")}, forfeited ${usdc("bondForfeited")}`;
    case "CheckpointLapsed":
      return `step ${a.step} from ${who(a.provider)} (epoch ${a.epoch}) was not decided in time and is dropped: nothing credited`;
    case "ProviderSlashed":
      return `${who(a.provider)} slashed: fault at step ${a.faultStep}, found by ${who(a.finder)}; ${usdc("slashed")} of stake to the client (${usdc("toClient")}), the finder (${usdc("toFinder")}) and the fee recipient (${usdc("toFeeRecipient")}); ${usdc("earningsVoided")} of unclaimed earnings voided`;
    case "JobExpired":
      return `expired by ${who(a.by)} after standing Open without progress: refund ${usdc("refund")}, accepted earnings claimable`;
    case "JobCancelled":
      return `cancelled: refund ${usdc("refund")}`;
    case "EarningsReleased":
      return `${usdc("amount")} of ${who(a.provider)}'s earnings moved to its withdrawable balance`;
    default:
      return e.event;
  }
}
