/**
 * Options every keeper shares, parsed from the CLI flags once and validated (sdk/run/args.ts does the parsing).
 */
import { UsageError, parsePositiveInt } from "../sdk/run/args.ts";
import { parseConfirmations } from "../sdk/node/confirmations.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./chain.ts";

export const SHARED_OPTIONS = {
  once: { type: "boolean", default: false },
  "interval-ms": { type: "string" },
  "tx-timeout-ms": { type: "string" },
  "rpc-timeout-ms": { type: "string" },
  "from-block": { type: "string" },
} as const;

export interface SharedConfig {
  dryRun: boolean;
  once: boolean;
  pretty: boolean;
  /** How long to wait for a receipt before treating a transaction as dropped (the next tick re-checks). */
  txTimeoutMs: number;
  rpcTimeoutMs: number;
  /** Block to start event scans from; absent: the deployment's first block (sdk/node/deployment.ts `eventsFrom`). */
  fromBlock?: number;
  retry: RetryPolicy;
}

export type FlagValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export function sharedConfig(v: FlagValues): SharedConfig {
  return {
    dryRun: v["dry-run"] === true,
    once: v.once === true,
    pretty: v.pretty === true,
    txTimeoutMs: parsePositiveInt(str(v["tx-timeout-ms"]), "tx-timeout-ms", 60_000),
    rpcTimeoutMs: parsePositiveInt(str(v["rpc-timeout-ms"]), "rpc-timeout-ms", 15_000),
    fromBlock: v["from-block"] === undefined ? undefined : parseNonNegativeInt(str(v["from-block"]), "from-block", 0),
    retry: DEFAULT_RETRY,
  };
}

export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function parseNonNegativeInt(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${flag} must be an integer ≥ 0, got "${value}"`);
  return n;
}

export function parsePort(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`--${flag} must be a port (0-65535), got "${value}"`);
  return n;
}

/** `--confirmations N` (blocks on top before a money action relies on a block); undefined when not given. */
export function optionalConfirmations(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseConfirmations(value, "--confirmations");
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
