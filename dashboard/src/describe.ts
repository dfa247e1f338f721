/** One plain sentence per contract event, naming providers where the run told their names. Pure. */
import type { ChainEvent } from "./model/entries.ts";
import { price, short, usdc } from "./format.ts";

const REASONS = ["missed heartbeats", "lease lapsed", "refused by the Quality Guard"];

export function describeEvent(e: ChainEvent, name: (a: unknown) => string): string {
  const a = e.args ?? {};
  switch (e.name) {
    case "ProviderRegistered":
      return (
        `${a.name} registered: ${a.deviceModel} (${Number(a.kind) === 1 ? "GPU" : "CPU"}, ${a.memoryMiB} ` +
        `MiB) at ${price(String(a.pricePerStep))} USDC/step`
      );
    case "ProviderUpdated":
      return `${name(a.provider)} changed its offer to ${price(String(a.pricePerStep))} USDC/step`;
    case "ProviderDeactivated":
      return `${name(a.provider)} stopped taking new work`;
    case "ProviderReactivated":
      return `${name(a.provider)} takes new work again`;
    case "JobCreated":
      return (
        `job ${a.jobId} posted: ${a.totalSteps} steps, checkpoint every ${a.checkpointInterval}, budget ` +
        `${usdc(String(a.budget))} USDC locked`
      );
    case "ProviderAssigned":
      return (
        `job ${a.jobId} assigned to ${name(a.provider)} (epoch ${a.epoch}) at ` +
        `${price(String(a.pricePerStep))} USDC/step, from step ${a.resumeStep}`
      );
    case "ProviderUnassigned":
      return (
        `${name(a.provider)} unassigned from job ${a.jobId} ` +
        `(${REASONS[Number(a.reason)] ?? "unknown reason"}); epoch is now ${a.newEpoch}`
      );
    case "LeaseExtended":
      return `${name(a.provider)} extended its lease on job ${a.jobId}`;
    case "CheckpointReported":
      return `${name(a.provider)} reported step ${a.step} of job ${a.jobId} (${short(String(a.checkpointHash))})`;
    case "CheckpointAccepted":
      return (
        `Quality Guard accepted ${name(a.provider)}'s step ${a.step}: ${a.stepsCredited} steps, ` +
        `${usdc(String(a.amount))} USDC credited`
      );
    case "CheckpointRefused":
      return `Quality Guard refused ${name(a.provider)}'s step ${a.step}: fenced off job ${a.jobId}`;
    case "VerdictSubmitted":
      return (
        `verdict for job ${a.jobId}: held-out accuracy ${(Number(a.metric) / 100).toFixed(2)} %, ` +
        `${a.passed ? "passed" : "failed"}`
      );
    case "DisputeOpened":
      return `the client disputed job ${a.jobId} with a ${usdc(String(a.bond))} USDC bond`;
    case "DisputeResolved":
      return `the arbiter ${a.upheld ? "upheld" : "rejected"} the dispute on job ${a.jobId}`;
    case "ArbiterTimedOut":
      return `the arbiter stayed silent on job ${a.jobId}: the verdict stands`;
    case "JobSettled":
      return (
        `job ${a.jobId} settled: providers paid ${usdc(String(a.providersPaid))} USDC, client refund ` +
        `${usdc(String(a.refund))} USDC`
      );
    case "JobCancelled":
      return `job ${a.jobId} cancelled: ${usdc(String(a.refund))} USDC back to the client`;
    case "EarningsReleased":
      return `${name(a.provider)}'s ${usdc(String(a.amount))} USDC from job ${a.jobId} became withdrawable`;
    case "Withdrawn":
      return `${name(a.account)} withdrew ${usdc(String(a.amount))} USDC`;
    case "TemplateApprovalSet":
      return `template ${short(String(a.templateId))} ${a.approved ? "approved" : "withdrawn"}`;
    case "CoordinatorSet":
      return `coordinator set to ${short(String(a.coordinator))}`;
    case "ArbiterSet":
      return `arbiter set to ${short(String(a.arbiter))}`;
    case "FeeRecipientSet":
      return `fee recipient set to ${short(String(a.feeRecipient))}`;
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
