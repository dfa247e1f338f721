/**
 * Which providers wait for a re-stake after a slash (sdk/rules/restake.ts), for `explain` and `wallet`: the
 * registry's StakeSlashed and StakeDeposited logs from `--from-block`, folded by the rule the coordinator applies,
 * each waiting slash with its block's time.
 */
import { zeroPadValue, type Contract } from "ethers";
import { readLogsToHead } from "../sdk/node/logRange.ts";
import { RESTAKE_EVENTS, RestakeBook, type SlashMark } from "../sdk/rules/restake.ts";
import type { CommandContext } from "./context.ts";

/** The re-stake book of every provider, or only of `provider` (one topic filter either way). */
export async function readRestake(ctx: CommandContext, fromBlock: number, provider?: string): Promise<RestakeBook> {
  const registry = ctx.protocol.registry as unknown as Contract;
  const topics = RESTAKE_EVENTS.map((name) => registry.interface.getEvent(name)!.topicHash);
  const filter = {
    address: ctx.deployment.registry,
    topics: provider ? [topics, zeroPadValue(provider, 32)] : [topics],
  };
  const { logs } = await readLogsToHead(ctx.provider, filter, fromBlock);
  const book = new RestakeBook();
  for (const log of logs) {
    const parsed = registry.interface.parseLog(log);
    if (!parsed) continue;
    const mark: SlashMark = { blockNumber: log.blockNumber, logIndex: log.index };
    if (parsed.name === "StakeSlashed") {
      mark.jobId = parsed.args.jobId as bigint;
      mark.amount = parsed.args.amount as bigint;
    }
    book.apply(parsed.name, String(parsed.args.provider), mark);
  }
  const times = new Map<number, bigint>();
  for (const mark of book.waiting.values()) {
    if (!times.has(mark.blockNumber)) {
      const block = await ctx.provider.getBlock(mark.blockNumber);
      times.set(mark.blockNumber, BigInt(block!.timestamp));
    }
    mark.at = times.get(mark.blockNumber);
  }
  return book;
}
