/** Flags every command shares, parsed once and validated with clear errors. */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { defaultDeploymentPath } from "./deployment.ts";

export const COMMON_OPTIONS = {
  rpc: { type: "string", default: "http://127.0.0.1:8545" },
  deployment: { type: "string", default: defaultDeploymentPath() },
  key: { type: "string" },
  store: { type: "string", default: ".gpuchain/store" },
  pretty: { type: "boolean", default: false },
  "dry-run": { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies ParseArgsConfig["options"];

export class UsageError extends Error {}

/** Parses `argv` with the common options plus `extra`; unknown flags are an error, not silently ignored. */
export function parseCommand<T extends NonNullable<ParseArgsConfig["options"]>>(argv: string[], extra: T) {
  try {
    return parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...extra }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function requireString(value: unknown, flag: string): string {
  if (typeof value !== "string" || value.length === 0) throw new UsageError(`--${flag} is required`);
  return value;
}

/** A positive decimal number of test USDC (6 decimals) → base units. */
export function parseUsdc(value: string, flag: string): bigint {
  if (!/^\d+(\.\d{1,6})?$/.test(value)) throw new UsageError(`--${flag} must be a USDC amount like 0.002, got "${value}"`);
  const [whole, frac = ""] = value.split(".");
  const units = BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, "0"));
  if (units === 0n) throw new UsageError(`--${flag} must be above zero`);
  return units;
}

export function parsePositiveInt(value: string | undefined, flag: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${flag} is required`);
    return fallback;
  }
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`--${flag} must be a positive integer, got "${value}"`);
  return n;
}
