/**
 * One plain sentence per contract event (the escrow's and the registry's), wherever a person reads one: the
 * dashboard's event feed, `npm start`'s live lines, `gpuchain explain`'s history. Addresses are named through the
 * lookup the caller passes (its own fallback for an unnamed one); amounts and times go through sdk/words/format.ts. Pure
 * and browser-safe: it imports only the formats and the job model.
 *
 * Arguments may be ethers' decoded values (bigints) or a recording's (bigints as decimal strings).
 */
import { formatDeadline, formatPrice, formatTime, formatUsdc } from "./format.ts";
import { holdEndText, unassignReason } from "../rules/job.ts";

/** A decoded event as the describer needs it. */
export interface EventLike {
  name: string;
  args?: Record<string, unknown>;
}

/** Names an address (or returns the caller's fallback for one it does not know). */
export type NameOf = (address: unknown) => string;

/** A lookup over `names` (lowercase address → name); an address without a name goes through `fallback`. */
export function nameFrom(names: Record<string, string>, fallback: (address: string) => string = (a) => a): NameOf {
  return (address) => names[String(address).toLowerCase()] ?? fallback(String(address));
}

/** A hash or address cut to its first 10 characters: "0x1234abcd…". */
export const shortHash = (hash: unknown) => `${String(hash).slice(0, 10)}…`;

/** IProviderRegistry.DeviceKind as a person reads it. */
export const deviceKindName = (kind: unknown): "GPU" | "CPU" => (Number(kind) === 1 ? "GPU" : "CPU");

/**
 * The event as one sentence. `now` (chain seconds), when given, makes a deadline say how long is left
 * ("2026-12-04T08:50:23Z (in 2 d 23 h)"); without it a deadline is its ISO time.
 */
/**
 * Words for a verdict's metric on a job, by the job's template (workloads/metric.ts metricText); undefined when
 * the caller does not know the template (the sentence then gives the bare number).
 */
export type MetricWords = (jobId: unknown, metric: bigint) => string | undefined;

/** The jobs' templates as their JobCreated events name them (jobId → templateId), for a MetricWords. */
export function jobTemplates(events: Iterable<EventLike>): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) if (e.name === "JobCreated") out.set(String(e.args?.jobId), String(e.args?.templateId));
  return out;
}

export function describeEvent(e: EventLike, name: NameOf, now?: bigint, metric?: MetricWords): string {
  const a = e.args ?? {};
  const big = (k: string) => BigInt(a[k] as bigint | string | number);
  const usdc = (k: string) => formatUsdc(big(k));
  const price = (k: string) => formatPrice(big(k));
  const when = (k: string) => (now === undefined ? formatTime(big(k)) : formatDeadline(big(k), now));
  const job = `job ${a.jobId}`;
  switch (e.name) {
    // ------------------------------------------------------------------ registry
    case "ProviderRegistered":
      return (
        `${a.name} registered: ${a.deviceModel} (${deviceKindName(a.kind)}, ${a.memoryMiB} MiB) ` +
        `at ${price("pricePerStep")}`
      );
    case "ProviderUpdated":
      return `${name(a.provider)} changed its offer to ${price("pricePerStep")}`;
    case "ProviderDeactivated":
      return `${name(a.provider)} stopped taking new work`;
    case "ProviderReactivated":
      return `${name(a.provider)} takes new work again`;
    case "StakeDeposited":
      return `${name(a.provider)} staked ${usdc("amount")} (deposit now ${usdc("deposited")})`;
    case "UnbondingStarted":
      return (
        `${name(a.provider)} began unbonding ${usdc("amount")} (${usdc("unbonding")} unbonding), ` +
        `withdrawable from ${when("readyAt")}`
      );
    case "StakeWithdrawn":
      return `${name(a.provider)} withdrew ${usdc("amount")} of unbonded stake`;
    case "StakeLocked":
      return `${usdc("amount")} of ${name(a.provider)}'s stake locked for ${job}`;
    case "StakeReleased":
      return `${name(a.provider)}'s ${usdc("amount")} lock on ${job} released`;
    case "StakeSlashed":
      return `${name(a.provider)}'s ${usdc("amount")} lock on ${job} slashed`;
    case "StakeForfeited":
      return `${name(a.provider)}'s ${usdc("amount")} lock on ${job} forfeited (probation)`;
    case "EscrowBound":
      return `the registry is bound to escrow ${name(a.escrow)}`;
    // ------------------------------------------------------------------ escrow: a job's life
    case "JobCreated":
      return (
        `${job} posted by ${name(a.client)}: ${a.totalSteps} steps, checkpoint every ${a.checkpointInterval}, ` +
        `at most ${price("maxPricePerStep")}, budget ${usdc("budget")} locked`
      );
    case "ProviderAssigned":
      return (
        `${job} assigned to ${name(a.provider)} (epoch ${a.epoch}) at ${price("pricePerStep")}, ` +
        `resuming from step ${a.resumeStep}`
      );
    case "ProviderUnassigned":
      return (
        `${name(a.provider)} unassigned from ${job} (${unassignReason(a.reason).why}); epoch is now ` +
        `${a.newEpoch}, so its further writes are rejected`
      );
    case "LeaseExtended":
      return `${name(a.provider)} extended its lease on ${job} (epoch ${a.epoch})`;
    case "CheckpointReported":
      return `${name(a.provider)} reported step ${a.step} of ${job} (epoch ${a.epoch}), blob ${shortHash(a.checkpointHash)}`;
    case "CheckpointAccepted":
      return (
        `Quality Guard accepted ${name(a.provider)}'s step ${a.step} of ${job}: ${a.stepsCredited} steps, ` +
        `${usdc("amount")} credited`
      );
    case "CheckpointRefused":
      return `Quality Guard refused ${name(a.provider)}'s step ${a.step}: nothing credited, fenced off ${job}`;
    case "CheckpointLapsed":
      return `${name(a.provider)}'s step ${a.step} of ${job} (epoch ${a.epoch}) lapsed undecided: nothing credited`;
    case "ProviderSlashed":
      return (
        `${name(a.provider)} slashed: fault at step ${a.faultStep}, found by ${name(a.finder)}; ` +
        `${usdc("slashed")} of stake to the client (${usdc("toClient")}), the finder (${usdc("toFinder")}) and ` +
        `the fee recipient (${usdc("toFeeRecipient")}) on ${job}; ${usdc("earningsVoided")} of unclaimed earnings voided`
      );
    case "HoldForfeited":
      return (
        `${name(a.provider)} forfeited its ${usdc("amount")} lock on ${job} to the client: on probation (no ` +
        `accepted checkpoint yet), ${holdEndText(a.how)}`
      );
    case "ProbationEnded":
      return `${name(a.provider)}'s first checkpoint was accepted (${job}): its probation is over`;
    case "VerdictSubmitted":
      return (
        `verdict for ${job}: model ${shortHash(a.modelHash)}, ${metric?.(a.jobId, big("metric")) ?? `metric ${a.metric}`}, ` +
        `${a.passed ? "passed" : "failed"}; dispute window until ` +
        `${when("disputeDeadline")}; epoch → ${a.newEpoch}`
      );
    case "DisputeOpened":
      return (
        `${name(a.client)} disputed ${job} with a ${usdc("bond")} bond; the arbiter may decide until ` +
        `${when("arbiterDeadline")}`
      );
    case "DisputeResolved":
      return a.upheld
        ? `the arbiter upheld the dispute on ${job}: provider payments void`
        : `the arbiter rejected the dispute on ${job}: the verdict stands, the bond is forfeited`;
    case "ArbiterTimedOut":
      return `the arbiter stayed silent on ${job}: the verdict stands, the bond goes back (settled by ${name(a.by)})`;
    case "JobSettled": {
      const bond = [
        big("bondReturned") > 0n ? `, bond returned ${usdc("bondReturned")}` : "",
        big("bondForfeited") > 0n ? `, bond forfeited ${usdc("bondForfeited")}` : "",
      ].join("");
      return `${job} settled: providers paid ${usdc("providersPaid")}, client refund ${usdc("refund")}${bond}`;
    }
    case "JobExpired":
      return (
        `${job} expired by ${name(a.by)} after standing Open without progress: ${usdc("refund")} back to the ` +
        `client, accepted earnings claimable`
      );
    case "JobCancelled":
      return `${job} cancelled: ${usdc("refund")} back to the client`;
    case "EarningsReleased":
      return `${name(a.provider)}'s ${usdc("amount")} from ${job} became withdrawable`;
    case "Withdrawn":
      return `${name(a.account)} withdrew ${usdc("amount")}`;
    // ------------------------------------------------------------------ escrow: administration
    case "TemplateApprovalSet":
      return `template ${shortHash(a.templateId)} ${a.approved ? "approved" : "withdrawn"}`;
    case "TemplateStepBoundSet":
      return `template ${shortHash(a.templateId)}'s step bound set to ${a.stepMillis} ms: a job's progress timeout is its interval × this`;
    case "CoordinatorSet":
      return `coordinator set to ${name(a.coordinator)}`;
    case "ArbiterSet":
      return `arbiter set to ${name(a.arbiter)}`;
    case "FeeRecipientSet":
      return `fee recipient set to ${name(a.feeRecipient)}`;
    case "OwnershipTransferStarted":
      return `ownership transfer to ${name(a.newOwner)} started`;
    case "EIP712DomainChanged":
      return "the escrow's EIP-712 signing domain changed (verifier signatures must name the new one)";
    case "OwnershipTransferred":
      return `ownership moved from ${name(a.previousOwner)} to ${name(a.newOwner)}`;
    default:
      return e.name;
  }
}

/** The event's kind for filtering: jobs, checkpoints, money, providers, admin. */
export function eventKind(name: string): string {
  if (/Checkpoint/.test(name)) return "checkpoints";
  if (/Assigned|Unassigned|Lease|Provider/.test(name)) return "providers";
  if (/Withdrawn|Earnings|Settled|Cancelled/.test(name)) return "money";
  if (/Job|Verdict|Dispute|Arbiter/.test(name)) return "jobs";
  return "admin";
}
