/**
 * The dashboard's incremental ledger (dashboard/src/ledger.ts): folding the events as they arrive, in any split,
 * gives the books of folding them all at once (sdk/rules/ledger.ts), on the committed recording; a new list (seeking
 * back), a shorter one and an event out of chain order (a reorg) fold from scratch.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { foldNew, newLedgerFold } from "../../dashboard/src/ledger.ts";
import { parseRecording, type ChainEvent } from "../../sdk/run/recording.ts";
import { applyEntry, emptyState, foldAll } from "../../dashboard/src/model/state.ts";
import { foldEscrowEvents, type Ledger } from "../../sdk/rules/ledger.ts";
import { isStakeEvent } from "../../sdk/rules/stake.ts";
import { mulberry32 as random } from "../helpers/random.ts";

const REGISTRY = new Set(["ProviderRegistered", "ProviderUpdated", "ProviderDeactivated", "ProviderReactivated"]);

/** The books folded from scratch, as the dashboard did before folding incrementally (null: a partial history). */
function fromScratch(events: readonly ChainEvent[]): Ledger | null {
  try {
    return foldEscrowEvents(
      events
        // The registry's stake events are part of the books (a provider's stake, what reserves owe); its offers are not.
        .filter((e) => isStakeEvent(e.name) || (e.contract !== "registry" && !REGISTRY.has(e.name)))
        .map((e, i) => ({ eventName: e.name, args: e.args, blockNumber: e.blockNumber, index: e.logIndex ?? i })),
    );
  } catch {
    return null;
  }
}

describe("dashboard: the incremental ledger", function () {
  const { entries } = parseRecording(readFileSync("recordings/sample.jsonl", "utf8"));
  const events: ChainEvent[] = foldAll(entries).events;

  it("the committed recording has a full ledger to compare", function () {
    const full = fromScratch(events);
    expect(events.length).to.be.greaterThan(20);
    expect(full, "sample.jsonl folds into a complete ledger").to.not.equal(null);
    expect(full!.jobs.size).to.be.greaterThan(0);
    expect(full!.owes).to.be.greaterThan(0n);
  });

  it("folding e1..ek then ek+1..en equals folding e1..en, for every k", function () {
    for (let k = 0; k <= events.length; k++) {
      const list = events.slice(0, k);
      const f = newLedgerFold();
      foldNew(f, list);
      list.push(...events.slice(k));
      foldNew(f, list);
      expect(f.ledger, `split at ${k}`).to.deep.equal(fromScratch(events));
    }
  });

  it("folding in random batches equals the fold from scratch after every batch", function () {
    const next = random(42);
    for (let run = 0; run < 25; run++) {
      const list: ChainEvent[] = [];
      const f = newLedgerFold();
      let i = 0;
      while (i < events.length) {
        const n = 1 + Math.floor(next() * (run % 2 ? 3 : 40));
        list.push(...events.slice(i, i + n));
        i += n;
        foldNew(f, list);
        expect(f.ledger, `run ${run}, after ${list.length} events`).to.deep.equal(fromScratch(list));
      }
    }
  });

  it("playback as the pages see it: the run's events at times t1 < t2 < … equal the fold up to each", function () {
    const f = newLedgerFold();
    const state = emptyState();
    const last = entries[entries.length - 1].ms;
    let at = 0;
    for (let t = 0; t <= last + 250; t += 250) {
      // the events array of one RunState grows in place, like useRun's
      while (at < entries.length && entries[at].ms <= t) applyEntry(state, entries[at++]);
      foldNew(f, state.events);
      expect(f.ledger, `at ${t} ms`).to.deep.equal(fromScratch(state.events));
    }
  });

  it("a new list (seeking back, a live reset) or a shorter one folds from scratch", function () {
    const f = newLedgerFold();
    const list = events.slice();
    foldNew(f, list);
    const half = events.slice(0, Math.floor(events.length / 2));
    expect(foldNew(f, half)).to.equal(true);
    expect(f.ledger).to.deep.equal(fromScratch(half));
    list.length = 10; // the same array, shortened
    foldNew(f, half);
    foldNew(f, list);
    expect(f.ledger).to.deep.equal(fromScratch(list));
    expect(foldNew(f, list), "nothing new: nothing folded").to.equal(false);
  });

  it("an event before the last folded one (a reorg, a restarted chain) folds everything again in chain order", function () {
    const f = newLedgerFold();
    const cut = events.findIndex((e, i) => i > 5 && e.blockNumber > events[0].blockNumber + 2);
    // hold back one event, fold past it, then let it arrive late
    const late = events[cut - 1];
    const list = [...events.slice(0, cut - 1), ...events.slice(cut, cut + 10)];
    foldNew(f, list);
    const before = f.version;
    list.push({ ...late, logIndex: undefined, blockNumber: late.blockNumber });
    foldNew(f, list);
    expect(f.version).to.be.greaterThan(before);
    expect(f.ledger).to.deep.equal(fromScratch(list));
    list.push(...events.slice(cut + 10, cut + 20));
    foldNew(f, list);
    expect(f.ledger, "and keeps following the list after").to.deep.equal(fromScratch(list));
  });

  it("a partial history (a recording started mid-run) is unknown, and stays unknown as events arrive", function () {
    const created = events.findIndex((e) => e.name === "JobCreated");
    const partial = events.slice(created + 1, created + 5);
    expect(fromScratch(partial), "folding from scratch throws").to.equal(null);
    const f = newLedgerFold();
    foldNew(f, partial);
    expect(f.ledger).to.equal(null);
    partial.push(...events.slice(created + 5));
    foldNew(f, partial);
    expect(f.ledger).to.equal(null);
    expect(fromScratch(partial)).to.equal(null);
  });
});
