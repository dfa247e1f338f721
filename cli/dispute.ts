/** `gpuchain dispute JOB --key FILE`: the client disputes the verdict during the window, posting the bond. */
import { parseCommand } from "../sdk/args.ts";
import { jobIdArg, openContext, usdc } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { JOB_STATUS, protocolInterfaces } from "../sdk/contracts.ts";

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, {});
  const jobId = jobIdArg(positionals[0]);
  const ctx = openContext(values, true);
  const { escrow, usdc: token } = ctx.protocol;
  try {
    const status = JOB_STATUS[Number(await escrow.statusOf(jobId))];
    if (status !== "DisputeWindow") {
      console.error(`job ${jobId} is ${status}: a dispute is only possible during the dispute window`);
      return 1;
    }
    const bond = await escrow.disputeBond();
    if (values["dry-run"]) {
      console.log(`would dispute job ${jobId}, posting a bond of ${usdc(bond)} USDC`);
      return 0;
    }
    await (await token.approve(ctx.deployment.escrow, bond)).wait();
    const receipt = await (await escrow.dispute(jobId)).wait();
    const deadline = (await escrow.disputeOf(jobId)).openedAt + (await escrow.ARBITER_TIMEOUT());
    console.log(`job ${jobId} disputed (tx ${receipt!.hash}); bond ${usdc(bond)} USDC`);
    console.log(`the arbiter may decide until ${new Date(Number(deadline) * 1000).toISOString()}; after that the verdict stands and the bond comes back`);
    return 0;
  } catch (err) {
    console.error(`dispute failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}
