/**
 * Reading logs from any standard node. Nodes differ at the edges: anvil rejects a range that starts past the head
 * (`BlockOutOfRangeError`) where Hardhat returns nothing; public RPCs cap the span of one request; a load-balanced
 * endpoint may answer from a backend a block behind the head it just reported. So: never ask for an empty or
 * future range, ask in spans the node accepts (halving on a "range too large" refusal), and treat a refused range
 * at the head as "nothing new yet" (the cursor stays, the next poll asks again) — never as a failure.
 */
import { toQuantity, type Filter, type Provider } from "ethers";

export interface BlockRange {
  fromBlock: number;
  toBlock: number;
}

/** Pure: the spans covering [from, to], each at most `maxSpan` blocks; none when from > to. */
export function blockRanges(from: number, to: number, maxSpan: number): BlockRange[] {
  const out: BlockRange[] = [];
  for (let start = Math.max(0, from); start <= to; start += maxSpan) {
    out.push({ fromBlock: start, toBlock: Math.min(to, start + maxSpan - 1) });
  }
  return out;
}

/** The node refused the block range itself (too wide, past its head), not the request as such. */
const RANGE_REFUSAL =
  /out of range|BlockOutOfRange|beyond|future|block range|range (is )?too|too many (blocks|results|logs)|exceed|limit/i;

export function isRangeRefusal(err: unknown): boolean {
  return RANGE_REFUSAL.test(errorText(err));
}

function errorText(err: unknown, depth = 0): string {
  if (!err || typeof err !== "object" || depth > 4) return String(err ?? "");
  const e = err as Record<string, unknown>;
  const own = [e.message, e.shortMessage].filter((v) => typeof v === "string").join(" ");
  return [own, ...["error", "info", "cause"].map((k) => errorText(e[k], depth + 1))].join(" ");
}

export const DEFAULT_MAX_SPAN = 10_000;

/** Which logs: the contract(s) and topic alternatives, as `eth_getLogs` takes them (no block range). */
export interface LogFilter {
  address?: string | string[];
  topics?: readonly (string | readonly string[] | null)[];
}

/** A log as the node sent it, numbers parsed: what a reader of topics and data needs, nothing built per log. */
export interface RawLog {
  address: string;
  topics: readonly string[];
  data: string;
  blockNumber: number;
  index: number;
  transactionHash: string;
}

/**
 * The one way to read logs: those matching `filter` in [from, to], inclusive, in spans the node accepts. Over
 * JSON-RPC the answers are taken as sent (ethers formats, checksums and freezes every log, ≈ 0.7 ms each on a
 * loaded core, 2 s for a cold scan of 3,000); any other provider gives the same logs through `getLogs`. Decode
 * them with `Interface.parseLog` (sdk/events.ts `decodeLogs`).
 */
export async function readLogs(
  provider: Provider,
  filter: LogFilter,
  from: number,
  to: number,
  maxSpan = DEFAULT_MAX_SPAN,
): Promise<RawLog[]> {
  const send = (provider as { send?: (method: string, params: unknown[]) => Promise<unknown> }).send;
  if (typeof send !== "function") {
    return inSpans(
      async (range) =>
        (await provider.getLogs({ ...(filter as Filter), ...range })).map((l) => ({
          address: l.address,
          topics: l.topics,
          data: l.data,
          blockNumber: l.blockNumber,
          index: l.index,
          transactionHash: l.transactionHash,
        })),
      from,
      to,
      maxSpan,
    );
  }
  return inSpans(
    async (range) => {
      const params = { ...filter, fromBlock: toQuantity(range.fromBlock), toBlock: toQuantity(range.toBlock) };
      const logs = (await send.call(provider, "eth_getLogs", [params])) as Record<string, string & string[]>[];
      return logs.map((l) => ({
        address: l.address,
        topics: l.topics,
        data: l.data,
        blockNumber: Number(l.blockNumber),
        index: Number(l.logIndex),
        transactionHash: l.transactionHash,
      }));
    },
    from,
    to,
    maxSpan,
  );
}

/** Runs `fetch` over [from, to] in spans, halving the span on a node's "range too large" refusal. */
async function inSpans<T>(
  fetch: (range: BlockRange) => Promise<T[]>,
  from: number,
  to: number,
  maxSpan: number,
): Promise<T[]> {
  const out: T[] = [];
  let span = maxSpan;
  let start = from;
  while (start <= to) {
    const [range] = blockRanges(start, to, span);
    try {
      out.push(...(await fetch(range)));
      start = range.toBlock + 1;
    } catch (err) {
      if (!isRangeRefusal(err) || span === 1) throw err;
      span = Math.max(1, Math.floor(span / 2));
    }
  }
  return out;
}

/** Every log matching `filter` from `from` up to the current head. */
export async function readLogsToHead(
  provider: Provider,
  filter: LogFilter,
  from = 0,
): Promise<{ logs: RawLog[]; head: number }> {
  const head = await provider.getBlockNumber();
  return { logs: await readLogs(provider, filter, from, head), head };
}

/**
 * Follows a filter block by block: each `poll()` returns the logs of the blocks mined since the last one.
 * A node that mines on a timer or is slower simply yields nothing new until its head moves.
 */
export class LogCursor {
  private next: number;
  private readonly provider: Provider;
  private readonly filter: LogFilter;

  constructor(provider: Provider, filter: LogFilter, fromBlock = 0) {
    this.provider = provider;
    this.filter = filter;
    this.next = fromBlock;
  }

  /** The first block the next poll will read. */
  get position(): number {
    return this.next;
  }

  async poll(): Promise<{ logs: RawLog[]; head: number }> {
    const head = await this.provider.getBlockNumber();
    if (this.next > head) return { logs: [], head };
    try {
      const logs = await readLogs(this.provider, this.filter, this.next, head);
      this.next = head + 1;
      return { logs, head };
    } catch (err) {
      // The head we were told and the range we were refused disagree (a lagging backend): ask again next time.
      if (isRangeRefusal(err)) return { logs: [], head: this.next - 1 };
      throw err;
    }
  }
}
