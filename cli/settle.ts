/**
 * `gpuchain settle JOB --key FILE`: anyone settles a job whose dispute window has ended (or whose arbiter ran out of
 * time), so its providers can claim and the client gets its refund — the finalizer keeper does the same, this is for
 * when none runs. Before its time it says when, and sends nothing.
 */
import { CommandError, expectPositionals, parseCommand, parseJobId } from "../sdk/run/args.ts";
import { emitJson, JSON_OPTION } from "./json.ts";
import { confirm, openContext, requireJob, runOnChain, type CommandContext } from "./context.ts";
import { statusName, type JobStatusName } from "../sdk/rules/job.ts";
import { formatDeadline } from "../sdk/words/format.ts";
import { settleTiming, type SettleTiming } from "../sdk/rules/settleTiming.ts";

export const USAGE = `usage: gpuchain settle JOB --key FILE

  settles a job whose dispute window has ended, or whose arbiter did not decide within 3 days (then the verdict
  stands and the client's bond comes back); anyone may send it. Earlier, it says when and sends nothing (exit 1).
  --json: what was done as one JSON document (README.md, "Machine-readable output")
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, JSON_OPTION);
  expectPositionals(positionals, ["JOB"]);
  const jobId = parseJobId(positionals[0]);
  const ctx = await openContext(values, true);
  return runOnChain(ctx, "settle", async () => {
    await requireJob(ctx, jobId);
    const reading = await readSettleTiming(ctx, jobId);
    const { timing } = reading;
    if (timing.kind !== "now") throw new CommandError(`job ${jobId} cannot be settled now: ${describeWait(reading)}`);
    const report = (tx: string | null) => ({
      jobId,
      dryRun: values["dry-run"],
      settled: tx !== null,
      tx,
      why: timing.why,
    });
    if (values["dry-run"]) {
      console.log(`would settle job ${jobId} (${timing.why})`);
      if (values.json) emitJson(report(null));
      return 0;
    }
    const receipt = await confirm(ctx, ctx.protocol.escrow.settle(jobId), `settle job ${jobId}`);
    console.log(`job ${jobId} settled (tx ${receipt!.hash}): ${timing.why}`);
    console.log(`its providers may now claim: gpuchain withdraw --key FILE --jobs ${jobId}`);
    if (values.json) emitJson(report(receipt!.hash));
    return 0;
  });
}

/** One read of a job as a settle sent now would find it: the rule's answer, the status and the job behind it. */
export interface SettleReading {
  timing: SettleTiming;
  status: JobStatusName;
  job: Awaited<ReturnType<CommandContext["protocol"]["escrow"]["jobOf"]>>;
  /** The chain's "now" for that read (Unix seconds): the pending block's time, else the latest block's. */
  now: number;
}

/**
 * The settlement rule's answer for `jobId` as of the block a transaction sent now would land in: the node's pending
 * block. Read at the latest block instead, a development chain that mines nothing while a person waits would say
 * "in 1 min" for ever, though a settle sent then lands in a new block past the window. A node without a pending
 * block is read at its latest. The pending block is asked for once per reading.
 */
export async function readSettleTiming(ctx: CommandContext, jobId: bigint): Promise<SettleReading> {
  const { escrow } = ctx.protocol;
  const pending = await pendingTime(ctx);
  const blockTag = pending === undefined ? "latest" : "pending";
  const [status, job, verdict, dispute, arbiterTimeout, now] = await Promise.all([
    escrow.statusOf(jobId, { blockTag }),
    escrow.jobOf(jobId, { blockTag }),
    escrow.verdictOf(jobId, { blockTag }),
    escrow.disputeOf(jobId, { blockTag }),
    escrow.ARBITER_TIMEOUT(),
    pending ?? latestTime(ctx),
  ]);
  const timing = settleTiming({
    status: statusName(status),
    verdictAt: verdict.submittedAt,
    disputeWindow: job.disputeWindow,
    disputeOpenedAt: dispute.openedAt,
    arbiterTimeout,
  });
  return { timing, status: statusName(status), job, now };
}

/** "when its dispute window ends: from 2026-… (in 5 min)", or the rule's reason alone. */
export function describeWait({ timing, now }: SettleReading): string {
  if (timing.kind !== "at") return timing.why;
  return `${timing.why}: from ${formatDeadline(timing.from, now)}`;
}

/** The chain's "now": the time of the block a transaction sent now would land in (the pending one), else the latest. */
export async function chainNow(ctx: CommandContext): Promise<number> {
  return (await pendingTime(ctx)) ?? (await latestTime(ctx));
}

async function latestTime(ctx: CommandContext): Promise<number> {
  return (await ctx.provider.getBlock("latest"))!.timestamp;
}

/**
 * The pending block's time, read raw: ethers' block parser refuses Hardhat's pending block (its `number` is null),
 * and a node without one answers null or an error.
 */
async function pendingTime(ctx: CommandContext): Promise<number | undefined> {
  const raw = (await ctx.provider.send("eth_getBlockByNumber", ["pending", false]).catch(() => null)) as {
    timestamp?: string;
  } | null;
  return raw?.timestamp ? Number(raw.timestamp) : undefined;
}
