/** The `--from-block` flag of the ledger commands (explain, wallet). */
import type { Ledger } from "../sdk/ledger.ts";
import { escrowLedger } from "../sdk/events.ts";
import type { CommandContext } from "./context.ts";

export const FROM_BLOCK_OPTION = { "from-block": { type: "string" } } as const;

export function loadLedger(ctx: CommandContext, fromBlock: string | undefined): Promise<Ledger> {
  return escrowLedger(ctx.protocol.escrow, fromBlock ? Number(fromBlock) : 0, { registry: ctx.protocol.registry });
}
