/** The coordinator's configuration, built and validated once from the CLI flags. */
import { UsageError, parsePositiveInt } from "../../sdk/run/args.ts";
import { HEARTBEAT_DEFAULTS } from "../../sdk/rules/heartbeat.ts";
import { BACKOFF_DEFAULTS, PROGRESS } from "./decide.ts";
import { parseNonNegativeInt, parsePort, sharedConfig, str, type FlagValues, type SharedConfig } from "../config.ts";

export const COORDINATOR_OPTIONS = {
  "heartbeat-timeout-ms": { type: "string" },
  "start-grace-ms": { type: "string" },
  "max-clock-skew-ms": { type: "string" },
  "progress-floor-ms": { type: "string" },
  "idle-backoff-s": { type: "string" },
  "idle-backoff-cap-s": { type: "string" },
  "min-memory": { type: "string" },
  "template-memory": { type: "string", multiple: true },
  "newcomer-failover": { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
} as const;

export const COORDINATOR_DEFAULT_PORT = 8600;

export interface CoordinatorConfig extends SharedConfig {
  host: string;
  port: number;
  intervalMs: number;
  heartbeatTimeoutMs: number;
  /** Extra silence allowed before a new assignee's first beat (it may be loading its template). */
  startGraceMs: number;
  maxClockSkewMs: number;
  /** The progress bounds' floor (decide.ts PROGRESS): no holder is unassigned for no progress sooner. */
  progressFloorMs: number;
  /** The idle back-off across jobs: base and cap, seconds of chain time (decide.ts backingOff). */
  idleBackoffS: number;
  idleBackoffCapS: number;
  /** Device memory every job needs unless its template has its own entry, MiB. */
  minMemoryMiB: number;
  /** templateId (0x…, lower-case) → MiB. */
  templateMemoryMiB: Record<string, number>;
  /**
   * When a holder on probation (no accepted checkpoint yet) is taken away: "priced" (the default) only when the
   * contract forfeits its lock (lease lapsed, or no progress on chain for the job's progress timeout: decide.ts
   * decideProbation), so no identity holds a job for free; "fast" by the same off-chain bounds as a proven holder
   * (quicker failover of a newcomer's crash, free for an identity that holds without training).
   */
  newcomerFailover: NewcomerFailover;
}

export type NewcomerFailover = "priced" | "fast";

export function coordinatorConfig(v: FlagValues, portFlag = "port"): CoordinatorConfig {
  const table: Record<string, number> = {};
  const entries = v["template-memory"];
  for (const entry of Array.isArray(entries) ? entries : []) {
    const m = /^(0x[0-9a-fA-F]{64})=(\d+)$/.exec(String(entry));
    if (!m)
      throw new UsageError(`--template-memory must be TEMPLATE_ID=MiB (TEMPLATE_ID: 0x + 64 hex), got "${entry}"`);
    table[m[1].toLowerCase()] = Number(m[2]);
  }
  return {
    ...sharedConfig(v),
    host: str(v.host) ?? "127.0.0.1",
    port: parsePort(str(v[portFlag]), portFlag, COORDINATOR_DEFAULT_PORT),
    intervalMs: parsePositiveInt(str(v["interval-ms"]), "interval-ms", HEARTBEAT_DEFAULTS.intervalMs),
    heartbeatTimeoutMs: parsePositiveInt(
      str(v["heartbeat-timeout-ms"]),
      "heartbeat-timeout-ms",
      HEARTBEAT_DEFAULTS.timeoutMs,
    ),
    startGraceMs: parseNonNegativeInt(str(v["start-grace-ms"]), "start-grace-ms", HEARTBEAT_DEFAULTS.startGraceMs),
    maxClockSkewMs: parsePositiveInt(
      str(v["max-clock-skew-ms"]),
      "max-clock-skew-ms",
      HEARTBEAT_DEFAULTS.maxClockSkewMs,
    ),
    progressFloorMs: parsePositiveInt(str(v["progress-floor-ms"]), "progress-floor-ms", PROGRESS.FLOOR_MS),
    idleBackoffS: parseNonNegativeInt(str(v["idle-backoff-s"]), "idle-backoff-s", BACKOFF_DEFAULTS.baseS),
    idleBackoffCapS: parseNonNegativeInt(str(v["idle-backoff-cap-s"]), "idle-backoff-cap-s", BACKOFF_DEFAULTS.capS),
    minMemoryMiB: parseNonNegativeInt(str(v["min-memory"]), "min-memory", 0),
    templateMemoryMiB: table,
    newcomerFailover: newcomerFailover(str(v["newcomer-failover"])),
  };
}

/**
 * Device memory a job needs, MiB: the operator's entry for its template (or --min-memory), and never less than
 * the template's own one-atom step (`ownNeed`: a provider with less would only decline the job).
 */
export function memoryNeed(
  config: Pick<CoordinatorConfig, "minMemoryMiB" | "templateMemoryMiB">,
  ownNeed: (templateId: string) => number = () => 0,
) {
  return (templateId: string) =>
    Math.max(config.templateMemoryMiB[templateId.toLowerCase()] ?? config.minMemoryMiB, ownNeed(templateId));
}

function newcomerFailover(value: string | undefined): NewcomerFailover {
  if (value === undefined || value === "priced" || value === "fast") return value ?? "priced";
  throw new UsageError(`--newcomer-failover must be "priced" or "fast", got "${value}"`);
}
