/**
 * What keeps this provider from working right now, in its own words: the last problem of each kind it ran into
 * and has not got past yet (the dashboard's follow stepper used to show a guess). Each kind is set where the
 * agent meets it and cleared where the same action next succeeds; the newest one rides in the signed heartbeat
 * (sdk/rules/heartbeat.ts `problem`), so the coordinator lists it and the dashboard shows it beside the provider.
 */
export type ProblemKind = "store" | "gas";

/** At most this long in a beat: a sentence, not a log dump (the coordinator refuses longer ones). */
export const MAX_PROBLEM_CHARS = 200;

export class Problems {
  private open = new Map<ProblemKind, { text: string; at: number }>();
  private now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  set(kind: ProblemKind, text: string): void {
    const printable = text.replace(/[^\x20-\x7e]+/g, " ").trim();
    const short = printable.length > MAX_PROBLEM_CHARS ? printable.slice(0, MAX_PROBLEM_CHARS - 3) + "..." : printable;
    // Keep the first time it was seen while it lasts: "since" is when it started, not the last retry.
    const at = this.open.get(kind)?.at ?? this.now();
    this.open.set(kind, { text: short, at });
  }

  clear(kind: ProblemKind): void {
    this.open.delete(kind);
  }

  /** The newest open problem's text, or undefined when nothing is in the way. */
  current(): string | undefined {
    let newest: { text: string; at: number } | undefined;
    for (const p of this.open.values()) if (!newest || p.at >= newest.at) newest = p;
    return newest?.text;
  }
}

/** Whether a failed send's description says the key cannot pay for gas. */
export function isOutOfGasMoney(description: string): boolean {
  // sdk/node/txManager.ts says "out of gas money: …"; a node's own words where a send bypassed it.
  return /out of gas money|insufficient funds|INSUFFICIENT_FUNDS|sender doesn't have enough funds/i.test(description);
}
