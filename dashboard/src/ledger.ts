/**
 * The escrow's books from the events on screen, through the same pure code `gpuchain wallet` and
 * `gpuchain explain` use (sdk/ledger.ts, sdk/narrative.ts).
 */
import { foldEscrowEvents, statusAt, type Ledger, type LedgerJob } from "../../sdk/ledger.ts";
import type { ChainEvent } from "./model/entries.ts";

export { providerSummaries } from "../../sdk/narrative.ts";
export { walletOf, JobStatus, statusAt } from "../../sdk/ledger.ts";
export type { Ledger, LedgerJob };

const REGISTRY_EVENTS = new Set([
  "ProviderRegistered",
  "ProviderUpdated",
  "ProviderDeactivated",
  "ProviderReactivated",
]);

let memo: { events: readonly ChainEvent[]; length: number; ledger: Ledger | null } | null = null;

export function ledgerOf(events: readonly ChainEvent[]): Ledger | null {
  if (memo && memo.events === events && memo.length === events.length) return memo.ledger;
  let ledger: Ledger | null;
  try {
    ledger = foldEscrowEvents(
      events
        .filter((e) => e.contract !== "registry" && !REGISTRY_EVENTS.has(e.name))
        .map((e, i) => ({ eventName: e.name, args: e.args, blockNumber: e.blockNumber, index: e.logIndex ?? i })),
    );
  } catch {
    ledger = null; // a partial history (e.g. a recording started mid-run): the views say "unknown"
  }
  memo = { events, length: events.length, ledger };
  return ledger;
}

export const STATUS_NAMES = [
  "None",
  "Open",
  "Running",
  "Dispute window",
  "Settleable",
  "Disputed",
  "Arbiter timed out",
  "Settled",
  "Cancelled",
];

export function statusName(job: LedgerJob, nowSec: bigint): string {
  return STATUS_NAMES[statusAt(job, nowSec)] ?? "unknown";
}
