/**
 * Decisions pushed instead of polled slowly: `sleep(ms)` returns as soon as the chain logs one of the events a
 * loop waits for (a checkpoint reported, accepted or refused, a provider assigned …), or after `ms` at the latest.
 * While someone sleeps, the head is asked for every `pollMs` (eth_blockNumber, cheap on any node); only when it
 * moved are the new blocks' logs fetched, filtered by address and topics. No websocket and no node-side filter
 * (which a node restart or a public RPC would lose): any standard node works. Blocks are followed from the first
 * use on, so an event mined while nobody slept wakes the next sleep at once (at worst one extra re-read).
 *
 * A reorganisation wakes too: the state a sleeper decided on may be gone, and a replacement block may hold
 * the very event it waits for at a height already read. The cursor checks the blocks it read when the head moved,
 * and every REORG_CHECK_MS while it stands still (a replacement at the same height), not on every 100 ms poll: one
 * block request more per new block, instead of one per poll.
 */
import type { Provider } from "ethers";
import { LogCursor, type LogFilter } from "./logRange.ts";
import { sleep } from "../run/retry.ts";

export const WAKE_POLL_MS = 100;
/** How often a standing head is checked for a replaced block (a reorganisation that kept the height). */
export const REORG_CHECK_MS = 2_000;

export interface ChainWakeOptions {
  provider: Provider;
  /** The logs that wake a sleeper: an address and topic0 alternatives ([[t1, t2, …]]). */
  filter: LogFilter;
  pollMs?: number;
  now?: () => number;
}

export class ChainWake {
  /** When the last matching log was seen (ms, `now`'s clock); 0 before any. */
  lastWakeAt = 0;
  private opts: ChainWakeOptions;
  private cursor?: LogCursor;
  private seen = 0;
  private consumed = 0;
  /** The head at the last cursor poll, and when that was (`now`'s clock). */
  private polledHead = -1;
  private polledAt = -Infinity;
  /** Reorganisations the cursor reported (each woke the sleepers). */
  reorgs = 0;

  constructor(opts: ChainWakeOptions) {
    this.opts = opts;
  }

  /** Waits for a matching log (or one seen since the last sleep), `ms` at most, or until `signal` aborts. */
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const now = this.opts.now ?? Date.now;
    const until = now() + ms;
    const every = this.opts.pollMs ?? WAKE_POLL_MS;
    while (!signal?.aborted) {
      if (await this.poll()) return;
      const left = until - now();
      if (left <= 0) return;
      await sleep(Math.min(every, left), signal);
    }
  }

  /** True when a matching log arrived since the last sleep returned; a failed read is only a missed wake. */
  private async poll(): Promise<boolean> {
    const now = this.opts.now ?? Date.now;
    try {
      const head = await this.opts.provider.getBlockNumber();
      this.cursor ??= new LogCursor(this.opts.provider, this.opts.filter, head + 1);
      if (head !== this.polledHead || now() - this.polledAt >= REORG_CHECK_MS) {
        const { logs, reorged } = await this.cursor.poll();
        [this.polledHead, this.polledAt] = [head, now()];
        if (reorged) this.reorgs++;
        if (logs.length || reorged) {
          this.seen++;
          this.lastWakeAt = now();
        }
      }
    } catch {
      // The chain is unreachable: the caller's own reads report it; the sleep just runs to its end.
    }
    if (this.seen === this.consumed) return false;
    this.consumed = this.seen;
    return true;
  }
}

/** topic0 alternatives for `names` of a contract interface (the filter's first topic). */
export function eventTopics(
  iface: { getEvent(name: string): { topicHash: string } | null },
  names: string[],
): string[][] {
  return [names.map((n) => iface.getEvent(n)!.topicHash)];
}
