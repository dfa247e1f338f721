/**
 * `gpuchain withdraw --key FILE [--jobs 1,2,…]`: claims the key's earnings on settled jobs (found from
 * CheckpointAccepted events when --jobs is not given), then withdraws everything owed.
 */
import { parseCommand } from "../sdk/args.ts";
import { openContext, usdc } from "./context.ts";
import { describeError } from "../sdk/errors.ts";
import { protocolInterfaces } from "../sdk/contracts.ts";

const CLAIMABLE = new Set([7n, 8n]); // Settled, Cancelled

export async function main(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, { jobs: { type: "string" } });
  const ctx = openContext(values, true);
  const { escrow } = ctx.protocol;
  const me = ctx.signer!.address;
  try {
    const jobIds = values.jobs
      ? values.jobs.split(",").map((s) => BigInt(s.trim()))
      : [...new Set((await escrow.queryFilter(escrow.filters.CheckpointAccepted(undefined, me))).map((e) => e.args.jobId))];
    for (const jobId of jobIds) {
      const earnings = await escrow.earningsOf(jobId, me);
      const status = await escrow.statusOf(jobId);
      if (earnings === 0n) continue;
      if (!CLAIMABLE.has(status)) {
        console.log(`job ${jobId}: ${usdc(earnings)} USDC earned, claimable once the job settles`);
        continue;
      }
      await (await escrow.claimEarnings(jobId, me)).wait();
      console.log(`job ${jobId}: claimed ${usdc(earnings)} USDC`);
    }
    const owed = await escrow.owed(me);
    if (owed === 0n) {
      console.log(`${me} is owed nothing right now`);
      return 0;
    }
    if (values["dry-run"]) {
      console.log(`would withdraw ${usdc(owed)} USDC to ${me}`);
      return 0;
    }
    await (await escrow.withdraw()).wait();
    console.log(`withdrew ${usdc(owed)} USDC to ${me}`);
    return 0;
  } catch (err) {
    console.error(`withdraw failed: ${describeError(err, protocolInterfaces().escrow)}`);
    return 1;
  } finally {
    ctx.close();
  }
}
