/** The registry's offers (ProviderRegistered events, then each one's live quote) and the job-fit warning. */
import type { Contract } from "ethers";
import { eventsFrom } from "../sdk/node/deployment.ts";
import { readLogsToHead } from "../sdk/node/logRange.ts";
import { describeWait, jobFit, type JobTerms, type Offer } from "../sdk/rules/jobFit.ts";
import { usdcAmount } from "../sdk/words/format.ts";
import { freeStake } from "../sdk/rules/stake.ts";
import type { CommandContext } from "./context.ts";
import { readRestake } from "./restake.ts";

/**
 * Every registered provider's offer as the registry quotes it now, with the slash it must re-stake after, if any
 * (the coordinator's rule, sdk/rules/restake.ts; slashes from `fromBlock` on, by default the deployment's first block).
 * Registrations are read from the deployment's first block: none is older, and block 0 costs a public chain
 * thousands of `eth_getLogs`.
 */
export async function currentOffers(
  ctx: CommandContext,
  fromBlock = eventsFrom(undefined, ctx.deployment),
): Promise<Offer[]> {
  const registry = ctx.protocol.registry as unknown as Contract;
  const topic = registry.interface.getEvent("ProviderRegistered")!.topicHash;
  const registered = eventsFrom(undefined, ctx.deployment);
  const [{ logs }, restake] = await Promise.all([
    readLogsToHead(ctx.provider, { address: ctx.deployment.registry, topics: [topic] }, registered),
    readRestake(ctx, fromBlock),
  ]);
  const addresses = [...new Set(logs.map((l) => registry.interface.parseLog(l)!.args.provider as string))];
  return Promise.all(
    addresses.map(async (address) => {
      const [[pricePerStep, memoryMiB, active], stake] = await Promise.all([
        ctx.protocol.registry.quote(address),
        ctx.protocol.registry.stakeOf(address),
      ]);
      const stakeFree = freeStake(stake); // the stake rule (sdk/rules/jobFit.ts termsRefusal), as the coordinator applies it
      return {
        address,
        pricePerStep,
        memoryMiB: Number(memoryMiB),
        active,
        slashed: restake.awaiting(address),
        stakeFree,
      };
    }),
  );
}

/** Warns (stderr) when no active provider could take a job on these terms, and says what would fit. */
export async function warnIfNobodyFits(
  ctx: CommandContext,
  r: { totalSteps: number; checkpointInterval: number; maxPricePerStep: bigint; budget: bigint },
): Promise<void> {
  const minStake = await ctx.protocol.registry.minStake();
  const terms: JobTerms = { ...r, acceptedStep: 0, paid: 0n, minStake };
  const offers = await currentOffers(ctx);
  const fit = jobFit(terms, offers);
  if (fit.reasons.length === 0) {
    const waiting = fit.awaitingRestake.length;
    console.log(
      `${fit.fitting.length} active provider(s) fit this price and budget` +
        (waiting ? ` (and ${waiting} more that wait to re-stake after a slash)` : ""),
    );
    return;
  }
  for (const reason of fit.reasons)
    console.warn(`warning: no active provider can take this job: ${describeWait(reason)}`);
  // the terms are not what keeps it waiting
  if (fit.reasons.every((r) => r.kind === "awaiting re-stake" || r.kind === "stake short")) return;
  const active = offers.filter((o) => o.active).sort((a, b) => (a.pricePerStep < b.pricePerStep ? -1 : 1));
  if (active.length) {
    const cheapest = active[0].pricePerStep;
    const budget = usdcAmount(cheapest * BigInt(r.totalSteps));
    console.warn(`warning: what would fit: --max-price ${usdcAmount(cheapest)} (or more) --budget ${budget} (or more)`);
  }
}
