/**
 * The recording format, one home: one line of a recording (`npm start` writes it, demo/recording.ts), one message
 * of the dashboard server's live stream (dashboard/server/feed.ts) and what the page folds (dashboard/src): the same
 * shape, so live and recorded runs go through the same fold and the same views. JSON lines, bigints as decimal
 * strings. Pure and browser-safe.
 */
import { formatTime } from "../words/format.ts";

export interface Entry {
  ms: number; // since the run (or the dashboard server) started
  kind: "badge" | "event" | "log" | "metric" | "summary" | "note";
  source: string;
  data: unknown;
}

/** When the recording started, from its first log line with a time ("t"), as an ISO time; none: "date not recorded". */
export function recordingStart(entries: readonly Entry[]): string {
  for (const e of entries) {
    const t = (e.data as { t?: unknown } | null)?.t;
    if (e.kind === "log" && typeof t === "string") return formatTime(new Date(Date.parse(t) - e.ms));
  }
  return "date not recorded";
}

/**
 * The note a run writes when it moves a local chain's clock forward (evm_increaseTime): a recording's chain clock
 * jumps there, and a player that derives time-driven states (a dispute window's end) from the recording's own
 * clock adds it (dashboard/src/model/clock.ts).
 */
export const clockAdvancedNote = (seconds: number) => `advanced the local chain's clock by ${seconds} s`;

/** The seconds a `clockAdvancedNote` says the chain's clock moved; null for any other note. */
export function clockAdvanceOf(note: unknown): number | null {
  const m = /^advanced the local chain's clock by (\d+) s$/.exec(String(note));
  return m ? Number(m[1]) : null;
}

/** One entry as its line of a recording (without the newline): JSON, bigints as decimal strings. */
export function encodeEntry(entry: Entry): string {
  return JSON.stringify(entry, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

/** A decoded contract event as the recording and the live stream carry it (bigints as decimal strings). */
export interface ChainEvent {
  name: string;
  args: Record<string, unknown>;
  blockNumber: number;
  /** Present in the live stream; recordings before it have none. */
  transactionHash?: string;
  logIndex?: number;
  contract?: "escrow" | "registry";
}

/** What a `metric` entry from source "reorg" says: blocks from `from` on were replaced (sdk/node/logRange.ts `Reorged`). */
export interface ReorgNote {
  from: number;
  removed: number;
}

/** The entry's block, for the entries that describe one block's chain (events, reserves samples); else undefined. */
function blockOf(e: Entry): number | undefined {
  const d = e.data as { blockNumber?: unknown; block?: unknown } | null;
  if (e.kind === "event" && typeof d?.blockNumber === "number") return d.blockNumber;
  if (e.kind === "metric" && e.source === "reserves" && typeof d?.block === "number") return d.block;
  return undefined;
}

/**
 * Pure: `entries` rolled back across a reorganisation: every event and reserves sample of a block from `from` on
 * is dropped (the chain that had them is gone); the fold of what remains plus the new chain's entries equals the
 * fold of the new chain (folds are pure, so the consumers fold again from scratch).
 */
export function rolledBack(entries: readonly Entry[], from: number): Entry[] {
  return entries.filter((e) => {
    const b = blockOf(e);
    return b === undefined || b < from;
  });
}

/** Parses JSON-lines text into entries; a bad line is reported with its number and skipped, never guessed. */
export function parseRecording(text: string): { entries: Entry[]; errors: string[] } {
  const entries: Entry[] = [];
  const errors: string[] = [];
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const e = JSON.parse(line) as Entry;
      if (typeof e.ms !== "number" || typeof e.kind !== "string") throw new Error("no ms or kind");
      entries.push(e);
    } catch (err) {
      errors.push(`line ${i + 1}: ${(err as Error).message}`);
    }
  });
  entries.sort((a, b) => a.ms - b.ms);
  return { entries, errors };
}

/**
 * The kinds of entry a run writes from its own processes and no chain read gives: the run's badges, its
 * processes' decision lines (verifiers' decisions with their reasons, accuracy and text sample; agents' badges and
 * progress; the keepers' decisions), its notes and its summary. The chain's events and reserves samples are read
 * from the chain by every reader itself.
 */
export const RUN_KINDS: ReadonlySet<Entry["kind"]> = new Set(["badge", "log", "note", "summary"]);

/**
 * A run's entries as they are made, for more than one reader: the recording's file (demo/recording.ts Recorder)
 * and, while the run lasts, the dashboard server's live feed (dashboard/server/feed.ts), so that live and the
 * recording of the same run carry the same lines from the same place, at the same `ms`.
 */
export class RunLog {
  readonly startedAt: number;
  private readonly kept: Entry[] = [];
  private readonly listeners = new Set<(e: Entry) => void>();

  constructor(startedAt = Date.now()) {
    this.startedAt = startedAt;
  }

  add(kind: Entry["kind"], source: string, data: unknown): Entry {
    const e: Entry = { ms: Date.now() - this.startedAt, kind, source, data };
    if (!RUN_KINDS.has(kind)) return e;
    this.kept.push(e);
    for (const f of this.listeners) f(e);
    return e;
  }

  /** Every run entry (RUN_KINDS) so far, then each new one as it is added, to `f`; returns how to stop. */
  follow(f: (e: Entry) => void): () => void {
    for (const e of this.kept) f(e);
    this.listeners.add(f);
    return () => void this.listeners.delete(f);
  }
}

/** The run's line naming the addresses it holds keys for (the client, the keepers' keys, the verifiers, providers). */
export function namesEntryData(names: Record<string, string>): Record<string, unknown> {
  return { component: "run", msg: "names", names };
}

/**
 * The names a log entry's data gives addresses (lower-case address → name): the run's "names" line
 * (namesEntryData), a verifier's "verifier started" line (its process name, `source`); {} for any other. The live
 * feed and the page's fold both name from it.
 */
export function namesIn(source: string, data: unknown): Record<string, string> {
  const d = (data ?? {}) as { component?: unknown; msg?: unknown; names?: unknown; verifier?: unknown };
  if (d.component === "run" && d.msg === "names" && d.names && typeof d.names === "object") {
    const out: Record<string, string> = {};
    for (const [a, n] of Object.entries(d.names as Record<string, unknown>)) {
      if (/^0x[0-9a-fA-F]{40}$/.test(a) && typeof n === "string" && n) out[a.toLowerCase()] = n;
    }
    return out;
  }
  if (d.component === "verifier" && d.msg === "verifier started" && typeof d.verifier === "string") {
    return { [d.verifier.toLowerCase()]: source };
  }
  return {};
}
