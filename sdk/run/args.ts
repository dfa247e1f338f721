/**
 * Flags every command shares, parsed once and validated with clear one-line errors: what was wrong, the value
 * given, what would be right. A UsageError (exit 2) is about what was typed; a CommandError (exit 1) about the
 * world the command met (a key file, a deployment, the RPC). Nothing here touches the network.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { getAddress } from "ethers";
import { defaultDeploymentPath } from "../node/deployment.ts";
import { usdcUnits } from "../words/format.ts";
import { configureFees } from "../node/fees.ts";
import { configureRpc } from "../node/rpc.ts";

export const COMMON_OPTIONS = {
  rpc: { type: "string", default: "http://127.0.0.1:8545" },
  deployment: { type: "string", default: defaultDeploymentPath() },
  key: { type: "string" },
  store: { type: "string", default: ".gpuchain/store" },
  "rpc-timeout-ms": { type: "string" },
  "rpc-rps": { type: "string" },
  "poll-ms": { type: "string" },
  "tx-timeout-ms": { type: "string" },
  "max-fee-gwei": { type: "string" },
  pretty: { type: "boolean", default: false },
  "dry-run": { type: "boolean", default: false },
  debug: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies ParseArgsConfig["options"];

type Options = NonNullable<ParseArgsConfig["options"]>;

export class UsageError extends Error {
  /** Print the command's usage after the one line (an unknown flag or a missing argument). */
  readonly showUsage: boolean;
  constructor(message: string, showUsage = false) {
    super(message);
    this.showUsage = showUsage;
  }
}

/** Input that parses but does not fit the world: exit 1, one line, no stack. */
export class CommandError extends Error {}

/**
 * Parses `argv` with the common options plus `extra`; unknown flags are an error, not silently ignored.
 * `--rpc-rps` and `--poll-ms` set the process's RPC settings (sdk/node/rpc.ts) for every client made after, and
 * `--max-fee-gwei` the fee cap of every transaction manager made after (sdk/node/fees.ts).
 */
export function parseCommand<T extends Options>(argv: string[], extra: T) {
  const parsed = parseFlags(argv, { ...COMMON_OPTIONS, ...extra });
  const v = parsed.values as Record<string, unknown>;
  configureRpc({
    rps: typeof v["rpc-rps"] === "string" ? parseRate(v["rpc-rps"], "rpc-rps") : undefined,
    pollingMs: typeof v["poll-ms"] === "string" ? parsePositiveInt(v["poll-ms"], "poll-ms") : undefined,
  });
  try {
    configureFees({ maxFeeGwei: typeof v["max-fee-gwei"] === "string" ? v["max-fee-gwei"] : undefined });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return parsed;
}

/** Requests per second: a number ≥ 0 (0 = no limit). */
function parseRate(value: string, flag: string): number {
  const n = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} must be requests per second (0 = no limit), got "${value}"`);
  return n;
}

/** Parses `argv` with exactly `options` (for entry points with flags of their own: `npm start`, `npm run bench`). */
export function parseFlags<T extends Options>(argv: string[], options: T) {
  try {
    return parseArgs({ args: joinDashValues(argv, options), options, allowPositionals: true, strict: true });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw usageFromParseArgs(err as Error & { code?: string });
  }
}

/**
 * `--price -1` is ambiguous to Node's parser (is -1 a flag?); a value that is no known flag is the flag's value,
 * so it reaches the validator and gets a message about the number, not about parsing.
 */
function joinDashValues(argv: string[], options: Options): string[] {
  const out: string[] = [];
  // A negative number standing alone (`job cancel -3`) is a positional for the validator to name, not a flag.
  const negatives: string[] = [];
  const end = (rest: string[]) => (negatives.length || rest.length ? [...out, "--", ...negatives, ...rest] : out);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") return end(argv.slice(i + 1));
    if (/^-\d/.test(a) && !isKnownFlag(a, options)) {
      negatives.push(a);
      continue;
    }
    const name = a.startsWith("--") && !a.includes("=") ? a.slice(2) : undefined;
    const next = argv[i + 1];
    if (name && options[name]?.type === "string" && next?.startsWith("-") && next !== "--") {
      if (isKnownFlag(next, options)) throw new UsageError(`--${name} needs a value, got the flag ${next}`, true);
      out.push(`${a}=${next}`);
      i++;
      continue;
    }
    out.push(a);
  }
  return end([]);
}

function isKnownFlag(token: string, options: Options): boolean {
  if (token.startsWith("--")) return token.slice(2).split("=")[0] in options;
  return Object.values(options).some((o) => o.short !== undefined && token === `-${o.short}`);
}

function usageFromParseArgs(err: Error & { code?: string }): UsageError {
  const flag = /'(-[^' ]+)/.exec(err.message)?.[1] ?? "";
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return new UsageError(`unknown option ${flag}`, true);
  if (/argument missing/.test(err.message)) return new UsageError(`${flag} needs a value`, true);
  if (/does not take an argument/.test(err.message)) return new UsageError(`${flag} takes no value`, true);
  return new UsageError(err.message.split("\n")[0], true);
}

/** At most `names.length` positionals; a stray one is named, not ignored. */
export function expectPositionals(positionals: string[], names: string[]): void {
  if (positionals.length > names.length) {
    const extra = positionals[names.length];
    const want = names.length ? `it takes ${names.join(" ")}` : "it takes no arguments";
    throw new UsageError(`unexpected argument "${extra}": ${want}`, true);
  }
}

export function requireString(value: unknown, flag: string): string {
  if (typeof value !== "string" || value.length === 0) throw new UsageError(`--${flag} is required`, true);
  return value;
}

/** A positive decimal number of test USDC (6 decimals) → base units. */
export function parseUsdc(value: string, flag: string): bigint {
  if (!/^\d+(\.\d+)?$/.test(value) && !/^\.\d+$/.test(value)) {
    throw new UsageError(`--${flag} must be a USDC amount above zero, like 0.002, got "${value}"`);
  }
  const frac = value.split(".")[1] ?? "";
  if (frac.length > 6) throw new UsageError(`--${flag} has more than 6 decimals (USDC's precision), got "${value}"`);
  const units = usdcUnits(value); // the one reading of a typed amount (sdk/words/format.ts); null: zero here
  if (units === null) throw new UsageError(`--${flag} must be above zero, got "${value}"`);
  return units;
}

export function parsePositiveInt(value: string | undefined, flag: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${flag} is required`, true);
    return fallback;
  }
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`--${flag} must be a positive integer, got "${value}"`);
  return n;
}

const DURATION_UNITS: Record<string, number> = { "": 1, s: 1, m: 60, min: 60, h: 3_600, d: 86_400 };

/** Seconds, written as 300, 90s, 5m, 2h or 3d. */
export function parseDuration(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const m = /^(\d+)(s|m|min|h|d)?$/.exec(value);
  const seconds = m ? Number(m[1]) * DURATION_UNITS[m[2] ?? ""] : NaN;
  if (!Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new UsageError(`--${flag} must be a duration like 300, 90s, 5m, 2h or 3d, got "${value}"`);
  }
  return seconds;
}

/** A job id positional: a positive integer (checked before anything is read from disk or chain). */
export function parseJobId(value: string | undefined): bigint {
  if (value === undefined)
    throw new UsageError("a job id is required (a positive integer, as `job create` printed)", true);
  if (!/^\d+$/.test(value) || BigInt(value) === 0n) {
    throw new UsageError(`a job id must be a positive integer like 3, got "${value}"`);
  }
  return BigInt(value);
}

/** An address: 20 bytes of hex; a mixed-case one must carry a valid EIP-55 checksum. Returns it checksummed. */
export function parseAddress(value: string | undefined, what: string): string {
  if (value === undefined) throw new UsageError(`${what} is required (0x followed by 40 hex digits)`, true);
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) {
    throw new UsageError(`${what} must be 0x followed by 40 hex digits, got "${value}"`);
  }
  try {
    return getAddress(value);
  } catch {
    throw new UsageError(
      `${what} "${value}" has a bad checksum (EIP-55 mixed case): check it for a typo, or write it in lower case`,
    );
  }
}

/** True when `--help`/`-h` appears before a `--` terminator, whatever else is given. */
export function wantsHelp(argv: string[]): boolean {
  for (const a of argv) {
    if (a === "--") return false;
    if (a === "--help" || a === "-h") return true;
  }
  return false;
}
