/**
 * Many settle (or claimEarnings) calls as few transactions: Multicall3 `aggregate3` with `allowFailure`, so one job
 * someone else settled first cannot revert the others. Both calls are permissionless (they pay into the escrow's
 * pull balances whoever sends them), so sending them through Multicall3 changes nothing on chain but the number of
 * transactions: 1,000 settlements fit in a few blocks instead of one send per job.
 *
 * Each batch is simulated first (per call: success or the custom error), only the calls that succeed are sent, and
 * a call that fails in between (a race at mining time) is dropped silently by `allowFailure`: the next run re-reads
 * the job (tick.ts `recheck`) and redoes it if it is still needed.
 */
import { Contract, type Interface } from "ethers";
import { classifyError, describeError } from "../../sdk/errors.ts";
import type { Logger } from "../../sdk/log.ts";
import { MULTICALL3_ABI } from "../../sdk/multicall.ts";
import { execute, mapLimit, read, type KeeperContext, type Outcome } from "../chain.ts";
import type { FinalizerAction } from "./decide.ts";

/** Fewer actions than this go one by one (each with its own outcome line). */
export const BATCH_MIN = 8;
/** Calls per transaction: a settle costs ~70k gas inside a batch, a claim ~45k: 200 settles ≈ 14 M gas. */
export const BATCH_SIZE = 200;

export interface BatchSend {
  action: FinalizerAction;
  outcome: Outcome;
}

/** Whether `actions` go through Multicall3: enough of them, a key, a Multicall3 on chain, and not a dry run. */
export async function shouldBatch(ctx: KeeperContext, actions: FinalizerAction[]): Promise<boolean> {
  if (actions.length < BATCH_MIN || ctx.dryRun || !ctx.batchSender || !ctx.address || !ctx.batch) return false;
  return ctx.batch.batched();
}

export async function sendBatched(
  ctx: KeeperContext,
  actions: FinalizerAction[],
  log: Logger,
  size = BATCH_SIZE,
): Promise<BatchSend[]> {
  const chunks: FinalizerAction[][] = [];
  for (let i = 0; i < actions.length; i += size) chunks.push(actions.slice(i, i + size));
  // Broadcasts are serialized by the send queue anyway; simulating and waiting for receipts run side by side.
  return (await mapLimit(chunks, 16, (chunk) => sendChunk(ctx, chunk, log))).flat();
}

async function sendChunk(ctx: KeeperContext, actions: FinalizerAction[], log: Logger): Promise<BatchSend[]> {
  const escrow = ctx.escrow as unknown as Contract;
  const iface: Interface = escrow.interface;
  const target = String(escrow.target);
  const calls = actions.map((a) => ({
    target,
    allowFailure: true,
    callData: iface.encodeFunctionData(a.method, a.args),
  }));
  const multicall = new Contract(ctx.batch!.address, MULTICALL3_ABI, ctx.provider);
  const simulated: { success: boolean; returnData: string }[] = await read(ctx, "simulate batch", () =>
    multicall.aggregate3.staticCall(calls, { from: ctx.address }),
  );
  const out: BatchSend[] = [];
  const go: number[] = [];
  simulated.forEach((r, i) => {
    if (r.success) return void go.push(i);
    const err = { data: r.returnData };
    const error = describeError(err, iface);
    const kind = classifyError(err, iface) === "race" ? "race" : "failed";
    log[kind === "race" ? "warn" : "error"](kind === "race" ? "lost a race" : "failed", {
      job: actions[i].jobId,
      method: actions[i].method,
      error,
    });
    out.push({ action: actions[i], outcome: { kind, error } });
  });
  if (go.length === 0) return out;
  // Just simulated call by call: no second simulation of the whole batch. A batch sent twice (a retried send that
  // had landed) is harmless: every call in the copy fails as a race inside `allowFailure`.
  const batchCtx = { ...ctx, sender: { ...ctx.batchSender!, simulate: async () => {} } };
  const l = log.child({
    method: actions[0].method,
    calls: go.length,
    jobs: `${actions[go[0]].jobId}…${actions[go.at(-1)!].jobId}`,
  });
  const outcome = await execute(batchCtx, { method: "aggregate3", args: [go.map((i) => calls[i])] }, l);
  for (const i of go) out.push({ action: actions[i], outcome });
  return out;
}
