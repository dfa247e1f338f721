/** The `--from-block` flag of the ledger commands (explain, wallet). */
import type { Ledger } from "../sdk/ledger.ts";
import { escrowLedger, type LedgerQuery } from "../sdk/events.ts";
import { UsageError } from "../sdk/args.ts";
import type { CommandContext } from "./context.ts";

export const FROM_BLOCK_OPTION = { "from-block": { type: "string" } } as const;

/** Checked before anything is read. */
export function parseFromBlock(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--from-block must be a block number (0 or more), got "${value}"`);
  }
  return Number(value);
}

/** The escrow's books from `fromBlock`, narrowed by `query` (one job for explain, one account for wallet). */
export function loadLedger(ctx: CommandContext, fromBlock: number, query: LedgerQuery = {}): Promise<Ledger> {
  return escrowLedger(ctx.protocol.escrow, fromBlock, query);
}
