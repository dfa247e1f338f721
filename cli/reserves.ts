/**
 * `gpuchain reserves [--watch]`: proof of reserves — the escrow's token balance against everything it owes.
 * `--watch` prints one line per new block until Ctrl-C, and the smallest margin seen when it stops.
 */
import { expectPositionals, parseCommand, UsageError } from "../sdk/run/args.ts";
import { openContext, type CommandContext } from "./context.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { owedParts, readReserves, type ReservesSource } from "../sdk/rules/reserves.ts";
import { sleep } from "../sdk/run/retry.ts";
import { protocolInterfaces } from "../sdk/node/contracts.ts";
import { classifyError } from "../sdk/node/errors.ts";
import { amount, emitJson, JSON_OPTION } from "./json.ts";
import { getAddress } from "ethers";

export const USAGE = `usage: gpuchain reserves [--watch | --json]

  what the escrow and the registry hold in the token (held) against what they owe (locked budgets + bonds +
  withdrawable balances + providers' stakes); exit 1 if they hold less. --watch: one line per new block until
  Ctrl-C, then the smallest margin seen (exit 1 if ever short, or if no block could be read); an unreachable RPC
  is said once and read again. --json: the one reading as a JSON document (README.md, "Machine-readable output")
  common: --rpc URL  --deployment FILE  --rpc-timeout-ms N  --debug`;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { watch: { type: "boolean", default: false }, ...JSON_OPTION });
  expectPositionals(positionals, []);
  if (values.watch && values.json)
    throw new UsageError("--json reports one reading; --watch prints a line per block until Ctrl-C: give one of them");
  const ctx = await openContext(values, false);
  try {
    return values.watch ? await watch(ctx) : await once(ctx, values.json);
  } finally {
    ctx.close();
  }
}

async function once(ctx: CommandContext, json: boolean): Promise<number> {
  const block = await ctx.provider.getBlockNumber();
  const r = await readReserves(ctx.protocol as unknown as ReservesSource, block);
  const { held, owes } = r;
  const ok = held >= owes;
  if (json) {
    emitJson({
      escrow: getAddress(ctx.deployment.escrow),
      block,
      ...amount("held", held),
      ...amount("owed", owes),
      owedParts: {
        ...amount("lockedBudgets", r.locked),
        ...amount("bonds", r.bonds),
        ...amount("withdrawable", r.withdrawable),
        ...amount("stakes", r.staked),
      },
      ...amount("surplus", held - owes),
      holds: ok,
    });
    return ok ? 0 : 1;
  }
  console.log(`escrow:        ${ctx.deployment.escrow}`);
  console.log(`held:          ${formatUsdc(held)}`);
  console.log(`owed:          ${formatUsdc(owes)}  (${owedParts(r)})`);
  console.log(`surplus:       ${formatUsdc(held - owes)}`);
  console.log(`proof of reserves: ${ok ? "HOLDS" : "FAILED"}`);
  return ok ? 0 : 1;
}

async function watch(ctx: CommandContext): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let last = -1;
  let minMargin: bigint | undefined;
  console.log(`watching proof of reserves of escrow ${ctx.deployment.escrow} (Ctrl-C stops)`);
  let unreachable = false;
  try {
    while (!stop.signal.aborted) {
      try {
        const head = await ctx.provider.getBlockNumber();
        if (head !== last) {
          const [held, owes] = await ctx.protocol.escrow.reserves({ blockTag: head });
          last = head;
          const margin = held - owes;
          if (minMargin === undefined || margin < minMargin) minMargin = margin;
          const verdict = margin >= 0n ? "HOLDS" : "FAILED";
          console.log(
            `block ${head}: held ${formatUsdc(held)}, owed ${formatUsdc(owes)}, margin ${formatUsdc(margin)} ${verdict}`,
          );
        }
        if (unreachable) console.error("the RPC answers again");
        unreachable = false;
      } catch (err) {
        // A read that failed (past --rpc-timeout-ms and its retries) is unknown: said once, read again, never a zero.
        if (stop.signal.aborted) break;
        if (classifyError(err, protocolInterfaces().escrow) !== "retryable") throw err;
        if (!unreachable) console.error(`chain unreachable (${oneLine(err)}); reading again`);
        unreachable = true;
      }
      await sleep(500, stop.signal);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (minMargin === undefined) {
    console.log("no block was read: proof of reserves unknown");
    return 1;
  }
  console.log(`smallest margin seen: ${formatUsdc(minMargin)} → ${minMargin >= 0n ? "HOLDS" : "FAILED"}`);
  return minMargin >= 0n ? 0 : 1;
}

function oneLine(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e?.shortMessage ?? e?.message ?? String(err)).split("\n")[0];
}
