/**
 * Pure: what `npm start` makes of a child process (chain, keepers, a verifier, a provider, the store) that exits
 * while the run still needs it. One that exits on its own ends the run at once, with its last words on stderr,
 * instead of the run waiting out a timeout for something that child will never do.
 */
import { parseFault } from "../agent/faults.ts";

export interface ChildExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The run asked it to stop (alice's SIGKILL, the shutdown). */
  requested: boolean;
  /** Its last lines on stderr, oldest first. */
  stderr: string[];
}

/** The longest stderr line shown as it is; longer ones are cut (a stack's first line says enough). */
const SHOWN_CHARS = 300;

/** Whether `e` ends the run: any exit the run did not ask for, except mallory's own `die-at` fault. */
export function exitEndsRun(e: ChildExit, fault: string): boolean {
  if (e.requested) return false;
  return !(e.name === "mallory" && parseFault(fault || undefined)?.kind === "die-at");
}

/** How the exit reads: "exited with code 2", "was killed by SIGSEGV". */
export function howItEnded(e: Pick<ChildExit, "code" | "signal">): string {
  return e.signal ? `was killed by ${e.signal}` : `exited with code ${e.code}`;
}

/** What the run prints when `e` ends it: its last stderr lines, and the one line the run fails with. */
export function exitReport(e: ChildExit): { lines: string[]; message: string } {
  const how = howItEnded(e);
  const shown = e.stderr.map((l) => (l.length > SHOWN_CHARS ? `${l.slice(0, SHOWN_CHARS)}…` : l));
  const last = shown.at(-1);
  return {
    lines: last
      ? [`[${e.name}] ${how} during the run; its last lines on stderr:`, ...shown.map((l) => `[${e.name}]   ${l}`)]
      : [`[${e.name}] ${how} during the run, saying nothing on stderr`],
    message: `${e.name} ${how} during the run${last ? `: ${last}` : " (nothing on stderr; its output is above)"}`,
  };
}
