/**
 * The agent's chain I/O: reads retried through RPC outages ("chain unreachable", backoff, never a crash loop),
 * writes serialized (one nonce sequence for the work loop and the lease heartbeat) and their reverts decoded.
 */
import type { Interface, TransactionResponse } from "ethers";
import type { Protocol } from "../sdk/node/contracts.ts";
import { classifyError, decodeCustomError, describeError, type ErrorClass } from "../sdk/node/errors.ts";
import type { Logger } from "../sdk/run/log.ts";
import { withRetry } from "../sdk/run/retry.ts";
import { mined } from "../sdk/node/txManager.ts";
import { jobIds, type JobView } from "../sdk/rules/job.ts";
import { readJob } from "../sdk/node/jobReads.ts";
import { toProviderRecord, type ProviderRecord } from "./decide.ts";
import { isOutOfGasMoney, type Problems } from "./problems.ts";

export type WriteResult =
  { ok: true; hash: string } | { ok: false; class: ErrorClass; error?: string; description: string };

/**
 * Reverts that mean "you are no longer the assignee at this epoch" (or your own report lapsed undecided, which
 * ends the hold): the agent stops writing.
 */
export const FENCE_ERRORS = new Set([
  "JobEscrowStaleEpoch",
  "JobEscrowNotAssignee",
  "JobEscrowUnexpectedStatus",
  "JobEscrowLeaseLapsed",
  "JobEscrowReportLapsed",
]);

export interface ChainOptions {
  protocol: Protocol;
  logger: Logger;
  signal?: AbortSignal;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Where "cannot pay for gas" is said while it lasts (the heartbeat carries it to the dashboard). */
  problems?: Problems;
}

export class StoppedError extends Error {}

export class Chain {
  protocol: Protocol;
  logger: Logger;
  signal?: AbortSignal;
  iface: Interface;
  baseMs: number;
  maxMs: number;
  private queue: Promise<unknown> = Promise.resolve();
  private outage = false;
  private problems?: Problems;

  constructor(opts: ChainOptions) {
    this.protocol = opts.protocol;
    this.logger = opts.logger;
    this.signal = opts.signal;
    this.iface = opts.protocol.escrow.interface;
    this.baseMs = opts.retryBaseMs ?? 500;
    this.maxMs = opts.retryMaxMs ?? 15_000;
    this.problems = opts.problems;
  }

  /** A view call, retried with backoff while the RPC is unreachable; throws StoppedError once stopped. */
  async read<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      const value = await withRetry(fn, {
        retries: Infinity,
        baseMs: this.baseMs,
        maxMs: this.maxMs,
        signal: this.signal,
        isRetryable: (err) => classifyError(err, this.iface) === "retryable",
        onRetry: (err, attempt, delayMs) => {
          this.outage = true;
          this.logger.warn("chain unreachable", {
            what,
            attempt,
            retryInMs: delayMs,
            error: describeError(err, this.iface),
          });
        },
      });
      if (this.outage) this.logger.info("chain reachable again", { what });
      this.outage = false;
      return value;
    } catch (err) {
      if (this.signal?.aborted) throw new StoppedError("stopped");
      throw err;
    }
  }

  job(id: bigint): Promise<JobView> {
    return this.read(`job ${id}`, () => readJob(this.protocol.escrow, id));
  }

  /** Every job (ids 1..jobCount): jobs are few; the chain stays the one source of truth. */
  async jobs(): Promise<JobView[]> {
    const count = await this.read("jobCount", () => this.protocol.escrow.jobCount());
    const out: JobView[] = [];
    for (const id of jobIds(count)) out.push(await this.job(id));
    return out;
  }

  provider(address: string): Promise<ProviderRecord> {
    return this.read("providerOf", async () => toProviderRecord(await this.protocol.registry.providerOf(address)));
  }

  leaseDuration(): Promise<bigint> {
    return this.read("leaseDuration", () => this.protocol.escrow.leaseDuration());
  }

  /**
   * Sends one transaction and waits for it, one at a time. RPC outages are retried (a repeated report or heartbeat
   * is rejected harmlessly); reverts come back decoded, never thrown.
   */
  write(what: string, send: () => Promise<TransactionResponse>): Promise<WriteResult> {
    const run = async (): Promise<WriteResult> => {
      try {
        // Waited for the manager's way (sdk/node/txManager.ts): a speed-up's or a re-broadcast's receipt counts.
        const receipt = await this.withRpcRetry(what, () => mined(send()));
        this.problems?.clear("gas");
        return { ok: true, hash: receipt?.hash ?? "" };
      } catch (err) {
        const failed = this.failure(err);
        if (isOutOfGasMoney(failed.description)) {
          this.problems?.set(
            "gas",
            `waiting for gas: ${what} failed, the key cannot pay for it (${failed.description})`,
          );
        }
        return failed;
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  failure(err: unknown): { ok: false; class: ErrorClass; error?: string; description: string } {
    return {
      ok: false,
      class: classifyError(err, this.iface),
      error: decodeCustomError(err, this.iface)?.name,
      description: describeError(err, this.iface),
    };
  }

  private withRpcRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return withRetry(fn, {
      retries: Infinity,
      baseMs: this.baseMs,
      maxMs: this.maxMs,
      signal: this.signal,
      isRetryable: (err) => classifyError(err, this.iface) === "retryable",
      onRetry: (err, attempt, delayMs) =>
        this.logger.warn("chain unreachable", {
          what,
          attempt,
          retryInMs: delayMs,
          error: describeError(err, this.iface),
        }),
    });
  }
}

/** Whether a failed write means the agent was fenced off the job. */
export function isFenceRejection(r: WriteResult): boolean {
  return !r.ok && r.error !== undefined && FENCE_ERRORS.has(r.error);
}
