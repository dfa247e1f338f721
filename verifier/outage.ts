/**
 * How long each item's store reads have been failing. An outage is never a refusal: the verifier keeps retrying
 * every tick and, once an item has failed for longer than the bound, says it abstains (in its log and in the tick
 * summary) instead of signing anything. Pure bookkeeping; the clock is passed in.
 */
export const DEFAULT_ABSTAIN_AFTER_MS = 60_000;

export type OutageState = { sinceMs: number; abstaining: boolean; firstAbstain: boolean };

export class OutageTracker {
  private since = new Map<string, number>();
  private announced = new Set<string>();
  private boundMs: number;

  constructor(boundMs = DEFAULT_ABSTAIN_AFTER_MS) {
    this.boundMs = boundMs;
  }

  /** Records a failed read of `key` at `now`. */
  failed(key: string, now: number): OutageState {
    const first = this.since.get(key) ?? now;
    this.since.set(key, first);
    const abstaining = now - first >= this.boundMs;
    const firstAbstain = abstaining && !this.announced.has(key);
    if (firstAbstain) this.announced.add(key);
    return { sinceMs: now - first, abstaining, firstAbstain };
  }

  /** The store answered for `key` again. */
  recovered(key: string): boolean {
    this.announced.delete(key);
    return this.since.delete(key);
  }

  /** Items still failing past the bound. */
  abstaining(now: number): number {
    let n = 0;
    for (const t of this.since.values()) if (now - t >= this.boundMs) n++;
    return n;
  }

  retain(live: Set<string>): void {
    for (const k of this.since.keys()) if (!live.has(k)) this.recovered(k);
  }
}
