/**
 * What a person sees: badges that say what kind of run this is, a live progress line on a TTY, and (otherwise) a
 * structured "progress" log at most every few seconds. Logs and the progress line share the terminal, so a log
 * line first clears the progress line and then redraws it.
 */
import type { Logger } from "../sdk/run/log.ts";
import type { DeviceProfile } from "./device.ts";

/** `fault`: the injected fault's name (ProviderBehaviour.fault), undefined when honest. */
export function badges(device: DeviceProfile, fault: string | undefined, localChain: boolean): string[] {
  const out = [device.kind === "GPU" ? "Real GPU" : "Synthetic"];
  if (device.capped) out.push("Capped profile");
  if (fault) out.push("Injected fault");
  if (localChain) out.push("Local chain");
  return out;
}

export interface ProgressState {
  jobId: bigint;
  epoch: bigint;
  step: number;
  totalSteps: number;
  loss: number;
  stepsPerSecond: number;
}

export function progressLine(p: ProgressState, tags: string[], fault?: string): string {
  const pct = p.totalSteps ? Math.floor((100 * p.step) / p.totalSteps) : 0;
  const loss = Number.isFinite(p.loss) ? p.loss.toFixed(4) : String(p.loss);
  const faultText = fault ? ` fault=${fault}` : "";
  return (
    `job ${p.jobId} (epoch ${p.epoch})  step ${p.step}/${p.totalSteps} ${pct}%  loss ${loss}  ` +
    `${p.stepsPerSecond.toFixed(1)} steps/s  [${tags.join("] [")}]${faultText}`
  );
}

/** A terminal that shows one live line under the logs (TTY) or nothing (pipes). */
export class Terminal {
  tty: boolean;
  out: NodeJS.WritableStream;
  private line = "";

  constructor(out: NodeJS.WritableStream & { isTTY?: boolean }) {
    this.out = out;
    this.tty = Boolean(out.isTTY);
  }

  /** Writes a log line above the progress line. */
  log(text: string): void {
    if (this.tty && this.line) this.out.write("\r\x1b[2K");
    this.out.write(text + "\n");
    if (this.tty && this.line) this.out.write(this.line);
  }

  show(text: string): void {
    if (!this.tty) return;
    this.line = text;
    this.out.write("\r\x1b[2K" + text);
  }

  clear(): void {
    if (this.tty && this.line) this.out.write("\r\x1b[2K");
    this.line = "";
  }
}

/** Progress sink: live line on a TTY, throttled structured logs otherwise. */
export class Progress {
  tags: string[];
  fault?: string;
  logger: Logger;
  terminal?: Terminal;
  everyMs: number;
  now: () => number;
  private lastLogAt = Number.NEGATIVE_INFINITY;

  constructor(opts: {
    tags: string[];
    fault?: string;
    logger: Logger;
    terminal?: Terminal;
    everyMs?: number;
    now: () => number;
  }) {
    this.tags = opts.tags;
    this.fault = opts.fault;
    this.logger = opts.logger;
    this.terminal = opts.terminal;
    this.everyMs = opts.everyMs ?? 5_000;
    this.now = opts.now;
  }

  update(p: ProgressState): void {
    if (this.terminal?.tty) {
      this.terminal.show(progressLine(p, this.tags, this.fault));
      return;
    }
    if (this.now() - this.lastLogAt < this.everyMs && p.step !== p.totalSteps) return;
    this.lastLogAt = this.now();
    this.logger.info("progress", {
      job: p.jobId,
      epoch: p.epoch,
      step: p.step,
      totalSteps: p.totalSteps,
      loss: Number.isFinite(p.loss) ? Number(p.loss.toFixed(6)) : String(p.loss),
      stepsPerSecond: Number(p.stepsPerSecond.toFixed(2)),
      badges: this.tags,
    });
  }

  done(): void {
    this.terminal?.clear();
  }
}
