/**
 * The escrow's books from the events on screen, through the same pure code `gpuchain wallet` and
 * `gpuchain explain` use (sdk/rules/ledger.ts, sdk/words/narrative.ts).
 */
import {
  appendEscrowEvents,
  chainOrder,
  emptyLedger,
  statusAt,
  type EscrowEvent,
  type Ledger,
  type LedgerJob,
} from "../../sdk/rules/ledger.ts";
import type { ChainEvent } from "../../sdk/run/recording.ts";
import { isStakeEvent } from "../../sdk/rules/stake.ts";

export { providerSummaries } from "../../sdk/words/narrative.ts";
export { walletOf, JobStatus, statusAt } from "../../sdk/rules/ledger.ts";
export type { Ledger, LedgerJob };

const REGISTRY_EVENTS = new Set([
  "ProviderRegistered",
  "ProviderUpdated",
  "ProviderDeactivated",
  "ProviderReactivated",
]);

/**
 * The books of one growing list of events, folded incrementally: each call folds only the events pushed since the
 * last one. A new list (playback seeking back, a live reset) or an event before the last folded one (a reorg, a
 * restarted chain) folds from scratch, so the result always equals `foldEscrowEvents` of the whole list.
 */
export interface LedgerFold {
  events: readonly ChainEvent[] | null;
  /** How many of `events` are folded. */
  seen: number;
  /** How many of them were escrow events (the fallback log index, as in a fold of the whole list). */
  escrow: number;
  last: EscrowEvent | null;
  /** null: a partial history (e.g. a recording started mid-run), and it stays partial as events are added. */
  ledger: Ledger | null;
  /** Bumped whenever `ledger` changed: memoize on it, the ledger itself is updated in place. */
  version: number;
}

export function newLedgerFold(): LedgerFold {
  return { events: null, seen: 0, escrow: 0, last: null, ledger: emptyLedger(), version: 0 };
}

/** Brings `f` up to date with `events` (in place); true when the ledger changed. */
export function foldNew(f: LedgerFold, events: readonly ChainEvent[]): boolean {
  if (f.events === events && f.seen === events.length) return false;
  const reset = f.events !== events || events.length < f.seen;
  if (reset) Object.assign(f, newLedgerFold(), { events, version: f.version + 1 });
  const fresh: EscrowEvent[] = [];
  for (let i = f.seen; i < events.length; i++) {
    const e = events[i];
    // Of the registry's events only the stake ones belong in the books (a provider's stake, and what reserves owe).
    if ((e.contract === "registry" || REGISTRY_EVENTS.has(e.name)) && !isStakeEvent(e.name)) continue;
    fresh.push({ eventName: e.name, args: e.args, blockNumber: e.blockNumber, index: e.logIndex ?? f.escrow });
    f.escrow += 1;
  }
  f.seen = events.length;
  if (fresh.length === 0) return reset;
  f.version += 1;
  fresh.sort(chainOrder);
  if (f.last !== null && chainOrder(fresh[0], f.last) < 0) return rebuild(f, events);
  f.last = fresh[fresh.length - 1];
  if (f.ledger === null) return true;
  try {
    appendEscrowEvents(f.ledger, fresh);
  } catch {
    f.ledger = null; // the views say "unknown"
  }
  return true;
}

/** An event before the last folded one: fold the whole list again, in chain order, as one batch. */
function rebuild(f: LedgerFold, events: readonly ChainEvent[]): boolean {
  const version = f.version;
  Object.assign(f, newLedgerFold());
  foldNew(f, events.slice()); // a new list: starts from scratch
  f.events = events; // and keeps following the caller's list
  f.version = version + 1;
  return true;
}

const shared = newLedgerFold();

/** The ledger of the events on screen; one fold shared by the pages, updated with what arrived since. */
export function ledgerOf(events: readonly ChainEvent[]): Ledger | null {
  foldNew(shared, events);
  return shared.ledger;
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
