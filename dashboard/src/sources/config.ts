import type { EvalRules } from "../../../workloads/types.ts";

/** An approved template as the page names it: its id, name and what its verdict metric means. */
export type TemplateInfo = { id: string; name: string; evalRules: EvalRules };

/** What the dashboard server says about the network it watches (GET /api/config). */
export interface DashboardConfig {
  chainId: string;
  chainName: string;
  /**
   * The RPC URL with its credentials redacted (dashboard/server/publicConfig.ts): a URL that carries a key is never
   * handed to browsers; they then read the chain through the server's relay (POST api/rpc).
   */
  rpc: string;
  /** Whether `rpc` was redacted (absent from older servers: false). */
  rpcRedacted?: boolean;
  deploymentFile: string;
  /**
   * The server's installation folder, its deployment file and a folder store as absolute paths: the Provide compute
   * command works from any folder on this machine (absent from older servers).
   */
  absolute?: { install: string; deploymentFile: string; store: string | null };
  /**
   * Why the deployment cannot be read on the chain, which answers (sdk/node/contracts.ts checkDeploymentOn's line: a
   * stale file, with the redeploy advice), or null; absent from older servers.
   */
  deploymentProblem?: string | null;
  deployment: {
    escrow: string;
    registry: string;
    usdc: string;
    verifierSafe: string;
    /** The block of the deployment's first transaction, when Ignition's journal recorded it. */
    firstBlock?: number;
  };
  coordinator: string;
  collector: string;
  /** The network's checkpoint store (`gpuchain dashboard --store`); null when the dashboard was not told it. */
  store: string | null;
  /** The environment the store needs (VAR → value) without its keys, written in front of the Provide compute command. */
  storeEnv?: Record<string, string>;
  /** The store is the embedded S3 server with its published test key pair (the command then names that pair). */
  storeTestKeyPair?: boolean;
  explorer?: string;
  /** The registry's stake rules (read on chain) and how many minimum locks `gpuchain provide` deposits. */
  stakeRules?: { minStake: string; unbondingDelay: number; locks: string } | null;
  recordings: { name: string; entries: number; date: string }[];
  serverStartedAt: number;
  /** The approved templates this software knows (workloads/templates.ts). */
  templates?: TemplateInfo[];
}

/** The URL the browser reads the chain by: the RPC's own, or the server's relay where the RPC URL carries a key. */
export const chainUrl = (c: DashboardConfig, here: string): string =>
  c.rpcRedacted ? new URL("api/rpc", here).href : c.rpc;

/** The template of a job by its id (any case), when the server named it. */
export const templateOf = (c: DashboardConfig | null | undefined, id: string): TemplateInfo | undefined =>
  c?.templates?.find((t) => t.id.toLowerCase() === id.toLowerCase());

export async function loadConfig(): Promise<DashboardConfig | undefined> {
  try {
    const res = await fetch("api/config");
    if (!res.ok) return undefined;
    return (await res.json()) as DashboardConfig;
  } catch {
    return undefined;
  }
}

/** Whether the server has heard the chain answer: its config then names the chain's id (else "unknown"). */
export const chainAnswered = (c: DashboardConfig | null | undefined): boolean => !!c && /^\d+$/.test(c.chainId);

/**
 * How long after the dashboard server started a coordinator that has never answered is "starting", not "offline":
 * `npm start` starts the dashboard and the keepers together, and the keepers take seconds to listen.
 */
export const KEEPERS_GRACE_MS = 30_000;

export type CoordinatorState = "recorded" | "checking" | "starting" | "online" | "offline";

/**
 * The coordinator as the top bar and the banner say it. Pure. Offline (red) only once it answered and then stopped,
 * or once the grace after the server's start is over without an answer, or when the dashboard server itself does
 * not answer; before that a coordinator that never answered is starting (neutral).
 */
export function coordinatorState(o: {
  recorded: boolean;
  /** The dashboard server's status (GET /api/status) failed: it is down. */
  snapshotError?: string;
  snapshot: { at: number; coordinator: { reachable: boolean | null; lastOkAt: number | null } } | null;
  /** From the server's config (GET /api/config); undefined until it is read. */
  serverStartedAt: number | undefined;
}): CoordinatorState {
  if (o.recorded) return "recorded";
  if (o.snapshotError) return "offline";
  if (!o.snapshot) return "checking";
  const { reachable, lastOkAt } = o.snapshot.coordinator;
  if (reachable) return "online";
  if (lastOkAt !== null) return "offline"; // it answered before and stopped
  if (o.serverStartedAt === undefined) return "checking"; // the config is not in yet: no grace to measure
  return o.snapshot.at - o.serverStartedAt < KEEPERS_GRACE_MS ? "starting" : "offline";
}
