/**
 * The runner every keeper shares: runs the tick in a loop (or once), never lets two ticks overlap, and stops
 * cleanly on SIGINT/SIGTERM (the tick in progress finishes; no new one starts).
 */
import type { Logger } from "../sdk/log.ts";
import { sleep } from "../sdk/retry.ts";

/** What a tick may tell the runner: stop now, with this exit code (e.g. a failed proof of reserves in --strict). */
export interface TickResult {
  stop?: boolean;
  exitCode?: number;
}

export interface RunOptions {
  name: string;
  tick: () => Promise<TickResult | void>;
  intervalMs: number;
  once: boolean;
  signal: AbortSignal;
  logger: Logger;
}

/** Resolves with the exit code: 0 after a clean stop, 1 when `--once` hit an unexpected error, or the tick's own. */
export async function runLoop(opts: RunOptions): Promise<number> {
  const { tick, intervalMs, once, signal, logger } = opts;
  logger.info("started", { keeper: opts.name, intervalMs, once });
  let exitCode = 0;
  while (!signal.aborted) {
    try {
      const result = await tick();
      if (result?.stop) {
        exitCode = result.exitCode ?? 0;
        break;
      }
    } catch (err) {
      // A tick handles each item's error itself; what reaches here is the tick's own reads failing for longer
      // than its retries. Keep going: the next tick rebuilds everything from the chain.
      logger.error("tick failed", { keeper: opts.name, error: (err as Error)?.message ?? String(err) });
      if (once) exitCode = 1;
    }
    if (once) break;
    await sleep(intervalMs, signal);
  }
  logger.info("stopped", { keeper: opts.name, exitCode });
  return exitCode;
}

/** Wraps an async function so that a call made while one is running is skipped (returns undefined). */
export function nonOverlapping<T>(fn: () => Promise<T>): { run: () => Promise<T | undefined>; busy: () => boolean; idle: () => Promise<void> } {
  let running: Promise<T> | undefined;
  return {
    async run() {
      if (running) return undefined;
      running = fn();
      try {
        return await running;
      } finally {
        running = undefined;
      }
    },
    busy: () => running !== undefined,
    idle: async () => {
      await running?.catch(() => undefined);
    },
  };
}

/** An AbortSignal that fires on SIGINT or SIGTERM; `dispose` removes the handlers. */
export function shutdownSignal(logger: Logger): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      logger.warn("second signal: exiting now", { signal: name });
      process.exit(130);
    }
    logger.info("stopping after the current tick", { signal: name });
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
