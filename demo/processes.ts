/**
 * The child processes `npm start` runs (chain, keepers, verifiers, providers): spawned on this Node, their output
 * read line by line, stopped together on exit or Ctrl-C. Nothing is left running behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export type LineHandler = (name: string, line: string, stream: "stdout" | "stderr") => void;

/** The niceness a child starts with (`nice -n`), by its name; undefined: the group's own. */
export type NiceOf = (name: string) => number | undefined;

/** Told when a child exits: its name, its exit code or the signal that ended it, and how it ended. */
export type ExitHandler = (name: string, code: number | null, signal: NodeJS.Signals | null, how: ExitInfo) => void;

export interface ExitInfo {
  /** This group asked it to stop (kill, stopAll): not news. */
  requested: boolean;
  /** Its last lines on stderr (at most STDERR_TAIL), oldest first: why it ended, when it says so. */
  stderr: string[];
}

/** How many of a child's last stderr lines are kept for its exit. */
export const STDERR_TAIL = 8;

export class ProcessGroup {
  private readonly children = new Map<string, ChildProcess>();
  /** The children this group asked to stop. */
  private readonly stopping = new WeakSet<ChildProcess>();
  /** Per child: settled once it exited and its owner was told (onExit). */
  private readonly ended = new WeakMap<ChildProcess, Promise<void>>();
  private readonly onLine: LineHandler;
  private readonly niceOf: NiceOf;
  /** Set by the owner (npm start --keep tells the user when a part of the network dies). */
  onExit?: ExitHandler;

  constructor(onLine: LineHandler, niceOf: NiceOf = () => undefined) {
    this.onLine = onLine;
    this.niceOf = niceOf;
  }

  /**
   * Starts `node <args>` (or `program <args>`) under `name`; `wrapper` runs it elsewhere (--hosts:
   * `ip netns exec NS`, same pid).
   */
  start(
    name: string,
    args: string[],
    env: Record<string, string> = {},
    wrapper: string[] = [],
    program = process.execPath,
  ): ChildProcess {
    // Through nice(1), not a setpriority after the spawn: every thread the child starts inherits it (Linux
    // renices one thread at a time).
    const nice = this.niceOf(name);
    const [cmd, ...pre] = [...(nice === undefined ? [] : ["nice", "-n", String(nice)]), ...wrapper, program];
    const child = spawn(cmd, [...pre, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.children.set(name, child);
    const stderr: string[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      createInterface({ input: child[stream]! }).on("line", (line) => {
        if (stream === "stderr" && line.trim()) keepLast(stderr, line, STDERR_TAIL);
        this.onLine(name, line, stream);
      });
    }
    const ended = new Promise<void>((resolve) => {
      child.once("exit", (code, signal) => {
        this.children.delete(name);
        // Told once its last words are read ("close": its pipes are drained), or a second after its exit when a
        // grandchild holds a pipe open.
        let told = false;
        const tell = () => {
          if (told) return;
          told = true;
          this.onExit?.(name, code, signal, { requested: this.stopping.has(child), stderr: [...stderr] });
          resolve();
        };
        child.once("close", tell);
        setTimeout(tell, 1_000).unref();
      });
    });
    this.ended.set(child, ended);
    return child;
  }

  /** How many children are running. */
  get size(): number {
    return this.children.size;
  }

  has(name: string): boolean {
    return this.children.has(name);
  }

  /** Sends `signal` to one child; resolves when it has exited (and the owner was told). */
  async kill(name: string, signal: NodeJS.Signals): Promise<void> {
    const child = this.children.get(name);
    if (!child) return;
    this.stopping.add(child);
    child.kill(signal);
    await this.ended.get(child);
  }

  /**
   * SIGTERM to everyone, then SIGKILL to whoever is still there after `graceMs`. Children named in `last` stop
   * after all others (the chain, so that the others do not log RPC failures while shutting down).
   */
  async stopAll(graceMs = 5_000, last: string[] = []): Promise<void> {
    await this.stopSome((name) => !last.includes(name), graceMs);
    await this.stopSome(() => true, graceMs);
  }

  private async stopSome(select: (name: string) => boolean, graceMs: number): Promise<void> {
    const pending = [...this.children.entries()]
      .filter(([name]) => select(name))
      .map(async ([name, child]) => {
        this.stopping.add(child);
        child.kill("SIGTERM");
        const timer = setTimeout(() => this.children.get(name)?.kill("SIGKILL"), graceMs);
        await this.ended.get(child);
        clearTimeout(timer);
      });
    await Promise.all(pending);
  }
}

function keepLast(lines: string[], line: string, max: number): void {
  lines.push(line);
  if (lines.length > max) lines.shift();
}

/** Runs `node <args>` to completion and returns its exit code and output (for deploy steps). */
export function runToEnd(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; output: string; ended: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    // `ended` says how, for an error message when the child printed nothing (a signal leaves code null).
    child.on("close", (code, signal) =>
      resolve({ code: code ?? 1, output, ended: signal ? `killed by ${signal}` : `exit code ${code}` }),
    );
  });
}
