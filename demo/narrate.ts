/** Pure: the short live line `npm start` prints for each of the job's chain events (decoded by sdk/events.ts). */
import { formatPrice, formatUsdc } from "../sdk/format.ts";

export interface LiveEvent {
  name: string;
  args: Record<string, unknown>;
  blockNumber: number;
}

const short = (hash: unknown) => `${String(hash).slice(0, 10)}…`;
const UNASSIGN_REASONS = ["missed heartbeats", "lease lapsed", "refused"];

export function describeEvent(e: LiveEvent, names: Record<string, string>): string {
  const who = (a: unknown) => names[String(a).toLowerCase()] ?? String(a).slice(0, 10);
  const usdc = (k: string) => formatUsdc(BigInt(e.args[k] as bigint));
  const a = e.args;
  switch (e.name) {
    case "JobCreated":
      return `[chain] job ${a.jobId} created: ${a.totalSteps} steps, budget ${usdc("budget")} locked`;
    case "ProviderAssigned": {
      const price = formatPrice(BigInt(a.pricePerStep as bigint));
      const to = `${who(a.provider)} (epoch ${a.epoch}, ${price})`;
      return `[chain] job ${a.jobId} assigned to ${to}, resuming at step ${a.resumeStep}`;
    }
    case "CheckpointReported":
      return `[chain] ${who(a.provider)} reported step ${a.step} (epoch ${a.epoch}) ${short(a.checkpointHash)}`;
    case "CheckpointAccepted":
      return (
        `[chain] ✔ Quality Guard accepted ${who(a.provider)}'s step ${a.step}: ` +
        `+${a.stepsCredited} steps, ${usdc("amount")} credited`
      );
    case "CheckpointRefused":
      return `[chain] ✘ Quality Guard refused ${who(a.provider)}'s step ${a.step}: fenced off the job`;
    case "ProviderSlashed":
      return (
        `[chain] ✘ slashed: fault at step ${a.faultStep}, found by ${who(a.finder)} — ${who(a.provider)} lost ` +
        `${usdc("slashed")} of stake, the client compensated ${usdc("toClient")}`
      );
    case "ProviderUnassigned":
      return `[chain] ${who(a.provider)} unassigned (${UNASSIGN_REASONS[Number(a.reason)]}); epoch → ${a.newEpoch}`;
    case "VerdictSubmitted": {
      const accuracy = (Number(a.metric) / 100).toFixed(2);
      return `[chain] verdict: model ${short(a.modelHash)}, accuracy ${accuracy} %, ${a.passed ? "passed" : "failed"}`;
    }
    case "JobSettled":
      return `[chain] job ${a.jobId} settled: refund ${usdc("refund")}, providers ${usdc("providersPaid")}`;
    case "CheckpointLapsed":
      return `[chain] ${who(a.provider)}'s step ${a.step} on job ${a.jobId} lapsed undecided: nothing paid for it`;
    case "JobExpired":
      return `[chain] job ${a.jobId} expired without progress: ${usdc("refund")} back to the client`;
    case "DisputeOpened":
      return `[chain] the client disputed job ${a.jobId} with a ${usdc("bond")} bond`;
    case "DisputeResolved":
      return `[chain] the arbiter ${a.upheld ? "upheld" : "rejected"} the dispute on job ${a.jobId}`;
    case "ArbiterTimedOut":
      return `[chain] the arbiter stayed silent on job ${a.jobId}: the verdict stands, the bond goes back`;
    case "JobCancelled":
      return `[chain] job ${a.jobId} cancelled: ${usdc("refund")} back to the client`;
    case "EarningsReleased":
      return `[chain] ${who(a.provider)}'s ${usdc("amount")} from job ${a.jobId} became withdrawable`;
    case "Withdrawn":
      return `[chain] ${who(a.account)} withdrew ${usdc("amount")}`;
    case "LeaseExtended":
      return `[chain] ${who(a.provider)} extended its lease on job ${a.jobId}`;
    default:
      return `[chain] ${e.name}`;
  }
}
