/** `gpuchain dispute JOB --key FILE`: the client disputes the verdict during the window, posting the bond. */
import { CommandError, expectPositionals, parseCommand, parseJobId } from "../sdk/args.ts";
import { confirm, openContext, requireJob } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { protocolInterfaces } from "../sdk/contracts.ts";
import { statusName } from "../sdk/job.ts";
import { formatDeadline, formatUsdc } from "../sdk/format.ts";

export const USAGE = `usage: gpuchain dispute JOB --key FILE

  the client disputes the verdict during the dispute window, posting the escrow's bond;
  the arbiter then has 3 days, after which the verdict stands and the bond comes back
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {});
  expectPositionals(positionals, ["JOB"]);
  const jobId = parseJobId(positionals[0]);
  const ctx = await openContext(values, true);
  const { escrow, usdc: token } = ctx.protocol;
  try {
    await requireJob(ctx, jobId);
    const status = statusName(await escrow.statusOf(jobId));
    if (status !== "DisputeWindow") {
      console.error(`gpuchain: job ${jobId} is ${status}: a dispute is only possible during the dispute window`);
      return 1;
    }
    const bond = await escrow.disputeBond();
    if (values["dry-run"]) {
      console.log(`would dispute job ${jobId}, posting a bond of ${formatUsdc(bond)}`);
      return 0;
    }
    await confirm(ctx, token.approve(ctx.deployment.escrow, bond), "approve the bond");
    const receipt = await confirm(ctx, escrow.dispute(jobId), `dispute job ${jobId}`);
    const deadline = (await escrow.disputeOf(jobId)).openedAt + (await escrow.ARBITER_TIMEOUT());
    const now = (await ctx.provider.getBlock("latest"))!.timestamp;
    console.log(`job ${jobId} disputed (tx ${receipt!.hash}); bond ${formatUsdc(bond)}`);
    console.log(
      `the arbiter may decide until ${formatDeadline(deadline, now)}; ` +
        "after that the verdict stands and the bond comes back",
    );
    return 0;
  } catch (err) {
    if (err instanceof CommandError) throw err;
    console.error(`gpuchain: dispute failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}
