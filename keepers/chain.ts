/**
 * What every keeper shares for talking to the chain: the context it is given (contracts, sender, clock, logger),
 * reads with timeout + retry, event scans in chunks, and `execute`, which simulates, sends and waits for one call
 * and classifies what went wrong (retryable → backoff; expected race → warning; anything else → error).
 */
import type { Contract, Interface, Provider } from "ethers";
import type { JobEscrow, ProviderRegistry } from "../types/ethers-contracts/index.ts";
import { classifyError, decodeCustomError, describeError } from "../sdk/node/errors.ts";
import type { Logger } from "../sdk/run/log.ts";
import type { BatchReader } from "../sdk/node/multicall.ts";
import { withRetry } from "../sdk/run/retry.ts";
import { withGasHeadroom } from "../sdk/node/gas.ts";
import { mined } from "../sdk/node/txManager.ts";

export interface ReceiptLike {
  status: number | null;
  blockNumber: number;
  hash: string;
  /** The receipt's logs (an ethers receipt has them; a test's sender may leave them out). */
  logs?: readonly { address: string; topics: readonly string[] }[];
}

export interface TxHandle {
  hash: string;
  /** Resolves with the receipt once mined (null if the node forgot the transaction). */
  wait(): Promise<ReceiptLike | null>;
}

/** How a keeper sends one call to one contract. The default simulates then broadcasts; tests inject failures. */
export interface Sender {
  /** eth_call of the call from the keeper's address; throws the revert. */
  simulate(method: string, args: unknown[]): Promise<void>;
  /** Broadcasts the call (with `gasLimit` when given, else the estimate plus headroom); resolves once accepted. */
  send(method: string, args: unknown[], gasLimit?: bigint): Promise<TxHandle>;
  /**
   * Broadcasts several calls back to back in one slot of the send queue: the nonce and fees read once, the nonces
   * consecutive, no estimate (each names its gas limit). One entry per call: its handle, or the error that stopped
   * the broadcasts there (that call and every later one were not sent).
   */
  sendMany?(method: string, calls: { args: unknown[]; gasLimit: bigint }[]): Promise<(TxHandle | SendError)[]>;
}

/** Why a call of `sendMany` was not broadcast. */
export interface SendError {
  error: unknown;
}

export interface RetryPolicy {
  retries: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 4, baseMs: 250, maxMs: 4_000 };

/** Everything a keeper's tick needs from the outside world, injected (never monkey-patched). */
export interface KeeperContext {
  chainId: bigint;
  /** The deployment's first block, when Ignition's journal recorded it: where event scans start by default. */
  firstBlock?: number;
  escrow: JobEscrow;
  registry: ProviderRegistry;
  provider: Provider;
  /** Sends escrow calls (assign, unassign, acceptCheckpoint, settle, …). */
  sender: Sender;
  /** The keeper's own address, when it has a key. */
  address?: string;
  logger: Logger;
  nowMs: () => number;
  dryRun: boolean;
  txTimeoutMs: number;
  rpcTimeoutMs: number;
  retry: RetryPolicy;
  /** Batched reads through Multicall3 (one by one where none is deployed); absent: built from `provider`. */
  batch?: BatchReader;
  /** Sends Multicall3 `aggregate3` (permissionless escrow calls in bulk) with the keeper's key and send queue. */
  batchSender?: Sender;
}

export class TimeoutError extends Error {
  readonly code = "TIMEOUT";
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function escrowInterface(ctx: KeeperContext): Interface {
  return (ctx.escrow as unknown as Contract).interface;
}

/** A read (or a batch of reads) with a timeout, retried with backoff while the error is retryable. */
export function read<T>(ctx: KeeperContext, what: string, fn: () => Promise<T>): Promise<T> {
  const iface = escrowInterface(ctx);
  return withRetry(() => withTimeout(fn(), ctx.rpcTimeoutMs, what), {
    ...ctx.retry,
    isRetryable: (err) => classifyError(err, iface) === "retryable",
    onRetry: (err, attempt, delayMs) =>
      ctx.logger.warn("rpc read failed, retrying", { what, attempt, delayMs, error: describeError(err, iface) }),
  });
}

/**
 * Serializes broadcasts from one key, so that concurrent sends (several jobs, or several keepers of `keeper all`
 * sharing a key) each get their own nonce. Only the broadcast is serialized; waiting for receipts is not.
 */
export class SendQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/**
 * A sender over an ethers contract with a signer (simulate with eth_call, then broadcast through `queue`).
 * The same call sent again while its first transaction is still pending (a tick whose receipt wait timed out, then
 * the next tick deciding the same) gets the pending one's handle, not a second transaction: the key's manager keeps
 * speeding that one up (sdk/node/txManager.ts), and a second nonce for one intended call could run it twice.
 */
export function contractSender(contract: Contract, queue = new SendQueue()): Sender {
  const pending = new Map<string, TxHandle>();
  return {
    async simulate(method, args) {
      await contract.getFunction(method).staticCall(...args);
    },
    send(method, args, gasLimit) {
      const key = `${method}(${JSON.stringify(args, (_, v) => (typeof v === "bigint" ? v.toString() : v))})`;
      const inFlight = pending.get(key);
      if (inFlight) return Promise.resolve(inFlight);
      return queue.run(async () => {
        const fn = contract.getFunction(method);
        const tx = await fn.send(...args, { gasLimit: gasLimit ?? withGasHeadroom(await fn.estimateGas(...args)) });
        const receipt = receiptOf(() => mined(tx));
        const handle = { hash: tx.hash, wait: () => receipt } satisfies TxHandle;
        pending.set(key, handle);
        receipt.then(
          () => pending.delete(key),
          () => pending.delete(key),
        );
        return handle;
      });
    },
    sendMany(method, calls) {
      return queue.run(async () => {
        const fn = contract.getFunction(method);
        const out: (TxHandle | SendError)[] = [];
        try {
          // The key's transaction manager (sdk/node/txManager.ts) hands out the nonces: consecutive within this slot.
          for (const c of calls) {
            const tx = await fn.send(...c.args, { gasLimit: c.gasLimit });
            out.push({ hash: tx.hash, wait: () => receiptOf(() => mined(tx)) });
          }
        } catch (error) {
          // A broadcast failed: its nonce may or may not be used, so nothing after it goes out on a guess.
          while (out.length < calls.length) out.push({ error });
        }
        return out;
      });
    },
  };
}

/** The receipt, also for a reverted transaction (ethers throws CALL_EXCEPTION carrying it). */
async function receiptOf(wait: () => Promise<unknown>): Promise<ReceiptLike | null> {
  try {
    return (await wait()) as ReceiptLike | null;
  } catch (err) {
    const e = err as { code?: string; receipt?: ReceiptLike };
    if (e?.code === "CALL_EXCEPTION" && e.receipt) return e.receipt;
    throw err;
  }
}

export type Outcome =
  | { kind: "confirmed"; hash: string; block: number }
  | { kind: "dry-run"; simulation: string }
  | { kind: "race"; error: string }
  | { kind: "unconfirmed"; hash: string; error: string }
  | { kind: "retry-later"; error: string }
  | { kind: "failed"; error: string };

export interface Call {
  method: string;
  args: unknown[];
  /** Custom errors that mean "the state moved on" for this call, beyond sdk/node/errors.ts's list. */
  races?: readonly string[];
  /** A gas limit known already (a batch sized from one estimate): no estimate before the send. */
  gasLimit?: bigint;
  /**
   * false: sent without an eth_call first, and a revert is not re-run to say why (a Multicall3 batch of calls that
   * may each fail: simulating would run its ~14 M gas once more, and its receipt's events say what happened).
   */
  simulate?: false;
}

/** How each outcome is logged: a race or a dropped transaction is expected (warn); only a real failure is an error. */
const OUTCOME_LOG: Record<Outcome["kind"], ["info" | "warn" | "error", string]> = {
  confirmed: ["info", "sent"],
  "dry-run": ["info", "dry run: not sent"],
  race: ["warn", "lost a race: the state moved on before our transaction (someone else did it)"],
  unconfirmed: ["warn", "no receipt in time; the next tick re-checks the chain"],
  "retry-later": ["warn", "rpc unavailable; left for the next tick"],
  failed: ["error", "failed"],
};

/**
 * Simulates, sends and waits for one call; never throws. Each attempt re-simulates against the latest state, so a
 * retried send whose first try did land comes back as an expected race, not as a second transaction.
 * A receipt that does not come within `txTimeoutMs` (a dropped transaction) is `unconfirmed`: the next tick
 * rebuilds from the chain and redoes the call if it is still needed.
 */
export async function execute(ctx: KeeperContext, call: Call, log: Logger): Promise<Outcome> {
  return (await executeForReceipt(ctx, call, log)).outcome;
}

/** `execute`, also giving the receipt when one came (a batch reads its calls' outcomes from its logs). */
export async function executeForReceipt(ctx: KeeperContext, call: Call, log: Logger): Promise<Landed> {
  const landed = await executeInner(ctx, call);
  logOutcome(log, call.method, landed.outcome);
  return landed;
}

/** The line `execute` logs for an outcome (level and message by kind). */
export function logOutcome(log: Logger, method: string, outcome: Outcome): void {
  const [level, message] = OUTCOME_LOG[outcome.kind];
  log[level](message, { method, ...outcomeFields(outcome) });
}

/** A send's or a receipt's error as `execute` classifies it (retryable → retry-later; race; anything else: failed). */
export function outcomeOfError(ctx: KeeperContext, err: unknown): Outcome {
  const iface = escrowInterface(ctx);
  return failure(classifyError(err, iface), describeError(err, iface));
}

function outcomeFields(o: Outcome): Record<string, unknown> {
  const { kind, ...rest } = o;
  return { outcome: kind, ...rest };
}

/** An outcome, with the receipt when one came. */
export interface Landed {
  outcome: Outcome;
  receipt?: ReceiptLike;
}

async function executeInner(ctx: KeeperContext, call: Call): Promise<Landed> {
  const iface = escrowInterface(ctx);
  const classify = (err: unknown) => classifyCall(err, iface, call.races);
  const describe = (err: unknown) => describeError(err, iface);
  const simulate = () => withTimeout(ctx.sender.simulate(call.method, call.args), ctx.rpcTimeoutMs, "simulate");
  if (ctx.dryRun) {
    try {
      await simulate();
      return { outcome: { kind: "dry-run", simulation: "ok" } };
    } catch (err) {
      return { outcome: { kind: "dry-run", simulation: describe(err) } };
    }
  }
  let handle: TxHandle;
  try {
    handle = await withRetry(
      async () => {
        if (call.simulate !== false) await simulate();
        return withTimeout(ctx.sender.send(call.method, call.args, call.gasLimit), ctx.rpcTimeoutMs, "send");
      },
      {
        ...ctx.retry,
        isRetryable: (err) => classify(err) === "retryable",
        onRetry: (err, attempt, delayMs) =>
          ctx.logger.warn("send failed, retrying", { method: call.method, attempt, delayMs, error: describe(err) }),
      },
    );
  } catch (err) {
    return { outcome: failure(classify(err), describe(err)) };
  }
  const landed = await awaitReceipt(ctx, handle, call.races);
  if (landed.receipt?.status === 1 || !landed.receipt || call.simulate === false) return landed;
  // Mined but reverted: a receipt carries no revert data, so ask the chain why (now).
  try {
    await ctx.sender.simulate(call.method, call.args);
    return {
      ...landed,
      outcome: { kind: "failed", error: `reverted in block ${landed.receipt.blockNumber} (succeeds now)` },
    };
  } catch (err) {
    return { ...landed, outcome: failure(classify(err), describe(err)) };
  }
}

/**
 * Waits `txTimeoutMs` for a sent transaction's receipt: confirmed, or failed with the receipt when it reverted;
 * unconfirmed when none came in time or the node forgot it (the next tick re-checks the chain and redoes it).
 */
export async function awaitReceipt(ctx: KeeperContext, handle: TxHandle, races?: readonly string[]): Promise<Landed> {
  const iface = escrowInterface(ctx);
  let receipt: ReceiptLike | null;
  try {
    receipt = await withTimeout(handle.wait(), ctx.txTimeoutMs, "receipt");
  } catch (err) {
    const c = classifyCall(err, iface, races);
    const error = describeError(err, iface);
    return { outcome: c === "retryable" ? { kind: "unconfirmed", hash: handle.hash, error } : failure(c, error) };
  }
  if (!receipt)
    return { outcome: { kind: "unconfirmed", hash: handle.hash, error: "transaction unknown to the node" } };
  // The receipt's hash: a speed-up (sdk/node/txManager.ts) may have replaced the version first sent.
  if (receipt.status === 1)
    return { outcome: { kind: "confirmed", hash: receipt.hash, block: receipt.blockNumber }, receipt };
  return { outcome: { kind: "failed", error: `reverted in block ${receipt.blockNumber}` }, receipt };
}

/** sdk/node/errors.ts's classification, with the call's own custom errors that mean "the state moved on" as races. */
function classifyCall(err: unknown, iface: Interface, races?: readonly string[]): "retryable" | "race" | "fatal" {
  const name = races?.length ? decodeCustomError(err, iface)?.name : undefined;
  return name && races!.includes(name) ? "race" : classifyError(err, iface);
}

function failure(c: "retryable" | "race" | "fatal", error: string): Outcome {
  if (c === "race") return { kind: "race", error };
  if (c === "retryable") return { kind: "retry-later", error };
  return { kind: "failed", error };
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping the order of results. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Logs a line only when `value` for `key` changed since the last call (keeps "nothing to do" quiet). */
export function changeLogger() {
  const last = new Map<string, string>();
  return {
    changed(key: string, value: string): boolean {
      if (last.get(key) === value) return false;
      last.set(key, value);
      return true;
    },
    forget(key: string) {
      last.delete(key);
    },
  };
}
