/** `gpuchain wallet ADDRESS`: what an address is owed now and per job, and why — from the escrow's events. */
import { expectPositionals, parseAddress, parseCommand } from "../sdk/args.ts";
import { openContext } from "./context.ts";
import { FROM_BLOCK_OPTION, loadLedger, parseFromBlock } from "./events.ts";
import { walletOf } from "../sdk/ledger.ts";
import { providerSummaries } from "../sdk/narrative.ts";
import { formatUsdc } from "../sdk/format.ts";

export const USAGE = `usage: gpuchain wallet ADDRESS [--from-block N]

  what ADDRESS may withdraw now, has withdrawn, and earned per job (as provider or client), from the escrow's
  events, checked against the contract's own \`owed\` (exit 1 if they disagree)
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, FROM_BLOCK_OPTION);
  expectPositionals(positionals, ["ADDRESS"]);
  const who = parseAddress(positionals[0], "ADDRESS");
  const fromBlock = parseFromBlock(values["from-block"]);
  const ctx = await openContext(values, false);
  try {
    const ledger = await loadLedger(ctx, fromBlock, { account: who });
    const wallet = walletOf(ledger, who);
    const onChain = await ctx.protocol.escrow.owed(who);
    const disagree =
      onChain === wallet.withdrawable ? "" : ` (contract says ${formatUsdc(onChain)}: events and state DISAGREE)`;
    console.log(`${who}`);
    console.log(`  withdrawable now: ${formatUsdc(wallet.withdrawable)}${disagree}`);
    console.log(`  withdrawn so far: ${formatUsdc(wallet.withdrawn)}`);
    for (const c of wallet.claimable) {
      console.log(`  job ${c.jobId}: ${formatUsdc(c.amount)} earned and claimable now (gpuchain withdraw claims it)`);
    }
    for (const p of wallet.pending)
      console.log(`  job ${p.jobId}: ${formatUsdc(p.amount)} earned, claimable once the job settles`);
    for (const job of ledger.jobs.values()) {
      const mine = providerSummaries(job).find((s) => s.provider === who.toLowerCase());
      if (mine) {
        const counts = `${mine.stepsAccepted} steps accepted, ${mine.checkpointsRefused} refused`;
        console.log(`  job ${job.jobId} as provider: ${counts} — ${mine.why}`);
      }
      if (job.client === who) {
        const refund = job.settlement ? `refund ${formatUsdc(job.settlement.refund)} released` : "budget still locked";
        const paid = `paid ${formatUsdc(job.paid)} to providers`;
        console.log(`  job ${job.jobId} as client: budget ${formatUsdc(job.budget)}, ${paid}, ${refund}`);
      }
    }
    return onChain === wallet.withdrawable ? 0 : 1;
  } finally {
    ctx.close();
  }
}
