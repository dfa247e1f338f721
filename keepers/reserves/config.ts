/** The reserves watch's configuration, built and validated once from the CLI flags. */
import { parsePositiveInt } from "../../sdk/run/args.ts";
import { sharedConfig, str, type FlagValues, type SharedConfig } from "../config.ts";

export const RESERVES_OPTIONS = {
  strict: { type: "boolean", default: false },
  "max-blocks-per-tick": { type: "string" },
} as const;

export interface ReservesConfig extends SharedConfig {
  /** Exit non-zero on the first failed proof of reserves. */
  strict: boolean;
  /** How often to look for new blocks. */
  intervalMs: number;
  /** At most this many new blocks are checked per poll (the newest); older ones are reported as skipped. */
  maxBlocksPerTick: number;
}

export function reservesConfig(v: FlagValues): ReservesConfig {
  return {
    ...sharedConfig(v),
    strict: v.strict === true,
    intervalMs: parsePositiveInt(str(v["interval-ms"]), "interval-ms", 1_000),
    maxBlocksPerTick: parsePositiveInt(str(v["max-blocks-per-tick"]), "max-blocks-per-tick", 50),
  };
}
