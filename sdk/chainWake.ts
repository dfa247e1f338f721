/**
 * Decisions pushed instead of polled slowly: `sleep(ms)` returns as soon as the chain logs one of the events a
 * loop waits for (a checkpoint reported, accepted or refused, a provider assigned …), or after `ms` at the latest.
 * While someone sleeps, the head is asked for every `pollMs` (eth_blockNumber, cheap on any node); only when it
 * moved are the new blocks' logs fetched, filtered by address and topics. No websocket and no node-side filter
 * (which a node restart or a public RPC would lose): any standard node works. Blocks are followed from the first
 * use on, so an event mined while nobody slept wakes the next sleep at once (at worst one extra re-read).
 */
import type { Provider } from "ethers";
import { LogCursor, type LogFilter } from "./logRange.ts";
import { sleep } from "./retry.ts";

export const WAKE_POLL_MS = 100;

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
    try {
      if (!this.cursor) {
        const head = await this.opts.provider.getBlockNumber();
        // Only wakes, folds nothing: no reorganisation check (it would add a block request to every 100 ms poll).
        this.cursor = new LogCursor(this.opts.provider, this.opts.filter, head + 1, 0);
      }
      const { logs } = await this.cursor.poll();
      if (logs.length) {
        this.seen++;
        this.lastWakeAt = (this.opts.now ?? Date.now)();
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
