/**
 * `gpuchain withdraw --key FILE [--jobs 1,2,…]`: claims the key's earnings on settled jobs (found from
 * CheckpointAccepted events when --jobs is not given), then withdraws everything owed.
 */
import type { Contract, TopicFilter } from "ethers";
import { expectPositionals, parseCommand, parseJobId, UsageError } from "../sdk/args.ts";
import { confirm, openContext, requireJob, runOnChain, type CommandContext } from "./context.ts";
import { claimUnlessClaimed } from "../sdk/claims.ts";
import { isFinished } from "../sdk/job.ts";
import { formatUsdc } from "../sdk/format.ts";
import { eventsFrom } from "../sdk/deployment.ts";
import { readLogsToHead } from "../sdk/logRange.ts";
import { describeWait, readSettleTiming } from "./settle.ts";

export const USAGE = `usage: gpuchain withdraw --key FILE [--jobs 1,2,…]

  claims the key's earnings on settled or cancelled jobs (all it ever had a checkpoint accepted on, unless
  --jobs names them), then withdraws everything the escrow owes the key
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export function parseJobList(value: string): bigint[] {
  const items = value.split(",").map((s) => s.trim());
  if (items.some((s) => s === ""))
    throw new UsageError(`--jobs must be job ids separated by commas, like 1,2, got "${value}"`);
  return items.map((s) => {
    try {
      return parseJobId(s);
    } catch {
      throw new UsageError(`--jobs must be positive job ids separated by commas, like 1,2, got "${value}"`);
    }
  });
}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { jobs: { type: "string" } });
  expectPositionals(positionals, []);
  const listed = values.jobs === undefined ? undefined : parseJobList(values.jobs);
  const ctx = await openContext(values, true);
  const { escrow } = ctx.protocol;
  const me = ctx.signer!.address;
  return runOnChain(ctx, "withdraw", async () => {
    for (const jobId of listed ?? []) await requireJob(ctx, jobId);
    for (const jobId of listed ?? (await jobsWithAcceptedWork(ctx, me))) {
      const earnings = await escrow.earningsOf(jobId, me);
      if (earnings === 0n) continue;
      const reading = await readSettleTiming(ctx, jobId);
      const { status } = reading;
      if (!isFinished(status)) {
        const when = describeWait(reading);
        const hint =
          status === "Settleable" || status === "ArbiterTimedOut" ? `; settle it: gpuchain settle ${jobId}` : "";
        console.log(
          `job ${jobId}: ${formatUsdc(earnings)} earned, claimable once the job settles (${status} now; ${when}${hint})`,
        );
        continue;
      }
      if (values["dry-run"]) {
        console.log(`job ${jobId}: would claim ${formatUsdc(earnings)}`);
        continue;
      }
      console.log(await claimOnce(ctx, jobId, earnings));
    }
    if (!listed) for (const line of await pendingRefunds(ctx, me)) console.log(line);
    const owed = await escrow.owed(me);
    if (owed === 0n) {
      console.log(`${me} is owed nothing right now`);
      return 0;
    }
    if (values["dry-run"]) {
      console.log(`would withdraw ${formatUsdc(owed)} to ${me}`);
      return 0;
    }
    await confirm(ctx, escrow.withdraw(), "withdraw");
    console.log(`withdrew ${formatUsdc(owed)} to ${me}`);
    return 0;
  });
}

/** Claims the key's `earnings` on `jobId`; the line that says what became of them (a lost race included). */
async function claimOnce(ctx: CommandContext, jobId: bigint, earnings: bigint): Promise<string> {
  const { escrow } = ctx.protocol;
  const me = ctx.signer!.address;
  const amount = formatUsdc(earnings);
  const outcome = await claimUnlessClaimed(
    escrow,
    jobId,
    me,
    () => confirm(ctx, escrow.claimEarnings(jobId, me), `claim job ${jobId}`),
    {
      waitMs: ctx.txTimeoutMs,
      onWaiting: () =>
        console.log(
          `job ${jobId}: someone else's claim of your ${amount} is waiting to be mined (claims are permissionless; ` +
            `the finalizer sends them after settling); waiting up to ${ctx.txTimeoutMs / 1000} s for it …`,
        ),
    },
  );
  if (outcome === "claimed") return `job ${jobId}: claimed ${amount}`;
  if (outcome === "claimed by someone else")
    return `job ${jobId}: ${amount} was claimed for you by someone else's transaction: it is in what the escrow owes you`;
  return (
    `job ${jobId}: someone else's claim of your ${amount} was not mined within ${ctx.txTimeoutMs / 1000} s; ` +
    "run gpuchain withdraw again once it lands"
  );
}

/** The jobs with a CheckpointAccepted for `me`, from the deployment's first block (none is older). */
async function jobsWithAcceptedWork(ctx: CommandContext, me: string): Promise<bigint[]> {
  return jobIdsOf(ctx, await ctx.protocol.escrow.filters.CheckpointAccepted(undefined, me).getTopicFilter());
}

/**
 * A client's budget left unspent on jobs not settled yet: one line each, so a client who withdraws during the
 * dispute window is told the refund is coming and from when, rather than only "owed nothing".
 */
async function pendingRefunds(ctx: CommandContext, me: string): Promise<string[]> {
  const { escrow } = ctx.protocol;
  const lines: string[] = [];
  for (const jobId of await jobIdsOf(ctx, await escrow.filters.JobCreated(undefined, me).getTopicFilter())) {
    const reading = await readSettleTiming(ctx, jobId);
    const { status, job } = reading;
    if (isFinished(status) || job.budget === job.paid) continue;
    const when = describeWait(reading);
    lines.push(
      `job ${jobId}: ${formatUsdc(job.budget - job.paid)} of your budget is unspent so far; it comes back ` +
        `when the job settles (${status} now; ${when})`,
    );
  }
  return lines;
}

/** The job ids of the escrow's events matching `topics`, from the deployment's first block. */
async function jobIdsOf(ctx: CommandContext, topics: TopicFilter): Promise<bigint[]> {
  const escrow = ctx.protocol.escrow as unknown as Contract;
  const from = eventsFrom(undefined, ctx.deployment);
  const { logs } = await readLogsToHead(ctx.provider, { address: ctx.deployment.escrow, topics }, from);
  return [...new Set(logs.map((l) => escrow.interface.parseLog(l)!.args.jobId as bigint))];
}
