/**
 * Reads escrow events from a block on and folds them into the ledger (sdk/rules/ledger.ts). Reads go in bounded block
 * chunks (public RPCs cap a getLogs range), and can be narrowed by topic to one job or one account's jobs, so
 * `explain JOB` does not fetch every event of every job.
 */
import { zeroPadValue, toBeHex, type Contract, type Interface, type TopicFilter } from "ethers";
import type { JobEscrow, ProviderRegistry } from "../../types/ethers-contracts/index.ts";
import { foldEscrowEvents, type EscrowEvent, type Ledger } from "../rules/ledger.ts";
import { readLogs, type RawLog } from "./logRange.ts";

/** Blocks per getLogs request. */
export const LOG_CHUNK = 10_000;

export interface LedgerQuery {
  /** Only these jobs' events (every job event has the job id as its first indexed argument). */
  jobIds?: bigint[];
  /** Only the jobs this account took part in (as client or provider), and its withdrawals. */
  account?: string;
  /** Last block to read (default: the latest). */
  toBlock?: number;
  /**
   * The provider registry: with a full read its stake events are folded in too, so `owes` counts stakes; with
   * `account`, that account's own stake events (its stake books).
   */
  registry?: ProviderRegistry;
  chunk?: number;
}

/** The escrow's events from `fromBlock` on (all, or narrowed by `query`), folded into its books. */
export async function escrowLedger(escrow: JobEscrow, fromBlock = 0, query: LedgerQuery = {}): Promise<Ledger> {
  const c = escrow as unknown as Contract;
  const toBlock = query.toBlock ?? (await c.runner!.provider!.getBlockNumber());
  const read = (topics: TopicFilter | "*") => chunkedLogs(c, topics, fromBlock, toBlock, query.chunk ?? LOG_CHUNK);
  let jobIds = query.jobIds;
  const topic = (name: string) => c.interface.getEvent(name)!.topicHash;
  const extra: EscrowEvent[] = [];
  if (query.account !== undefined) {
    const who = zeroPadValue(query.account, 32);
    // The account as the second indexed argument: JobCreated's client, a provider in ProviderAssigned,
    // CheckpointAccepted, EarningsReleased, …; as the third: the finder of a ProviderSlashed (paid a bounty);
    // as the first: Withdrawn (job events have the job id there).
    const named = [...(await read([null, null, who])), ...(await read([topic("ProviderSlashed"), null, null, who]))];
    jobIds = [...new Set(named.map((e) => BigInt(e.topics[1])))];
    extra.push(...(await read([topic("Withdrawn"), who])));
    const registry = query.registry as unknown as Contract | undefined;
    // Every registry event names the provider first: its stake books (deposited, locked, unbonding, slashed).
    if (registry)
      extra.push(...(await chunkedLogs(registry, [null, who], fromBlock, toBlock, query.chunk ?? LOG_CHUNK)));
  }
  // A narrowed read still needs who receives the fee share of a slash or a forfeited bond (a rare event).
  if (jobIds !== undefined) extra.push(...(await read([topic("FeeRecipientSet")])));
  if (jobIds === undefined) {
    const registry = query.registry as unknown as Contract | undefined;
    const stakes = registry ? await chunkedLogs(registry, "*", fromBlock, toBlock, query.chunk ?? LOG_CHUNK) : [];
    return foldEscrowEvents([...(await read("*")), ...stakes]);
  }
  if (jobIds.length === 0) return foldEscrowEvents(extra);
  const events: EscrowEvent[] = [...extra];
  // Topic OR-lists stay short enough for any node: 100 job ids per filter.
  for (let i = 0; i < jobIds.length; i += 100) {
    events.push(...(await read([null, jobIds.slice(i, i + 100).map((id) => zeroPadValue(toBeHex(id), 32))])));
  }
  return foldEscrowEvents(events);
}

/** `c`'s logs matching `topics` in [fromBlock, toBlock], decoded (sdk/node/logRange.ts: the one way to read logs). */
async function chunkedLogs(
  c: Contract,
  topics: TopicFilter | "*",
  fromBlock: number,
  toBlock: number,
  chunk: number,
): Promise<DecodedLog[]> {
  const filter = { address: String(c.target), ...(topics === "*" ? {} : { topics }) };
  return decodeLogs(c.interface, await readLogs(c.runner!.provider!, filter, fromBlock, toBlock, chunk));
}

/** A decoded log: the shape the ledger folds, with its topics (the indexed arguments as sent). */
export type DecodedLog = EscrowEvent & { topics: readonly string[] };

/** Logs decoded with `iface` (others skipped), in the shape the ledger folds. */
export function decodeLogs(iface: Interface, logs: readonly RawLog[]): DecodedLog[] {
  const out: DecodedLog[] = [];
  for (const log of logs) {
    const parsed = safeParse(iface, log);
    if (parsed) {
      out.push({
        eventName: parsed.name,
        args: parsed.args,
        blockNumber: log.blockNumber,
        index: log.index,
        topics: log.topics,
      });
    }
  }
  return out;
}

function safeParse(iface: Interface, log: RawLog) {
  try {
    return iface.parseLog(log);
  } catch {
    return null;
  }
}
