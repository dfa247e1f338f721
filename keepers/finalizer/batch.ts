/**
 * Many settle (or claimEarnings) calls as few transactions: Multicall3 `aggregate3` with `allowFailure`, so one job
 * someone else settled first cannot revert the others. Both calls are permissionless (they pay into the escrow's
 * pull balances whoever sends them), so sending them through Multicall3 changes nothing on chain but the number of
 * transactions: 1,000 settlements fit in a few blocks instead of one send per job.
 *
 * Each batch is sent as it is (no simulation first), and each call's outcome is read from the receipt's events: a
 * call that failed (someone else settled first) is dropped by `allowFailure` without reverting the others, and is
 * then simulated on its own to say why; the next run re-reads the job (tick.ts `recheck`) and redoes it if needed.
 */
import { Contract, toBeHex, zeroPadValue, type Interface } from "ethers";
import { classifyError, describeError } from "../../sdk/node/errors.ts";
import type { Logger } from "../../sdk/run/log.ts";
import { MULTICALL3_ABI } from "../../sdk/node/multicall.ts";
import { withGasHeadroom } from "../../sdk/node/gas.ts";
import {
  awaitReceipt,
  executeForReceipt,
  logOutcome,
  mapLimit,
  outcomeOfError,
  read,
  withTimeout,
  type Call,
  type KeeperContext,
  type Landed,
  type Outcome,
  type ReceiptLike,
  type SendError,
  type TxHandle,
} from "../chain.ts";
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
  // One gas estimate (the first, largest batch) sizes every batch, so they go out back to back, nonces in order
  // (one send queue), without an EVM run each before its send; receipts are awaited side by side.
  const perCall = await gasPerCall(ctx, chunks[0]);
  const gasOf = (n: number) => (perCall === undefined ? undefined : withGasHeadroom(perCall * BigInt(n)));
  if (perCall !== undefined && ctx.batchSender!.sendMany) return sendPipelined(ctx, chunks, log, gasOf);
  return (await mapLimit(chunks, 16, (chunk) => sendChunk(ctx, chunk, log, gasOf(chunk.length)))).flat();
}

/**
 * Every batch broadcast back to back (`sendMany`: one slot of the send queue, consecutive nonces), so they reach
 * the same block or the next instead of one block each; then every receipt awaited side by side.
 */
async function sendPipelined(
  ctx: KeeperContext,
  chunks: FinalizerAction[][],
  log: Logger,
  gasOf: (n: number) => bigint | undefined,
): Promise<BatchSend[]> {
  const calls = chunks.map((chunk) => batchCalls(ctx, chunk));
  const sends = calls.map((c) => ({ args: [c], gasLimit: gasOf(c.length)! }));
  let handles: (TxHandle | SendError)[];
  try {
    handles = await withTimeout(ctx.batchSender!.sendMany!("aggregate3", sends), ctx.rpcTimeoutMs, "send batches");
  } catch (error) {
    handles = sends.map(() => ({ error }));
  }
  const done = await Promise.all(
    chunks.map((chunk, i) => landed(ctx, chunk, calls[i], handles[i], sends[i].gasLimit, log)),
  );
  return done.flat();
}

/** One broadcast batch's outcomes: from its receipt, or the send's error for every call in it. */
async function landed(
  ctx: KeeperContext,
  actions: FinalizerAction[],
  calls: ReturnType<typeof batchCalls>,
  handle: TxHandle | SendError,
  gasLimit: bigint,
  log: Logger,
): Promise<BatchSend[]> {
  const l = batchLog(log, actions);
  const { outcome, receipt }: Landed =
    "error" in handle ? { outcome: outcomeOfError(ctx, handle.error) } : await awaitReceipt(ctx, handle);
  logOutcome(l, "aggregate3", outcome);
  if (outcome.kind === "failed") return shortOfGas(actions, gasLimit, outcome.error, l);
  if (outcome.kind !== "confirmed") return actions.map((action) => ({ action, outcome }));
  return outcomesFromReceipt(ctx, actions, calls, outcome, receipt, log);
}

/**
 * Every call may fail without reverting the batch, so a batch sized from another batch's estimate that failed
 * whole ran out of its gas share: nothing in it happened; the next run estimates it afresh and redoes it.
 */
function shortOfGas(actions: FinalizerAction[], gasLimit: bigint, why: string, l: Logger): BatchSend[] {
  const error = `batch failed with its gas share ${gasLimit} (${why}): redone next run`;
  l.warn("batch ran short of gas", { error });
  return actions.map((action) => ({ action, outcome: { kind: "retry-later", error } }));
}

const batchLog = (log: Logger, actions: FinalizerAction[]) =>
  log.child({ method: actions[0].method, calls: actions.length, jobs: `${actions[0].jobId}…${actions.at(-1)!.jobId}` });

/**
 * Gas per call of a batch, from one estimate of it; undefined (each batch estimated at its send) if the estimate
 * failed. A later batch whose calls cost more than its share runs short: its last calls take no effect, are
 * reported (`whyNoEffect`: they succeed now) and redone by the next run — never lost.
 */
async function gasPerCall(ctx: KeeperContext, actions: FinalizerAction[]): Promise<bigint | undefined> {
  const multicall = new Contract(ctx.batch!.address, MULTICALL3_ABI, ctx.provider);
  try {
    const gas: bigint = await read(ctx, "estimate batch", () =>
      multicall.aggregate3.estimateGas(batchCalls(ctx, actions), { from: ctx.address }),
    );
    return gas / BigInt(actions.length) + 1n;
  } catch {
    return undefined;
  }
}

/** The Multicall3 calls for `actions` (each allowed to fail without reverting the others). */
function batchCalls(ctx: KeeperContext, actions: FinalizerAction[]) {
  const escrow = ctx.escrow as unknown as Contract;
  return actions.map((a) => ({
    target: String(escrow.target),
    allowFailure: true,
    callData: escrow.interface.encodeFunctionData(a.method, a.args),
  }));
}

/**
 * One batch: sent without simulating it first (that would run its ~14 M gas of calls once more before the send);
 * each call's outcome comes from the receipt: the event it emits when it takes effect (JobSettled,
 * EarningsReleased). Only the calls that left none are simulated, after mining, to say why (a race: someone else
 * settled or claimed first). A batch sent twice (a retried send that had landed) is harmless: every call in the
 * copy fails inside `allowFailure`, and is reported as a race.
 */
async function sendChunk(
  ctx: KeeperContext,
  actions: FinalizerAction[],
  log: Logger,
  gasLimit?: bigint,
): Promise<BatchSend[]> {
  const calls = batchCalls(ctx, actions);
  const l = batchLog(log, actions);
  const call: Call = { method: "aggregate3", args: [calls], gasLimit, simulate: false };
  const { outcome, receipt } = await executeForReceipt({ ...ctx, sender: ctx.batchSender! }, call, l);
  if (gasLimit !== undefined && outcome.kind === "failed") return shortOfGas(actions, gasLimit, outcome.error, l);
  if (outcome.kind !== "confirmed") return actions.map((action) => ({ action, outcome }));
  return outcomesFromReceipt(ctx, actions, calls, outcome, receipt, log);
}

/** Each call's outcome: confirmed where its event is in the receipt, else why it took no effect (simulated now). */
async function outcomesFromReceipt(
  ctx: KeeperContext,
  actions: FinalizerAction[],
  calls: ReturnType<typeof batchCalls>,
  outcome: Outcome,
  receipt: ReceiptLike | undefined,
  log: Logger,
): Promise<BatchSend[]> {
  const escrow = ctx.escrow as unknown as Contract;
  const at = String(escrow.target).toLowerCase();
  const effects = new Set(
    (receipt?.logs ?? []).filter((x) => x.address.toLowerCase() === at).map((x) => x.topics.join()),
  );
  const none = actions.flatMap((a, i) => (effects.has(effectTopics(escrow.interface, a).join()) ? [] : [i]));
  const why = await whyNoEffect(
    ctx,
    none.map((i) => calls[i]),
    escrow.interface,
  );
  const out: BatchSend[] = actions.map((action) => ({ action, outcome }));
  none.forEach((i, k) => {
    out[i] = { action: actions[i], outcome: why[k] };
    logNoEffect(log, actions[i], why[k]);
  });
  return out;
}

/** The topics of the event a call emits when it takes effect: the job (and the provider, for a claim). */
function effectTopics(iface: Interface, a: FinalizerAction): string[] {
  const job = zeroPadValue(toBeHex(a.jobId), 32);
  if (a.method === "settle") return [iface.getEvent("JobSettled")!.topicHash, job];
  return [iface.getEvent("EarningsReleased")!.topicHash, job, zeroPadValue(a.args[1].toLowerCase(), 32)];
}

/**
 * Why calls that took no effect in their batch did not: simulated now, in one aggregate3. A revert is a race or a
 * failure as sdk/node/errors.ts classifies it; a call that would succeed now is left to the next run (it re-reads the
 * job), not reported as a failure.
 */
async function whyNoEffect(
  ctx: KeeperContext,
  calls: { target: string; allowFailure: boolean; callData: string }[],
  iface: Interface,
): Promise<Outcome[]> {
  if (calls.length === 0) return [];
  const multicall = new Contract(ctx.batch!.address, MULTICALL3_ABI, ctx.provider);
  const simulated: { success: boolean; returnData: string }[] = await read(ctx, "why no effect", () =>
    multicall.aggregate3.staticCall(calls, { from: ctx.address }),
  );
  return simulated.map((r): Outcome => {
    if (r.success) return { kind: "retry-later", error: "no effect in its batch (succeeds now): redone next run" };
    const err = { data: r.returnData };
    return { kind: classifyError(err, iface) === "race" ? "race" : "failed", error: describeError(err, iface) };
  });
}

function logNoEffect(log: Logger, action: FinalizerAction, outcome: Outcome): void {
  const fields = { job: action.jobId, method: action.method, error: (outcome as { error: string }).error };
  if (outcome.kind === "race") log.warn("lost a race", fields);
  else if (outcome.kind === "failed") log.error("failed", fields);
  else log.warn("no effect in its batch", fields);
}
