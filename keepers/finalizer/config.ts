/** The finalizer's configuration, built and validated once from the CLI flags. */
import { validate } from "node-cron";
import { UsageError } from "../../sdk/run/args.ts";
import {
  optionalConfirmations,
  parseNonNegativeInt,
  sharedConfig,
  str,
  type FlagValues,
  type SharedConfig,
} from "../config.ts";

export const FINALIZER_OPTIONS = {
  cron: { type: "string" },
  "watch-ms": { type: "string" },
  confirmations: { type: "string" },
} as const;

/** Every 10 seconds (node-cron's optional seconds field). */
export const DEFAULT_CRON = "*/10 * * * * *";
/** How often the head is polled while a dispute window or an arbiter deadline is ahead (a Base block is 2 s). */
export const DEFAULT_WATCH_MS = 1_000;

export interface FinalizerConfig extends SharedConfig {
  cron: string;
  /** Between two looks at the chain head while a deadline is ahead; a block past one starts a run at once. */
  watchMs: number;
  /** Blocks on top of the block a run decides on (undefined: the network's default, sdk/node/confirmations.ts). */
  confirmations?: number;
}

export function finalizerConfig(v: FlagValues): FinalizerConfig {
  const cron = str(v.cron) ?? DEFAULT_CRON;
  if (!validate(cron)) throw new UsageError(`--cron "${cron}" is not a valid cron expression (e.g. "${DEFAULT_CRON}")`);
  const watchMs = parseNonNegativeInt(str(v["watch-ms"]), "watch-ms", DEFAULT_WATCH_MS);
  if (watchMs === 0) throw new UsageError(`--watch-ms must be at least 1 (milliseconds), got 0`);
  const confirmations = optionalConfirmations(str(v.confirmations));
  return { ...sharedConfig(v), cron, watchMs, confirmations };
}
