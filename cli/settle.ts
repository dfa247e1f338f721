/**
 * `gpuchain settle JOB --key FILE`: anyone settles a job whose dispute window has ended (or whose arbiter ran out of
 * time), so its providers can claim and the client gets its refund — the finalizer keeper does the same, this is for
 * when none runs. Before its time it says when, and sends nothing.
 */
import { expectPositionals, parseCommand, parseJobId } from "../sdk/args.ts";
import { confirm, openContext, requireJob, runOnChain, type CommandContext } from "./context.ts";
import { statusName } from "../sdk/job.ts";
import { formatDeadline } from "../sdk/format.ts";
import { settleTiming, type SettleTiming } from "../sdk/settleTiming.ts";

export const USAGE = `usage: gpuchain settle JOB --key FILE

  settles a job whose dispute window has ended, or whose arbiter did not decide within 3 days (then the verdict
  stands and the client's bond comes back); anyone may send it. Earlier, it says when and sends nothing.
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {});
  expectPositionals(positionals, ["JOB"]);
  const jobId = parseJobId(positionals[0]);
  const ctx = await openContext(values, true);
  return runOnChain(ctx, "settle", async () => {
    await requireJob(ctx, jobId);
    const timing = await readSettleTiming(ctx, jobId);
    if (timing.kind !== "now") {
      console.error(`gpuchain: job ${jobId} cannot be settled now: ${await describeWait(ctx, timing)}`);
      return 1;
    }
    if (values["dry-run"]) {
      console.log(`would settle job ${jobId} (${timing.why})`);
      return 0;
    }
    const receipt = await confirm(ctx, ctx.protocol.escrow.settle(jobId), `settle job ${jobId}`);
    console.log(`job ${jobId} settled (tx ${receipt!.hash}): ${timing.why}`);
    console.log(`its providers may now claim: gpuchain withdraw --key FILE --jobs ${jobId}`);
    return 0;
  });
}

/** The settlement rule's answer for `jobId` at the chain's latest block. */
export async function readSettleTiming(ctx: CommandContext, jobId: bigint): Promise<SettleTiming> {
  const { escrow } = ctx.protocol;
  const [status, job, verdict, dispute, arbiterTimeout] = await Promise.all([
    escrow.statusOf(jobId),
    escrow.jobOf(jobId),
    escrow.verdictOf(jobId),
    escrow.disputeOf(jobId),
    escrow.ARBITER_TIMEOUT(),
  ]);
  return settleTiming({
    status: statusName(status),
    verdictAt: verdict.submittedAt,
    disputeWindow: job.disputeWindow,
    disputeOpenedAt: dispute.openedAt,
    arbiterTimeout,
  });
}

/** "when its dispute window ends: from 2026-… (in 5 min)", or the rule's reason alone. */
export async function describeWait(ctx: CommandContext, timing: SettleTiming): Promise<string> {
  if (timing.kind !== "at") return timing.why;
  const now = (await ctx.provider.getBlock("latest"))!.timestamp;
  return `${timing.why}: from ${formatDeadline(timing.from, now)}`;
}
