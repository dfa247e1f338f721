/**
 * `gpuchain withdraw --key FILE [--jobs 1,2,…]`: claims the key's earnings on settled jobs (found from
 * CheckpointAccepted events when --jobs is not given), then withdraws everything owed.
 */
import type { Contract, TopicFilter } from "ethers";
import { expectPositionals, parseCommand, parseJobId, UsageError } from "../sdk/run/args.ts";
import { confirm, openContext, requireJob, runOnChain, type CommandContext } from "./context.ts";
import { claimUnlessClaimed } from "../sdk/node/claims.ts";
import { isFinished } from "../sdk/rules/job.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { eventsFrom } from "../sdk/node/deployment.ts";
import { readLogsToHead } from "../sdk/node/logRange.ts";
import { describeWait, readSettleTiming } from "./settle.ts";
import { addressField, amount, emitJson, JSON_OPTION } from "./json.ts";
import { namesFor } from "./names.ts";

export const USAGE = `usage: gpuchain withdraw --key FILE [--jobs 1,2,…]

  claims the key's earnings on settled or cancelled jobs (all it ever had a checkpoint accepted on, unless
  --jobs names them), then withdraws everything the escrow owes the key; --json: what became of each job's
  earnings and what was withdrawn, as one JSON document (README.md, "Machine-readable output")
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
  const { values, positionals } = parseCommand(argv, { jobs: { type: "string" }, ...JSON_OPTION });
  expectPositionals(positionals, []);
  const listed = values.jobs === undefined ? undefined : parseJobList(values.jobs);
  const ctx = await openContext(values, true);
  const { escrow } = ctx.protocol;
  const me = ctx.signer!.address;
  return runOnChain(ctx, "withdraw", async () => {
    const dryRun = values["dry-run"];
    const jobs: ClaimReport[] = [];
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
        jobs.push({ jobId, outcome: "not settled yet", ...amount("amount", earnings), status, when });
        continue;
      }
      if (dryRun) {
        console.log(`job ${jobId}: would claim ${formatUsdc(earnings)}`);
        jobs.push({ jobId, outcome: "would claim", ...amount("amount", earnings), status, when: null });
        continue;
      }
      const claim = await claimOnce(ctx, jobId, earnings);
      console.log(claim.line);
      jobs.push({ jobId, outcome: claim.outcome, ...amount("amount", earnings), status, when: null });
    }
    const refunds = listed ? [] : await pendingRefunds(ctx, me);
    for (const r of refunds) console.log(r.line);
    const owed = await escrow.owed(me);
    const names = values.json ? await namesFor(ctx, [me]) : {};
    const report = (tx: string | null, withdrawn: bigint) => ({
      ...addressField("account", me, names),
      dryRun,
      jobs,
      pendingRefunds: refunds.map(({ line: _line, ...r }) => r),
      ...amount("owed", owed),
      ...amount("withdrawn", withdrawn),
      tx,
    });
    if (owed === 0n) {
      console.log(`${me} is owed nothing right now`);
      if (values.json) emitJson(report(null, 0n));
      return 0;
    }
    if (dryRun) {
      console.log(`would withdraw ${formatUsdc(owed)} to ${me}`);
      if (values.json) emitJson(report(null, 0n));
      return 0;
    }
    const receipt = await confirm(ctx, escrow.withdraw(), "withdraw");
    console.log(`withdrew ${formatUsdc(owed)} to ${me}`);
    if (values.json) emitJson(report(receipt.hash, owed));
    return 0;
  });
}

/** One job's earnings in withdraw's JSON report. */
interface ClaimReport {
  jobId: bigint;
  outcome: ClaimOutcome | "not settled yet" | "would claim";
  amount: string;
  amountUsdc: string;
  status: string;
  when: string | null;
}

type ClaimOutcome = "claimed" | "claimed by someone else" | "someone else's claim not mined yet";

/** Claims the key's `earnings` on `jobId`; what became of them (a lost race included), and the line saying so. */
async function claimOnce(
  ctx: CommandContext,
  jobId: bigint,
  earnings: bigint,
): Promise<{ outcome: ClaimOutcome; line: string }> {
  const { escrow } = ctx.protocol;
  const me = ctx.signer!.address;
  const written = formatUsdc(earnings);
  const outcome = await claimUnlessClaimed(
    escrow,
    jobId,
    me,
    () => confirm(ctx, escrow.claimEarnings(jobId, me), `claim job ${jobId}`),
    {
      waitMs: ctx.txTimeoutMs,
      onWaiting: () =>
        console.log(
          `job ${jobId}: someone else's claim of your ${written} is waiting to be mined (claims are permissionless; ` +
            `the finalizer sends them after settling); waiting up to ${ctx.txTimeoutMs / 1000} s for it …`,
        ),
    },
  );
  if (outcome === "claimed") return { outcome, line: `job ${jobId}: claimed ${written}` };
  if (outcome === "claimed by someone else")
    return {
      outcome,
      line: `job ${jobId}: ${written} was claimed for you by someone else's transaction: it is in what the escrow owes you`,
    };
  return {
    outcome: "someone else's claim not mined yet",
    line:
      `job ${jobId}: someone else's claim of your ${written} was not mined within ${ctx.txTimeoutMs / 1000} s; ` +
      "run gpuchain withdraw again once it lands",
  };
}

/** The jobs with a CheckpointAccepted for `me`, from the deployment's first block (none is older). */
async function jobsWithAcceptedWork(ctx: CommandContext, me: string): Promise<bigint[]> {
  return jobIdsOf(ctx, await ctx.protocol.escrow.filters.CheckpointAccepted(undefined, me).getTopicFilter());
}

/**
 * A client's budget left unspent on jobs not settled yet: one line each, so a client who withdraws during the
 * dispute window is told the refund is coming and from when, rather than only "owed nothing".
 */
async function pendingRefunds(ctx: CommandContext, me: string): Promise<PendingRefund[]> {
  const { escrow } = ctx.protocol;
  const lines: PendingRefund[] = [];
  for (const jobId of await jobIdsOf(ctx, await escrow.filters.JobCreated(undefined, me).getTopicFilter())) {
    const reading = await readSettleTiming(ctx, jobId);
    const { status, job } = reading;
    if (isFinished(status) || job.budget === job.paid) continue;
    const when = describeWait(reading);
    const unspent = job.budget - job.paid;
    lines.push({
      jobId,
      ...amount("amount", unspent),
      status,
      when,
      line:
        `job ${jobId}: ${formatUsdc(unspent)} of your budget is unspent so far; it comes back ` +
        `when the job settles (${status} now; ${when})`,
    });
  }
  return lines;
}

interface PendingRefund {
  jobId: bigint;
  amount: string;
  amountUsdc: string;
  status: string;
  when: string;
  line: string;
}

/** The job ids of the escrow's events matching `topics`, from the deployment's first block. */
async function jobIdsOf(ctx: CommandContext, topics: TopicFilter): Promise<bigint[]> {
  const escrow = ctx.protocol.escrow as unknown as Contract;
  const from = eventsFrom(undefined, ctx.deployment);
  const { logs } = await readLogsToHead(ctx.provider, { address: ctx.deployment.escrow, topics }, from);
  return [...new Set(logs.map((l) => escrow.interface.parseLog(l)!.args.jobId as bigint))];
}
