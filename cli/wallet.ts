/** `gpuchain wallet ADDRESS`: what an address is owed now and per job, and why — from the escrow's events. */
import { expectPositionals, parseAddress, parseCommand } from "../sdk/args.ts";
import { openContext } from "./context.ts";
import { namesFor } from "./names.ts";
import { FROM_BLOCK_OPTION, loadLedger, parseFromBlock, readPoint, unconfirmedLine } from "./events.ts";
import { walletOf } from "../sdk/ledger.ts";
import { labelOf, providerSummaries } from "../sdk/narrative.ts";
import { formatUsdc } from "../sdk/format.ts";
import { restakeLine } from "../sdk/restake.ts";
import { readRestake } from "./restake.ts";

export const USAGE = `usage: gpuchain wallet ADDRESS [--from-block N]

  what ADDRESS may withdraw now, has withdrawn, and earned per job (as provider or client), from the escrow's
  events, checked against the contract's own \`owed\` (exit 1 if they disagree); a provider's stake (deposited,
  locked, unbonding, from the registry) and what was slashed, where and who found the fault, and whether it waits
  for a re-stake (slashed with no deposit since: the coordinator assigns it nothing until then)
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, FROM_BLOCK_OPTION);
  expectPositionals(positionals, ["ADDRESS"]);
  const who = parseAddress(positionals[0], "ADDRESS");
  const fromBlock = parseFromBlock(values["from-block"]);
  const ctx = await openContext(values, false);
  try {
    const at = await readPoint(ctx); // events and state at one block
    const ledger = await loadLedger(ctx, fromBlock, { account: who, toBlock: at.head });
    const wallet = walletOf(ledger, who);
    const [onChain, stake, names, restake] = await Promise.all([
      ctx.protocol.escrow.owed(who, { blockTag: at.head }),
      ctx.protocol.registry.stakeOf(who, { blockTag: at.head }),
      namesFor(ctx, [who]),
      readRestake(ctx, fromBlock, who),
    ]);
    const disagree =
      onChain === wallet.withdrawable ? "" : ` (contract says ${formatUsdc(onChain)}: events and state DISAGREE)`;
    console.log(labelOf(who, names));
    const unconfirmed = unconfirmedLine(
      [...ledger.jobs.values()].flatMap((j) => j.history.map((h) => h.blockNumber)),
      at,
    );
    if (unconfirmed) console.log(`  ${unconfirmed}`);
    console.log(`  withdrawable now: ${formatUsdc(wallet.withdrawable)}${disagree}`);
    console.log(`  withdrawn so far: ${formatUsdc(wallet.withdrawn)}`);
    for (const c of wallet.claimable) {
      console.log(`  job ${c.jobId}: ${formatUsdc(c.amount)} earned and claimable now (gpuchain withdraw claims it)`);
    }
    for (const p of wallet.pending)
      console.log(`  job ${p.jobId}: ${formatUsdc(p.amount)} earned, claimable once the job settles`);
    const mineByJob = [...ledger.jobs.values()].map(
      (job) => [job, providerSummaries(job, names).find((s) => s.provider === who.toLowerCase())] as const,
    );
    const slashed = mineByJob.reduce((sum, [, mine]) => sum + (mine?.slashed ?? 0n), 0n);
    if (stake.deposited > 0n || slashed > 0n) {
      const parts = [`deposited ${formatUsdc(stake.deposited)}`, `locked ${formatUsdc(stake.locked)}`];
      if (stake.unbonding > 0n) parts.push(`unbonding ${formatUsdc(stake.unbonding)}`);
      console.log(`  stake in the registry: ${parts.join(", ")}; slashed so far: ${formatUsdc(slashed)}`);
    }
    const waiting = restake.awaiting(who);
    if (waiting) console.log(`  ${restakeLine(who, waiting)} (a stake deposit after the slash lifts it)`);
    for (const [job, mine] of mineByJob) {
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
