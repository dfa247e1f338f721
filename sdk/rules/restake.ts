/**
 * A provider slashed for a proven fault is not assigned again until it has re-staked — until a stake
 * deposit (the registry's StakeDeposited) lands after its latest slash (the registry's StakeSlashed, emitted by
 * `refuseWithFault` through the escrow). Coordinator policy: the escrow's `assign` does not enforce it, and only
 * the coordinator key assigns. Pure: the coordinator (keepers/coordinator/chainView.ts, decide.ts), `gpuchain
 * explain` and `wallet`, and the dashboard's providers table fold the same events with the same rule.
 *
 * "After" is chain order: a later block, or the same block and a later log. So a deposit in the slash's own block
 * counts when its log comes after the slash's (the stake was topped up after the loss) and not when it comes before
 * it; a deposit in an earlier block never counts. Each slash needs its own deposit after it.
 */
import { formatTime } from "../words/format.ts";

/** Where a log sits in chain order. */
export interface LogPosition {
  blockNumber: number;
  /** The log's index in its block. */
  logIndex: number;
}

/** A provider's latest slash (a StakeSlashed log), and when it was mined once known (unix seconds). */
export interface SlashMark extends LogPosition {
  jobId?: bigint;
  /** The lock slashed (USDC units). */
  amount?: bigint;
  at?: bigint;
}

/** Whether `a` comes strictly after `b` in chain order (block, then log index). */
export function isAfter(a: LogPosition, b: LogPosition): boolean {
  return a.blockNumber !== b.blockNumber ? a.blockNumber > b.blockNumber : a.logIndex > b.logIndex;
}

/**
 * The rule: whether a provider whose latest slash is `slash` and latest deposit is `deposit` still waits for a
 * re-stake. Never slashed: no. Slashed: until a deposit strictly after the slash in chain order.
 */
export function awaitsRestake(slash: LogPosition | undefined, deposit: LogPosition | undefined): boolean {
  return slash !== undefined && (deposit === undefined || !isAfter(deposit, slash));
}

/** The registry events the rule folds. */
export const RESTAKE_EVENTS = ["StakeSlashed", "StakeDeposited"] as const;

/**
 * Each provider's latest slash and latest deposit (lower-case address), in any order of application: the latest is
 * kept by chain position, so folding a log twice or out of order gives the same answer.
 */
export class RestakeBook {
  private readonly slashes = new Map<string, SlashMark>();
  private readonly deposits = new Map<string, LogPosition>();
  /** The providers that wait for a re-stake now, with their latest slash (lower-case address). */
  readonly waiting = new Map<string, SlashMark>();

  /** A StakeSlashed of `provider` at `mark`. */
  slashed(provider: string, mark: SlashMark): void {
    const key = provider.toLowerCase();
    const prior = this.slashes.get(key);
    if (prior && !isAfter(mark, prior)) return;
    this.slashes.set(key, mark);
    this.update(key);
  }

  /** A StakeDeposited of `provider` at `at`. */
  deposited(provider: string, at: LogPosition): void {
    const key = provider.toLowerCase();
    const prior = this.deposits.get(key);
    if (prior && !isAfter(at, prior)) return;
    this.deposits.set(key, { blockNumber: at.blockNumber, logIndex: at.logIndex });
    this.update(key);
  }

  /** One of RESTAKE_EVENTS by name (other names are ignored). */
  apply(name: string, provider: string, mark: SlashMark): void {
    if (name === "StakeSlashed") this.slashed(provider, mark);
    else if (name === "StakeDeposited") this.deposited(provider, mark);
  }

  /** The slash `provider` still has to re-stake after, if any. */
  awaiting(provider: string): SlashMark | undefined {
    return this.waiting.get(provider.toLowerCase());
  }

  private update(key: string): void {
    const slash = this.slashes.get(key);
    if (slash && awaitsRestake(slash, this.deposits.get(key))) this.waiting.set(key, slash);
    else this.waiting.delete(key);
  }
}

/** A decoded contract event as the dashboard and the CLI hold it (bigints may be decimal strings). */
export interface RestakeEventLike {
  name: string;
  args: Record<string, unknown>;
  blockNumber: number;
  logIndex?: number;
}

/**
 * The book of a list of decoded events (any contract's: only RESTAKE_EVENTS count). An event without its log index
 * is placed by its position in the list.
 */
export function restakeBookOf(events: readonly RestakeEventLike[]): RestakeBook {
  const book = new RestakeBook();
  events.forEach((e, i) => {
    if (!(RESTAKE_EVENTS as readonly string[]).includes(e.name)) return;
    const a = e.args ?? {};
    const mark: SlashMark = { blockNumber: e.blockNumber, logIndex: e.logIndex ?? i };
    if (e.name === "StakeSlashed") {
      if (a.jobId !== undefined) mark.jobId = BigInt(String(a.jobId));
      if (a.amount !== undefined) mark.amount = BigInt(String(a.amount));
    }
    book.apply(e.name, String(a.provider), mark);
  });
  return book;
}

/** "slashed at block 57 (2026-12-01T10:00:00Z) on job 1" — where and when the slash happened, as far as known. */
export function describeSlash(mark: SlashMark): string {
  const when = mark.at === undefined ? "" : ` (${formatTime(mark.at)})`;
  const job = mark.jobId === undefined ? "" : ` on job ${mark.jobId}`;
  return `slashed at block ${mark.blockNumber}${when}${job}`;
}

/** The sentence every surface says: "provider X: slashed at block N (time) on job J, not assigned until it re-stakes". */
export function restakeLine(provider: string, mark: SlashMark): string {
  return `provider ${provider}: ${describeSlash(mark)}, not assigned until it re-stakes`;
}

/** The dashboard's short status for such a provider. */
export const RESTAKE_STATUS = "slashed — waits for re-stake";
