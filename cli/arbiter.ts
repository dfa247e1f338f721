/** `gpuchain arbiter resolve JOB --uphold|--reject --key FILE`: the arbiter decides a dispute before the deadline. */
import { expectPositionals, parseCommand, parseJobId, UsageError } from "../sdk/run/args.ts";
import { confirm, openContext, requireJob, requireKeyIs, runOnChain } from "./context.ts";
import { statusName } from "../sdk/rules/job.ts";

export const USAGE = `usage: gpuchain arbiter resolve JOB --uphold|--reject --key FILE

  --uphold   the client is right: provider payments void, budget and bond back to the client
  --reject   the verdict stands: the bond goes to the fee recipient
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    uphold: { type: "boolean", default: false },
    reject: { type: "boolean", default: false },
  });
  if (positionals[0] !== "resolve") {
    throw new UsageError(`arbiter needs the action resolve, got "${positionals[0] ?? ""}"`, true);
  }
  expectPositionals(positionals, ["resolve", "JOB"]);
  const jobId = parseJobId(positionals[1]);
  if (values.uphold === values.reject) {
    throw new UsageError("give exactly one of --uphold (the client is right) or --reject (the verdict stands)", true);
  }
  const ctx = await openContext(values, true);
  const { escrow } = ctx.protocol;
  return runOnChain(ctx, "resolve", async () => {
    await requireJob(ctx, jobId);
    const status = statusName(await escrow.statusOf(jobId));
    if (status !== "Disputed") {
      console.error(
        `gpuchain: job ${jobId} is ${status}: only a Disputed job within the 3-day deadline can be resolved`,
      );
      return 1;
    }
    requireKeyIs(ctx, await escrow.arbiter(), "the escrow's arbiter", "resolve a dispute");
    if (values["dry-run"]) {
      console.log(`would ${values.uphold ? "uphold" : "reject"} the dispute on job ${jobId}`);
      return 0;
    }
    const receipt = await confirm(ctx, escrow.resolveDispute(jobId, values.uphold), `resolve job ${jobId}`);
    const what = values.uphold
      ? "upheld — provider payments void, budget and bond back to the client"
      : "rejected — the verdict stands, the bond goes to the fee recipient";
    console.log(`job ${jobId}: dispute ${what} (tx ${receipt!.hash})`);
    return 0;
  });
}
