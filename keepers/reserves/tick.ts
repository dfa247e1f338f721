/**
 * The reserves watch: on every new block (polled), reads `reserves()` at that block and logs held and owed.
 * If the escrow ever holds less than it owes, it logs an error line `PROOF OF RESERVES FAILED` with the figures;
 * in `--strict` mode the keeper then stops with exit code 1.
 */
import { read, type KeeperContext } from "../chain.ts";
import type { TickResult } from "../../sdk/run/runner.ts";
import { runTicks } from "../keeper.ts";
import type { ReservesConfig } from "./config.ts";
import { blocksToCheck, checkReserves, type ReservesCheck } from "./decide.ts";

export const RESERVES_FAILED = "PROOF OF RESERVES FAILED";

export function createReservesWatch(ctx: KeeperContext, config: Pick<ReservesConfig, "strict" | "maxBlocksPerTick">) {
  let last: number | undefined;
  const log = ctx.logger;

  async function tick(): Promise<TickResult & { checked: (ReservesCheck & { block: number })[] }> {
    const latest = await read(ctx, "block number", () => ctx.provider.getBlockNumber());
    const { blocks, skipped } = blocksToCheck(last, latest, config.maxBlocksPerTick);
    if (skipped > 0) log.warn("blocks skipped (too many since the last poll)", { skipped });
    const checked: (ReservesCheck & { block: number })[] = [];
    for (const block of blocks) {
      const [held, owes] = await read(ctx, "reserves", () => ctx.escrow.reserves({ blockTag: block }));
      const r = { ...checkReserves(held, owes), block };
      checked.push(r);
      last = block;
      if (r.ok) {
        log.info("reserves", { block, held, owed: owes, surplus: r.surplus });
      } else {
        log.error(`${RESERVES_FAILED}: held ${held} < owed ${owes} (short by ${r.deficit})`, {
          block,
          held,
          owed: owes,
          deficit: r.deficit,
        });
        if (config.strict) return { stop: true, exitCode: 1, checked };
      }
    }
    return { checked };
  }

  return { tick };
}

/** Runs the watch until `signal` fires (or once; or, with --strict, until a proof fails). */
export function runReservesWatch(ctx: KeeperContext, config: ReservesConfig, signal: AbortSignal): Promise<number> {
  return runTicks("reserves", ctx, config, createReservesWatch(ctx, config).tick, signal);
}
