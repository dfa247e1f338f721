/**
 * The live one-line status `npm start` keeps at the bottom of a terminal: step, holder, epoch, pending
 * checkpoint, verifier signatures. Log lines print above it (the line is cleared, the log printed, the line
 * redrawn). Off a TTY (a pipe, a test) it prints nothing of its own.
 */
export interface LiveStatus {
  totalSteps: number;
  step?: number;
  holder?: string;
  epoch?: bigint;
  pendingStep?: number;
  signed?: number;
  threshold?: number;
  phase?: string;
}

/** Pure: the status as one line. */
export function statusText(s: LiveStatus): string {
  const parts = [
    `step ${s.step ?? 0}/${s.totalSteps}`,
    `holder ${s.holder ?? "—"}`,
    `epoch ${s.epoch ?? 0n}`,
    s.pendingStep === undefined ? "no checkpoint pending" : `checkpoint ${s.pendingStep} pending`,
    `verifiers signed ${s.signed ?? 0}/${s.threshold ?? 2}`,
  ];
  if (s.phase) parts.push(s.phase);
  return parts.join(" · ");
}

export class StatusLine {
  private state: LiveStatus;
  private shown = false;
  private stopped = false;
  private readonly enabled: boolean;
  private readonly print: (line: string) => void;
  private readonly write: (text: string) => void;

  constructor(
    print: (line: string) => void,
    enabled: boolean,
    totalSteps: number,
    write: (text: string) => void = (t) => void process.stdout.write(t),
  ) {
    this.print = print;
    this.enabled = enabled;
    this.write = write;
    this.state = { totalSteps };
  }

  get current(): LiveStatus {
    return this.state;
  }

  update(change: Partial<LiveStatus>): void {
    this.state = { ...this.state, ...change };
    this.redraw();
  }

  /** A log line, printed above the status. */
  line(text: string): void {
    this.clear();
    this.print(text);
    this.redraw();
  }

  /** Removes the status for good (before the closing summary). */
  stop(): void {
    this.clear();
    this.shown = false;
    this.stopped = true;
  }

  private clear(): void {
    if (this.enabled && this.shown) this.write("\r\x1b[K");
  }

  private redraw(): void {
    if (!this.enabled || this.stopped) return;
    const width = (process.stdout.columns ?? 120) - 1;
    this.write(`\r\x1b[K${statusText(this.state).slice(0, width)}`);
    this.shown = true;
  }
}
