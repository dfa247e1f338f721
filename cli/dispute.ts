/** `gpuchain dispute JOB --key FILE`: the client disputes the verdict during the window, posting the bond. */
import { expectPositionals, parseCommand, parseJobId } from "../sdk/run/args.ts";
import {
  approveIfNeeded,
  confirm,
  openContext,
  requireBalance,
  requireJob,
  requireKeyIs,
  runOnChain,
} from "./context.ts";
import { statusName } from "../sdk/rules/job.ts";
import { formatDeadline, formatUsdc } from "../sdk/words/format.ts";
import { chainNow } from "./settle.ts";

export const USAGE = `usage: gpuchain dispute JOB --key FILE

  the client disputes the verdict during the dispute window, posting the escrow's bond;
  the arbiter then has 3 days, after which the verdict stands and the bond comes back
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --dry-run  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {});
  expectPositionals(positionals, ["JOB"]);
  const jobId = parseJobId(positionals[0]);
  const ctx = await openContext(values, true);
  const { escrow } = ctx.protocol;
  return runOnChain(ctx, "dispute", async () => {
    await requireJob(ctx, jobId);
    const status = statusName(await escrow.statusOf(jobId));
    if (status !== "DisputeWindow") {
      console.error(`gpuchain: job ${jobId} is ${status}: a dispute is only possible during the dispute window`);
      return 1;
    }
    // Everything the escrow will check is checked here first, so a wrong key or a short balance costs no gas
    // (the bond's approval is a transaction of its own, sent before the dispute).
    requireKeyIs(ctx, (await escrow.jobOf(jobId)).client, `job ${jobId}'s client`, "dispute it");
    const bond = await escrow.disputeBond();
    await requireBalance(ctx, bond, "the dispute bond");
    if (values["dry-run"]) {
      console.log(`would dispute job ${jobId}, posting a bond of ${formatUsdc(bond)}`);
      return 0;
    }
    await approveIfNeeded(ctx, bond, "approve the bond");
    const receipt = await confirm(ctx, escrow.dispute(jobId), `dispute job ${jobId}`);
    const deadline = (await escrow.disputeOf(jobId)).openedAt + (await escrow.ARBITER_TIMEOUT());
    const now = await chainNow(ctx);
    console.log(`job ${jobId} disputed (tx ${receipt!.hash}); bond ${formatUsdc(bond)}`);
    console.log(
      `the arbiter may decide until ${formatDeadline(deadline, now)}; ` +
        "after that the verdict stands and the bond comes back",
    );
    return 0;
  });
}
