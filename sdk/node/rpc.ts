/**
 * The RPC policy every process shares (sdk/node/jsonRpc.ts applies it to each request): a per-endpoint rate limit, retry
 * with exponential backoff and full jitter on transport faults (HTTP 429, 5xx, 408, timeouts, resets, refused
 * connections, bodies that are not JSON), a bound on the whole call, failover between several URLs, and counters of
 * what happened. A JSON-RPC error answer (a revert, a bad parameter) is an answer, never retried here.
 *
 * The rule it serves: a read that failed is unknown. Exhausted retries end in an error, never in a default value.
 */

/** What went wrong with one HTTP attempt. */
export type FaultKind = "http429" | "http5xx" | "timeout" | "reset" | "refused" | "badJson" | "network";
export const FAULT_KINDS: readonly FaultKind[] = [
  "http429",
  "http5xx",
  "timeout",
  "reset",
  "refused",
  "badJson",
  "network",
];

export interface RpcStats {
  /** JSON-RPC calls asked for (one per payload entry). */
  calls: number;
  /** HTTP requests sent (attempts, retries included). */
  requests: number;
  faults: Record<FaultKind, number>;
  retries: Record<FaultKind, number>;
  /** Switches to the next URL after repeated failures. */
  failovers: number;
  /** Calls given up after the time bound (the error reached the caller). */
  exhausted: number;
  /** Raw transactions answered "already known" / "nonce too low" that turned out to be ours: success. */
  duplicateSends: number;
}

const zeroes = () => Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;

export function newRpcStats(): RpcStats {
  return { calls: 0, requests: 0, faults: zeroes(), retries: zeroes(), failovers: 0, exhausted: 0, duplicateSends: 0 };
}

/** The process's counters (every client adds to them unless given its own). */
export const rpcStats: RpcStats = newRpcStats();

export interface RpcSettings {
  /** Requests per second per endpoint; 0 = no limit. Undefined: none on loopback, REMOTE_RPS elsewhere. */
  rps?: number;
  /** Requests that may go at once before the rate applies (default max(1, rps / 5)). */
  burst?: number;
  /** The whole call, every attempt and wait included; past it the last error is thrown. */
  budgetMs: number;
  /** One HTTP attempt (default half the budget, at least 1 s). */
  attemptTimeoutMs?: number;
  /** Backoff: the n-th retry waits a uniform random time in [0, min(maxDelayMs, baseMs × 2ⁿ⁻¹)]. */
  baseMs: number;
  maxDelayMs: number;
  /** Consecutive faults on one URL before the next URL is used (with several). */
  failoverAfter: number;
  /** ethers' polling interval (tx.wait, events) where the caller gives none. */
  pollingMs: number;
}

export const REMOTE_RPS = 25;

const BUILT_IN: RpcSettings = { budgetMs: 30_000, baseMs: 100, maxDelayMs: 2_000, failoverAfter: 2, pollingMs: 500 };

/** Set by flags (`--rpc-rps`, `--poll-ms`) or the environment; wins over the callers' own defaults. */
const configured: Partial<RpcSettings> = {};

function envNumber(name: string): number | undefined {
  const raw = typeof process === "undefined" ? undefined : process.env?.[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** The settings in force: built-in, then `fallback` (the caller's), then environment and flags. */
export function rpcSettings(fallback: Partial<RpcSettings> = {}): RpcSettings {
  const env: Partial<RpcSettings> = {};
  const rps = envNumber("GPUCHAIN_RPC_RPS");
  const poll = envNumber("GPUCHAIN_POLL_MS");
  if (rps !== undefined) env.rps = rps;
  if (poll !== undefined && poll > 0) env.pollingMs = poll;
  return { ...BUILT_IN, ...dropUndefined(fallback), ...env, ...configured };
}

/** Flags `--rpc-rps N` and `--poll-ms N` (validated by the caller) for every client made after. */
export function configureRpc(s: { rps?: number; pollingMs?: number }): void {
  if (s.rps !== undefined) configured.rps = s.rps;
  if (s.pollingMs !== undefined) configured.pollingMs = s.pollingMs;
}

/** Back to built-in settings (tests). */
export function resetRpcConfiguration(): void {
  for (const k of Object.keys(configured)) delete configured[k as keyof RpcSettings];
}

function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `--rpc A,B`: the URLs in order of preference. */
export function splitRpcUrls(spec: string): string[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host);
  } catch {
    return false;
  }
}

/** The limit for `url` under `s`: 0 = none. */
export function rpsFor(url: string, s: Pick<RpcSettings, "rps">): number {
  return s.rps ?? (isLoopbackUrl(url) ? 0 : REMOTE_RPS);
}

/**
 * A token bucket kept as its theoretical arrival time (GCRA): `reserve()` books the next slot and says how long to
 * wait for it, so waiting callers go in order and no 1-s window holds more than `burst + rps` requests.
 */
export class RateLimiter {
  readonly rps: number;
  readonly burst: number;
  private readonly intervalMs: number;
  private tat = -Infinity;
  private readonly now: () => number;

  constructor(rps: number, burst = Math.max(1, Math.round(rps / 5)), now: () => number = () => performance.now()) {
    if (!(rps > 0)) throw new Error(`a rate limit needs requests per second above 0, got ${rps}`);
    this.rps = rps;
    this.burst = Math.max(1, Math.floor(burst));
    this.intervalMs = 1000 / rps;
    this.now = now;
  }

  /** Milliseconds to wait before sending (the slot is booked). */
  reserve(): number {
    const now = this.now();
    const start = Math.max(this.tat, now);
    this.tat = start + this.intervalMs;
    return Math.max(0, start - now - (this.burst - 1) * this.intervalMs);
  }
}

const limiters = new Map<string, RateLimiter>();

/** The process's one limiter for an endpoint (every client of the same URL and rate shares it). */
export function limiterFor(url: string, rps: number, burst?: number): RateLimiter | undefined {
  if (!(rps > 0)) return undefined;
  const key = `${rps}/${burst ?? ""} ${url}`;
  let l = limiters.get(key);
  if (!l) limiters.set(key, (l = new RateLimiter(rps, burst)));
  return l;
}

/** Full jitter: uniform in [0, min(max, base × 2^(retry−1))]. */
export function backoffWithJitter(retry: number, baseMs: number, maxMs: number, random: () => number): number {
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1)));
}

/** A Retry-After header (seconds, or an HTTP date) in milliseconds from `nowMs`; undefined when absent or bad. */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A transport fault found on an error (attached by the client, or read from the error's code). */
export interface Fault {
  kind: FaultKind;
  retryAfterMs?: number;
}

const FAULT = Symbol.for("gpuchain.rpcFault");

export function markFault<E>(err: E, fault: Fault): E {
  if (err && typeof err === "object") Object.defineProperty(err, FAULT, { value: fault, configurable: true });
  return err;
}

/** The transport fault an attempt's error means, or undefined: not a fault to retry (an answer, a cancel). */
export function faultOf(err: unknown): Fault | undefined {
  if (!err || typeof err !== "object") return undefined;
  const marked = (err as Record<symbol, Fault | undefined>)[FAULT];
  if (marked) return marked;
  const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
  // Codes are strings for transport errors; a JSON-RPC or EVM error may carry a number (-32000, 3): not a fault.
  const code = typeof e.code === "string" ? e.code : "";
  const cause = typeof e.cause?.code === "string" ? e.cause.code : "";
  const message = typeof e.message === "string" ? e.message : "";
  if (code === "TIMEOUT" || code === "ETIMEDOUT" || cause === "ETIMEDOUT") return { kind: "timeout" };
  if (code === "ECONNREFUSED" || cause === "ECONNREFUSED") return { kind: "refused" };
  if (
    ["ECONNRESET", "EPIPE", "ECONNABORTED"].includes(code) ||
    ["ECONNRESET", "EPIPE", "ECONNABORTED"].includes(cause) ||
    code.startsWith("UND_ERR_") ||
    /socket hang up|^aborted$|other side closed|^terminated$/i.test(message)
  ) {
    return { kind: "reset" };
  }
  if (["EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENETDOWN"].includes(code)) return { kind: "network" };
  return undefined;
}

/** The kind of an HTTP status worth retrying, or undefined. */
export function statusFault(status: number): FaultKind | undefined {
  if (status === 429) return "http429";
  if (status === 408 || (status >= 500 && status <= 599)) return "http5xx";
  return undefined;
}

/** A node's answer to a raw transaction it already has (or already mined): success if the hash is ours. */
export const DUPLICATE_SEND =
  /already known|known transaction|already imported|alreadyknown|nonce too low|already exists/i;

/** The counters without the zeroes (a log field: `{ calls, requests, retries: { http429: 3 }, … }`). */
export function compactRpcStats(s: RpcStats = rpcStats) {
  const nonzero = (r: Record<FaultKind, number>) =>
    Object.fromEntries(FAULT_KINDS.filter((k) => r[k] > 0).map((k) => [k, r[k]]));
  return {
    calls: s.calls,
    requests: s.requests,
    retries: nonzero(s.retries),
    failovers: s.failovers,
    exhausted: s.exhausted,
    duplicateSends: s.duplicateSends,
  };
}

/** Counters as one line for logs and benches: `rpc calls 120 requests 131 retries http429=9 reset=2 failovers 0`. */
export function formatRpcStats(s: RpcStats): string {
  const by = (r: Record<FaultKind, number>) =>
    FAULT_KINDS.filter((k) => r[k] > 0)
      .map((k) => `${k}=${r[k]}`)
      .join(" ") || "none";
  return (
    `rpc calls ${s.calls} requests ${s.requests} faults ${by(s.faults)} retries ${by(s.retries)} ` +
    `failovers ${s.failovers} exhausted ${s.exhausted} duplicate-sends ${s.duplicateSends}`
  );
}
