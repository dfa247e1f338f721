/**
 * The `--from-block` flag of the ledger commands (explain, wallet), and the one block such a command reads at.
 *
 * A one-shot reader reads once, so a reorganisation between two runs is simply read again. Within one run it reads
 * the events and the contract's state at the same block (the head when it starts: on a chain with 2 s blocks the
 * two would otherwise disagree by the blocks mined in between), and says which of the events it shows are above the
 * confirmed block (sdk/node/confirmations.ts: head − depth, 0 on a local chain): shown, as a public-network user expects
 * of a wallet or an explorer, but marked as not final yet.
 */
import { confirmationsFor, confirmedBlock } from "../sdk/node/confirmations.ts";
import type { Ledger } from "../sdk/rules/ledger.ts";
import { escrowLedger, type LedgerQuery } from "../sdk/node/events.ts";
import { UsageError } from "../sdk/run/args.ts";
import type { CommandContext } from "./context.ts";

export const FROM_BLOCK_OPTION = { "from-block": { type: "string" } } as const;

/** Checked before anything is read; absent: the deployment's first block (sdk/node/deployment.ts `eventsFrom`). */
export function parseFromBlock(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--from-block must be a block number (0 or more), got "${value}"`);
  }
  return Number(value);
}

/** The escrow's books from `fromBlock`, narrowed by `query` (one job for explain, one account for wallet). */
export function loadLedger(ctx: CommandContext, fromBlock: number, query: LedgerQuery = {}): Promise<Ledger> {
  return escrowLedger(ctx.protocol.escrow, fromBlock, query);
}

/** The block a command reads everything at, and the highest block final for money (head − depth). */
export interface ReadPoint {
  head: number;
  depth: number;
  confirmed: number;
}

export async function readPoint(ctx: CommandContext): Promise<ReadPoint> {
  const head = await ctx.provider.getBlockNumber();
  const depth = confirmationsFor(ctx.chainId);
  return { head, depth, confirmed: confirmedBlock(head, depth) };
}

/** Pure: the line saying how many of the events shown (their blocks) are not final yet; undefined when none. */
export function unconfirmedLine(blocks: readonly number[], at: ReadPoint): string | undefined {
  const above = blocks.filter((b) => b > at.confirmed).length;
  if (above === 0) return undefined;
  return (
    `unconfirmed: ${above} of these events are in the last ${at.depth} block(s) (after block ${at.confirmed}, ` +
    `read at block ${at.head}): not final yet, a chain reorganisation may still change them`
  );
}
