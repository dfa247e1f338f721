/**
 * The verifier's memory of what it signed, keyed by report (job, epoch, step, hash) or verdict (job, model hash).
 * Kept in memory and, when a file is given, in a small 0600 JSON file written atomically, so a restarted verifier
 * re-sends the signature it already made instead of deciding again. Without the file a restart re-verifies; the
 * sampling salt is derived from the key and the report (work.ts), so it re-derives the same decision.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { SignedDecision } from "./work.ts";

const FILE_VERSION = 1;

/** Signing a second, different decision for a report already decided (equivocation) is never allowed. */
export class EquivocationError extends Error {}
/** The decisions file is unreadable, of another version, or another key's. */
export class DecisionsFileError extends Error {}

/** Where the decisions were made: a file from another chain, escrow or behaviour is not reused. */
export type DecisionContext = { chainId: string; escrow: string; behaviour: string };

export class DecisionStore {
  private decisions = new Map<string, SignedDecision>();
  private file: string | undefined;
  private owner: string;
  private context: DecisionContext | undefined;
  /** True when the file held decisions of another context, which were set aside (the file is then rewritten). */
  discardedOtherContext = false;

  /** `owner` (the signer's address) guards against reading another key's file. */
  constructor(owner: string, file?: string, context?: DecisionContext) {
    this.owner = owner.toLowerCase();
    this.file = file;
    this.context = context && { ...context, escrow: context.escrow.toLowerCase() };
    if (file) this.load(file);
  }

  get(key: string): SignedDecision | undefined {
    return this.decisions.get(key);
  }

  /** Records a decision. Refuses to replace a different decision for the same key (that would be equivocation). */
  put(d: SignedDecision): void {
    const existing = this.decisions.get(d.key);
    if (existing && existing.body.digest !== d.body.digest) {
      throw new EquivocationError(`refusing to sign a second, different decision for ${d.key}`);
    }
    this.decisions.set(d.key, d);
    this.save();
  }

  /** Forgets decisions the chain no longer waits for (decided, fenced, or the job moved on). */
  retain(live: Set<string>): number {
    let dropped = 0;
    for (const key of this.decisions.keys()) {
      if (!live.has(key)) {
        this.decisions.delete(key);
        dropped++;
      }
    }
    if (dropped) this.save();
    return dropped;
  }

  get size(): number {
    return this.decisions.size;
  }

  private load(file: string): void {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    const data = JSON.parse(text) as {
      version: number;
      owner: string;
      context?: DecisionContext;
      decisions: SignedDecision[];
    };
    if (data.version !== FILE_VERSION)
      throw new DecisionsFileError(`${file}: unsupported decisions file version ${data.version}`);
    if (data.owner.toLowerCase() !== this.owner)
      throw new DecisionsFileError(`${file} holds decisions of ${data.owner}, not ${this.owner}`);
    if (JSON.stringify(data.context ?? null) !== JSON.stringify(this.context ?? null)) {
      this.discardedOtherContext = data.decisions.length > 0;
      return;
    }
    for (const d of data.decisions) this.decisions.set(d.key, d);
  }

  private save(): void {
    if (!this.file) return;
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    const data = {
      version: FILE_VERSION,
      owner: this.owner,
      context: this.context ?? null,
      decisions: [...this.decisions.values()],
    };
    writeFileSync(tmp, JSON.stringify(data, null, 1) + "\n", { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
  }
}
