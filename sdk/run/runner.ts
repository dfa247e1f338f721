/**
 * The one runner every long-running part shares (keepers, verifier, provider agent): runs a tick on an interval or
 * a cron schedule (or once), never lets two ticks overlap, and stops cleanly on its signal (SIGINT/SIGTERM through
 * `shutdownSignal`): the tick in progress finishes, no new one starts. A tick handles each action's failure
 * itself; what reaches the runner is the tick's own reads failing, which the next tick simply retries.
 */
import { compactRpcStats } from "../node/rpc.ts";
import { schedule as cronSchedule, validate as validCron } from "node-cron";
import type { Logger } from "./log.ts";
import { sleep } from "./retry.ts";

/** What a tick may tell the runner: stop now, with this exit code (e.g. a failed proof of reserves in --strict). */
export interface TickResult {
  stop?: boolean;
  exitCode?: number;
}

/** When ticks run: `intervalMs` after the previous one ended, or on a cron expression (node-cron, with seconds). */
export type Schedule = { intervalMs: number; cron?: undefined } | { cron: string; intervalMs?: undefined };

export type RunOptions = Schedule & {
  name: string;
  tick: () => Promise<TickResult | void>;
  once: boolean;
  signal: AbortSignal;
  logger: Logger;
  /** Log "started" and "stopped" lines (default); a part that announces itself in its own words turns it off. */
  announce?: boolean;
  /** Waits between interval ticks (default: sleep); a ChainWake (sdk/node/chainWake.ts) ends the wait on an event. */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
};

/** Resolves with the exit code: 0 after a clean stop, 1 when `--once` hit an unexpected error, or the tick's own. */
export async function runLoop(opts: RunOptions): Promise<number> {
  const { once, logger, name } = opts;
  const announce = opts.announce ?? true;
  const schedule = opts.cron ? { cron: opts.cron } : { intervalMs: opts.intervalMs };
  if (announce) logger.info("started", { keeper: name, ...schedule, once });
  const step = guardedTick(opts);
  let exitCode: number;
  if (once) exitCode = (await step()) ?? 0;
  else if (opts.cron !== undefined) exitCode = await onCron(opts.cron, step, opts);
  else exitCode = await onInterval(opts.intervalMs, step, opts.signal, opts.wait ?? sleep);
  // With the process's RPC counters (sdk/node/rpc.ts): calls, requests, retries by kind, failovers, exhausted calls.
  if (announce) logger.info("stopped", { keeper: name, exitCode, rpc: compactRpcStats() });
  return exitCode;
}

/** One tick with its errors logged: resolves with an exit code when the runner must stop, else undefined. */
function guardedTick(opts: RunOptions): () => Promise<number | undefined> {
  return async () => {
    try {
      const result = await opts.tick();
      if (result?.stop) return result.exitCode ?? 0;
    } catch (err) {
      // Each item's error is handled inside the tick; this is the tick's own reads failing for longer than its
      // retries. Keep going: the next tick rebuilds everything from the chain.
      opts.logger.error("tick failed", { keeper: opts.name, error: (err as Error)?.message ?? String(err) });
      if (opts.once) return 1;
    }
    return undefined;
  };
}

async function onInterval(
  intervalMs: number,
  step: () => Promise<number | undefined>,
  signal: AbortSignal,
  wait: (ms: number, signal: AbortSignal) => Promise<void>,
) {
  while (!signal.aborted) {
    const code = await step();
    if (code !== undefined) return code;
    await wait(intervalMs, signal);
  }
  return 0;
}

/** Ticks on a cron schedule until stopped; a firing while a tick still runs is skipped (and logged). */
async function onCron(cron: string, step: () => Promise<number | undefined>, opts: RunOptions): Promise<number> {
  const { logger, name, signal } = opts;
  if (!validCron(cron)) throw new RangeError(`"${cron}" is not a valid cron expression`);
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  signal.addEventListener("abort", stop, { once: true });
  let exitCode = 0;
  const guarded = nonOverlapping(async () => {
    const code = await step();
    if (code !== undefined) {
      exitCode = code;
      stop();
    }
  });
  const fields = { keeper: name, source: "node-cron" };
  const task = cronSchedule(
    cron,
    async () => {
      if (guarded.busy()) logger.warn("previous run still going; skipped", { keeper: name });
      await guarded.run();
    },
    {
      name: `gpuchain-${name}`,
      noOverlap: true,
      // node-cron's own messages (e.g. "execution blocked by overlap prevention") go to our log.
      logger: {
        info: (m) => logger.info(String(m), fields),
        warn: (m) => logger.warn(String(m), fields),
        error: (m) => logger.error(String(m), fields),
        debug: () => {},
      },
    },
  );
  if (!stopped.signal.aborted && !signal.aborted) {
    await new Promise<void>((resolve) => stopped.signal.addEventListener("abort", () => resolve(), { once: true }));
  }
  signal.removeEventListener("abort", stop);
  await task.stop();
  await task.destroy();
  await guarded.idle();
  return exitCode;
}

/** Wraps an async function so that a call made while one is running is skipped (returns undefined). */
export function nonOverlapping<T>(fn: () => Promise<T>): {
  run: () => Promise<T | undefined>;
  busy: () => boolean;
  idle: () => Promise<void>;
} {
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

/** An AbortSignal that fires on SIGINT or SIGTERM (a second one exits at once); `dispose` removes the handlers. */
export function shutdownSignal(
  logger: Logger,
  message = "stopping after the current tick",
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      logger.warn("second signal: exiting now", { signal: name });
      process.exit(130);
    }
    logger.info(message, { signal: name });
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
