/** The finalizer's configuration, built and validated once from the CLI flags. */
import { validate } from "node-cron";
import { UsageError } from "../../sdk/args.ts";
import { sharedConfig, str, type FlagValues, type SharedConfig } from "../config.ts";

export const FINALIZER_OPTIONS = {
  cron: { type: "string" },
} as const;

/** Every 10 seconds (node-cron's optional seconds field). */
export const DEFAULT_CRON = "*/10 * * * * *";

export interface FinalizerConfig extends SharedConfig {
  cron: string;
}

export function finalizerConfig(v: FlagValues): FinalizerConfig {
  const cron = str(v.cron) ?? DEFAULT_CRON;
  if (!validate(cron)) throw new UsageError(`--cron "${cron}" is not a valid cron expression (e.g. "${DEFAULT_CRON}")`);
  return { ...sharedConfig(v), cron };
}
