/** The verdict collector's configuration, built and validated once from the CLI flags. */
import { UsageError, parsePositiveInt } from "../../sdk/run/args.ts";
import { optionalConfirmations, parsePort, sharedConfig, str, type FlagValues, type SharedConfig } from "../config.ts";
import { SILENCE_DEFAULTS } from "./decide.ts";

export const COLLECTOR_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  "state-file": { type: "string" },
  "via-safe-tx": { type: "boolean", default: false },
  "owner-key": { type: "string", multiple: true },
  "claim-hold-ms": { type: "string" },
  "quorum-wait-ms": { type: "string" },
  "silent-after-decided": { type: "string" },
  "silent-after-ms": { type: "string" },
  confirmations: { type: "string" },
} as const;

export const COLLECTOR_DEFAULT_PORT = 8601;
export const DEFAULT_STATE_FILE = ".gpuchain/collector-state.json";

export interface CollectorConfig extends SharedConfig {
  host: string;
  port: number;
  intervalMs: number;
  /** Where pending signatures survive a restart. */
  stateFile: string;
  /** Execute decisions as Safe transactions signed by `ownerKeys` instead of relaying EIP-1271 signatures. */
  viaSafeTx: boolean;
  /** Key files of Safe owners (only with --via-safe-tx). */
  ownerKeys: string[];
  /** The longest fault claims hold plain decisions on their checkpoint while unanswered (per checkpoint). */
  claimHoldMs: number;
  /** How long a plain checkpoint decision with its threshold waits for the owners that have not spoken yet. */
  quorumWaitMs: number;
  /** An owner silent for this many decided checkpoints and `silence.afterMs` is not waited for (decide.ts isSilent). */
  silence: { afterDecided: number; afterMs: number };
  /** Blocks on top before a decision that pays is sent on what they show (undefined: the network's default). */
  confirmations?: number;
}

export function collectorConfig(v: FlagValues, portFlag = "port"): CollectorConfig {
  const ownerKeys = (Array.isArray(v["owner-key"]) ? v["owner-key"] : []).map(String);
  const viaSafeTx = v["via-safe-tx"] === true;
  if (viaSafeTx && ownerKeys.length === 0) {
    throw new UsageError(
      "--via-safe-tx needs the Safe owners' key files: --owner-key FILE (repeat up to the threshold)",
    );
  }
  if (!viaSafeTx && ownerKeys.length > 0) throw new UsageError("--owner-key is only used with --via-safe-tx");
  return {
    ...sharedConfig(v),
    confirmations: optionalConfirmations(str(v.confirmations)),
    host: str(v.host) ?? "127.0.0.1",
    port: parsePort(str(v[portFlag]), portFlag, COLLECTOR_DEFAULT_PORT),
    intervalMs: parsePositiveInt(str(v["interval-ms"]), "interval-ms", 2_000),
    stateFile: str(v["state-file"]) ?? DEFAULT_STATE_FILE,
    viaSafeTx,
    ownerKeys,
    claimHoldMs: parsePositiveInt(str(v["claim-hold-ms"]), "claim-hold-ms", 120_000),
    quorumWaitMs: parsePositiveInt(str(v["quorum-wait-ms"]), "quorum-wait-ms", 15_000),
    silence: {
      afterDecided: parsePositiveInt(
        str(v["silent-after-decided"]),
        "silent-after-decided",
        SILENCE_DEFAULTS.afterDecided,
      ),
      afterMs: parsePositiveInt(str(v["silent-after-ms"]), "silent-after-ms", SILENCE_DEFAULTS.afterMs),
    },
  };
}
