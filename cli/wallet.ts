/** `gpuchain wallet ADDRESS`: what an address is owed now and per job, and why — from the escrow's events. */
import { getAddress, isAddress } from "ethers";
import { parseCommand, UsageError } from "../sdk/args.ts";
import { openContext } from "./context.ts";
import { FROM_BLOCK_OPTION, loadLedger } from "./events.ts";
import { walletOf } from "../sdk/ledger.ts";
import { formatUsdc, providerSummaries } from "../sdk/narrative.ts";

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, FROM_BLOCK_OPTION);
  if (!positionals[0] || !isAddress(positionals[0])) throw new UsageError(`an address is required, got "${positionals[0] ?? ""}"`);
  const who = getAddress(positionals[0]);
  const ctx = openContext(values, false);
  try {
    const ledger = await loadLedger(ctx, values["from-block"]);
    const wallet = walletOf(ledger, who);
    const onChain = await ctx.protocol.escrow.owed(who);
    console.log(`${who}`);
    console.log(`  withdrawable now: ${formatUsdc(wallet.withdrawable)} USDC${onChain === wallet.withdrawable ? "" : ` (contract says ${formatUsdc(onChain)}: events and state DISAGREE)`}`);
    console.log(`  withdrawn so far: ${formatUsdc(wallet.withdrawn)} USDC`);
    for (const c of wallet.claimable) console.log(`  job ${c.jobId}: ${formatUsdc(c.amount)} USDC earned and claimable now (gpuchain withdraw claims it)`);
    for (const p of wallet.pending) console.log(`  job ${p.jobId}: ${formatUsdc(p.amount)} USDC earned, claimable once the job settles`);
    for (const job of ledger.jobs.values()) {
      const mine = providerSummaries(job).find((s) => s.provider === who.toLowerCase());
      if (mine) console.log(`  job ${job.jobId} as provider: ${mine.stepsAccepted} steps accepted, ${mine.checkpointsRefused} refused — ${mine.why}`);
      if (job.client === who) {
        const refund = job.settlement ? `refund ${formatUsdc(job.settlement.refund)} USDC released` : "budget still locked";
        console.log(`  job ${job.jobId} as client: budget ${formatUsdc(job.budget)} USDC, paid ${formatUsdc(job.paid)} to providers, ${refund}`);
      }
    }
    return onChain === wallet.withdrawable ? 0 : 1;
  } finally {
    ctx.close();
  }
}
