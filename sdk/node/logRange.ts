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
  /** The block's hash as the node sent it (the cursor checks it against the block it remembers). */
  blockHash?: string;
}

/**
 * How far a read got: the logs of [its start, `reached`], appended span by span as the node answers. A read that then
 * fails leaves here what it had read, so a caller can go on from `reached + 1` instead of from the start (a long scan
 * through a rate-limited endpoint would otherwise restart on every failure and might never finish).
 */
export interface ReadProgress {
  logs: RawLog[];
  reached: number;
}

/**
 * The one way to read logs: those matching `filter` in [from, to], inclusive, in spans the node accepts. Over
 * JSON-RPC the answers are taken as sent (ethers formats, checksums and freezes every log, ≈ 0.7 ms each on a
 * loaded core, 2 s for a cold scan of 3,000); any other provider gives the same logs through `getLogs`. Decode
 * them with `Interface.parseLog` (sdk/node/events.ts `decodeLogs`).
 */
export async function readLogs(
  provider: Provider,
  filter: LogFilter,
  from: number,
  to: number,
  maxSpan = DEFAULT_MAX_SPAN,
  progress: ReadProgress = { logs: [], reached: from - 1 },
): Promise<RawLog[]> {
  const send = (provider as { send?: (method: string, params: unknown[]) => Promise<unknown> }).send;
  if (typeof send !== "function") {
    return inSpans(
      async (range) =>
        (await provider.getLogs({ ...(filter as Filter), ...range }))
          .filter((l) => !l.removed)
          .map((l) => ({
            address: l.address,
            topics: l.topics,
            data: l.data,
            blockNumber: l.blockNumber,
            index: l.index,
            transactionHash: l.transactionHash,
            blockHash: l.blockHash,
          })),
      from,
      to,
      maxSpan,
      progress,
    );
  }
  return inSpans(
    async (range) => {
      const params = { ...filter, fromBlock: toQuantity(range.fromBlock), toBlock: toQuantity(range.toBlock) };
      const logs = (await send.call(provider, "eth_getLogs", [params])) as Record<string, string & string[]>[];
      // A log of a block the node has since dropped (`removed: true`) is never folded.
      return logs
        .filter((l) => !(l.removed as unknown))
        .map((l) => ({
          address: l.address,
          topics: l.topics,
          data: l.data,
          blockNumber: Number(l.blockNumber),
          index: Number(l.logIndex),
          transactionHash: l.transactionHash,
          blockHash: l.blockHash,
        }));
    },
    from,
    to,
    maxSpan,
    progress,
  );
}

/**
 * Runs `fetch` over [from, to] in spans, halving the span on a node's "range too large" refusal; each answered span's
 * logs go to `progress` as they come (what it returns: only this call's, when progress held some already).
 */
async function inSpans(
  fetch: (range: BlockRange) => Promise<RawLog[]>,
  from: number,
  to: number,
  maxSpan: number,
  progress: ReadProgress,
): Promise<RawLog[]> {
  const before = progress.logs.length;
  let span = maxSpan;
  let start = from;
  while (start <= to) {
    const [range] = blockRanges(start, to, span);
    try {
      progress.logs.push(...(await fetch(range)));
      progress.reached = range.toBlock;
      start = range.toBlock + 1;
    } catch (err) {
      if (!isRangeRefusal(err) || span === 1) throw err;
      span = Math.max(1, Math.floor(span / 2));
    }
  }
  return progress.logs.slice(before);
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

/** A reorganisation the cursor found: blocks from `from` on were replaced; `removed` of those it had read are gone. */
export interface Reorged {
  /** The first block after the common ancestor: every log the consumer folded from here on is void. */
  from: number;
  /** How many blocks the cursor had read past the ancestor (the depth of the reorganisation it saw). */
  removed: number;
}

export interface PollResult {
  /** The logs of the blocks read this poll, from the cursor's position (after a reorg: from `reorged.from`). */
  logs: RawLog[];
  head: number;
  /** Present when blocks the cursor had read were removed or replaced: roll back to `from` first, then fold `logs`. */
  reorged?: Reorged;
}

/**
 * Pure: the logs a consumer holds (in chain order) after a poll: a reported reorganisation drops every held log from
 * its `from` on, then the poll's logs follow. A fold that is cheap folds the result from scratch.
 */
export function afterPoll(held: readonly RawLog[], poll: Pick<PollResult, "logs" | "reorged">): RawLog[] {
  const kept = poll.reorged ? held.filter((l) => l.blockNumber < poll.reorged!.from) : [...held];
  return [...kept, ...poll.logs];
}

/** Blocks whose hashes a cursor remembers by default: a reorganisation deeper than this is reported from the start. */
export const DEFAULT_REMEMBERED_BLOCKS = 64;

interface Header {
  number: number;
  hash: string;
  parentHash: string;
}

/**
 * Follows a filter block by block: each `poll()` returns the logs of the blocks mined since the last one.
 * A node that mines on a timer or is slower simply yields nothing new until its head moves.
 *
 * Reorganisations: the cursor remembers the hashes of the last `remember` blocks it read. Each poll first asks for
 * the block before its position again; a different hash (or no such block: a shorter chain) means blocks it read
 * were removed or replaced, so it walks back through what it remembers to the common ancestor (the highest block
 * whose hash is unchanged), moves back to the block after it and says so (`reorged`). The new range's headers must
 * chain by parent hash onto what it remembers, and each log's block hash must be the header's; if the chain moved
 * under the poll itself, the poll returns no logs and the next one reads again. So the logs a consumer folds after
 * rolling back to `reorged.from` are exactly those of the chain at the head it was told. `remember` 0 turns this
 * off (no block is asked for: a reader that only needs new logs and polls very often).
 *
 * A poll that fails part way (a 429 storm after the retries, a dropped connection) throws, and the cursor stays where
 * it was; it keeps the spans it did read, and the next poll asks only for the rest (unless a reorganisation came in
 * between). A long catch-up through a rate-limited endpoint therefore finishes, however often single requests fail.
 */
export class LogCursor {
  private next: number;
  private readonly start: number;
  private readonly provider: Provider;
  private readonly filter: LogFilter;
  private readonly remember: number;
  private readonly maxSpan: number;
  /** block number → hash, for the last `remember` blocks read. */
  private readonly hashes = new Map<number, string>();
  /** What a failed poll had read, from `next` on: the next poll goes on after it rather than from `next` again. */
  private carried?: ReadProgress;

  constructor(
    provider: Provider,
    filter: LogFilter,
    fromBlock = 0,
    remember = DEFAULT_REMEMBERED_BLOCKS,
    maxSpan = DEFAULT_MAX_SPAN,
  ) {
    this.maxSpan = maxSpan;
    this.provider = provider;
    this.filter = filter;
    this.next = fromBlock;
    this.start = fromBlock;
    this.remember = Math.max(0, remember);
  }

  /** The first block the next poll will read. */
  get position(): number {
    return this.next;
  }

  /** Reads the blocks mined since the last poll, up to the head (or `upTo`, when lower: a reader that reads at one block). */
  async poll(upTo?: number): Promise<PollResult> {
    const chainHead = await this.provider.getBlockNumber();
    const reorged = await this.checkAncestry(chainHead);
    const head = Math.min(chainHead, upTo ?? chainHead);
    const more = reorged ? { reorged } : {};
    // what an earlier poll read before it failed stands unless blocks were replaced or it reaches past this head
    const carried = !reorged && this.carried && this.carried.reached <= head ? this.carried : undefined;
    this.carried = undefined;
    if (this.next > head) return { logs: [], head, ...more };
    const progress: ReadProgress = { logs: [...(carried?.logs ?? [])], reached: carried?.reached ?? this.next - 1 };
    try {
      const first = Math.max(this.next, head - this.remember + 1);
      const [, headers] = await Promise.all([
        readLogs(this.provider, this.filter, progress.reached + 1, head, this.maxSpan, progress),
        this.headers(first, head),
      ]);
      const logs = progress.logs;
      if (!this.consistent(headers, logs)) return { logs: [], head: this.next - 1, ...more };
      for (const h of headers) if (h) this.hashes.set(h.number, h.hash);
      for (const n of this.hashes.keys()) if (n <= head - this.remember) this.hashes.delete(n);
      this.next = head + 1;
      return { logs, head, ...more };
    } catch (err) {
      if (progress.reached >= this.next) this.carried = progress;
      // The head we were told and the range we were refused disagree (a lagging backend): ask again next time.
      if (isRangeRefusal(err)) return { logs: [], head: this.next - 1, ...more };
      throw err;
    }
  }

  /** Rolls the cursor back to the common ancestor when a block it read is gone; what it reports, if so. */
  private async checkAncestry(head: number): Promise<Reorged | undefined> {
    const last = this.next - 1;
    const known = this.hashes.get(last);
    if (known === undefined) return undefined;
    if (last <= head && (await this.hashAt(last)) === known) return undefined;
    let ancestor = this.start - 1;
    for (let b = last - 1; this.hashes.has(b); b--) {
      if (b <= head && (await this.hashAt(b)) === this.hashes.get(b)) {
        ancestor = b;
        break;
      }
    }
    for (const n of [...this.hashes.keys()]) if (n > ancestor) this.hashes.delete(n);
    if (ancestor < this.start) this.hashes.clear();
    this.next = ancestor + 1;
    return { from: ancestor + 1, removed: last - ancestor };
  }

  private async hashAt(n: number): Promise<string | undefined> {
    return (await this.provider.getBlock(n))?.hash ?? undefined;
  }

  private async headers(from: number, to: number): Promise<(Header | null)[]> {
    const out: Promise<Header | null>[] = [];
    for (let n = from; n <= to; n++) {
      out.push(
        this.provider.getBlock(n).then((b) => (b?.hash ? { number: n, hash: b.hash, parentHash: b.parentHash } : null)),
      );
    }
    return Promise.all(out);
  }

  /** The headers chain onto what the cursor remembers and onto each other, and every log is of those blocks. */
  private consistent(headers: (Header | null)[], logs: RawLog[]): boolean {
    const byNumber = new Map<number, string>();
    for (const h of headers) {
      if (!h) return false;
      const parent = byNumber.get(h.number - 1) ?? this.hashes.get(h.number - 1);
      if (parent !== undefined && parent !== h.parentHash) return false;
      byNumber.set(h.number, h.hash);
    }
    return logs.every((l) => {
      const hash = byNumber.get(l.blockNumber);
      return hash === undefined || l.blockHash === undefined || hash === l.blockHash;
    });
  }
}
