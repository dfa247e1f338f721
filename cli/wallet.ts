/** `gpuchain wallet ADDRESS`: what an address is owed now and per job, and why — from the escrow's events. */
import { expectPositionals, parseAddress, parseCommand, UsageError } from "../sdk/run/args.ts";
import { openContext } from "./context.ts";
import { namesFor, resolveName } from "./names.ts";
import { addressField, amount, emitJson, JSON_OPTION } from "./json.ts";
import { isProviderName } from "../sdk/words/providerName.ts";
import { FROM_BLOCK_OPTION, loadLedger, parseFromBlock, readPoint, unconfirmedLine } from "./events.ts";
import { labelOf } from "../sdk/words/narrative.ts";
import { jobSentences, stakeSentence, walletFacts } from "../sdk/rules/walletFacts.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { restakeLine } from "../sdk/rules/restake.ts";
import { readRestake } from "./restake.ts";
import { eventsFrom } from "../sdk/node/deployment.ts";

export const USAGE = `usage: gpuchain wallet ADDRESS|NAME [--json] [--from-block N]

  NAME: verifier1…3, a provider's registered name (alice, carol …), or on a network npm start runs from this
  folder the names of its keys (client, owner, arbiter …).
  What ADDRESS may withdraw now, has withdrawn, and earned per job (as provider or client), from the escrow's
  events, checked against the contract's own \`owed\` (exit 1 if they disagree); a provider's stake (deposited,
  locked, unbonding, from the registry) and what was slashed, where and who found the fault, and whether it waits
  for a re-stake (slashed with no deposit since: the coordinator assigns it nothing until then); --from-block:
  where its events are read from (default: the deployment's first block, from Ignition's journal, else 0);
  --json: one JSON document (README.md, "Machine-readable output")
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { ...FROM_BLOCK_OPTION, ...JSON_OPTION });
  expectPositionals(positionals, ["ADDRESS"]);
  const typed = positionals[0];
  if (typed === undefined) throw new UsageError("ADDRESS is required: an address (0x…) or a name like alice", true);
  const byName = !typed.startsWith("0x") && isProviderName(typed);
  if (!byName && !typed.startsWith("0x"))
    throw new UsageError(`ADDRESS must be 0x followed by 40 hex digits, or a name like alice, got "${typed}"`);
  const given = parseFromBlock(values["from-block"]);
  const address = byName ? undefined : parseAddress(typed, "ADDRESS");
  const ctx = await openContext(values, false);
  const fromBlock = eventsFrom(given, ctx.deployment);
  try {
    const who = address ?? (await resolveName(ctx, typed));
    const at = await readPoint(ctx); // events and state at one block
    // The state first: a pruned node keeps only recent blocks' state, and the scan may take longer than that.
    const [onChain, stake] = await Promise.all([
      ctx.protocol.escrow.owed(who, { blockTag: at.head }),
      ctx.protocol.registry.stakeOf(who, { blockTag: at.head }),
    ]);
    const ledger = await loadLedger(ctx, fromBlock, {
      account: who,
      registry: ctx.protocol.registry,
      toBlock: at.head,
    });
    const [names, restake] = await Promise.all([namesFor(ctx, [who]), readRestake(ctx, fromBlock, who)]);
    const wallet = walletFacts(ledger, who, names);
    const disagree =
      onChain === wallet.withdrawable ? "" : ` (contract says ${formatUsdc(onChain)}: events and state DISAGREE)`;
    const { deposited, locked, unbonding } = stake; // an ethers Result: its names are not own keys to spread
    const read = {
      deposited,
      locked,
      unbonding,
      slashed: wallet.stake?.slashed ?? 0n,
      forfeited: wallet.stake?.forfeited ?? 0n,
    };
    const folded = wallet.stake !== null && stakeSentence(wallet.stake) === stakeSentence(read);
    const waiting = restake.awaiting(who);
    if (values.json) {
      emitJson({
        ...addressField("address", who, names),
        read: { block: at.head, confirmedBlock: at.confirmed },
        ...amount("withdrawable", wallet.withdrawable),
        ...amount("withdrawn", wallet.withdrawn),
        ...amount("contractOwed", onChain),
        agreesWithContract: onChain === wallet.withdrawable,
        claimable: wallet.claimable.map((c) => ({ jobId: c.jobId, ...amount("amount", c.amount) })),
        pending: wallet.pending.map((p) => ({ jobId: p.jobId, ...amount("amount", p.amount) })),
        stake:
          wallet.stake || deposited > 0n
            ? {
                ...amount("deposited", read.deposited),
                ...amount("locked", read.locked),
                ...amount("unbonding", read.unbonding),
                ...amount("slashed", read.slashed),
                ...amount("forfeited", read.forfeited),
                eventsAgree: folded,
              }
            : null,
        awaitingRestake: waiting ? restakeLine(who, waiting) : null,
        jobs: wallet.jobs.map((j) => ({
          jobId: j.jobId,
          provider: j.provider
            ? {
                stepsAccepted: j.provider.stepsAccepted,
                refused: j.provider.refused,
                ...amount("earned", j.provider.earned),
                why: j.provider.why,
              }
            : null,
          client: j.client
            ? {
                ...amount("budget", j.client.budget),
                ...amount("paid", j.client.paid),
                ...(j.client.refund === null ? { refund: null, refundUsdc: null } : amount("refund", j.client.refund)),
                ...amount("compensation", j.client.compensation),
              }
            : null,
          sentences: jobSentences(j),
        })),
      });
      return onChain === wallet.withdrawable ? 0 : 1;
    }
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
    if (wallet.stake || stake.deposited > 0n) {
      // The registry's own numbers; the events' fold must agree (a --from-block after the deposits cannot see them).
      const differ = given ? " (the events before --from-block were not read)" : " (events and registry DISAGREE)";
      console.log(`  stake in the registry: ${stakeSentence(read)}${folded ? "" : differ}`);
    }
    if (waiting) console.log(`  ${restakeLine(who, waiting)} (a stake deposit after the slash lifts it)`);
    for (const j of wallet.jobs) for (const line of jobSentences(j)) console.log(`  ${line}`);
    return onChain === wallet.withdrawable ? 0 : 1;
  } finally {
    ctx.close();
  }
}
