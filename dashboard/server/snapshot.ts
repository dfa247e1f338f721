/** The dashboard server's status snapshot (`GET /api/status`): what the server sends and the app reads. */

/** A provider's latest heartbeat as the coordinator accepted it, named for the page. */
export interface HeartbeatRow {
  provider: string;
  name: string;
  job: string;
  epoch: string;
  step: number;
  loss: number | null;
  ageMs: number;
  /** The provider's own last problem, signed in its beat (agent/problems.ts), or null. */
  problem?: string | null;
}

/** A decision the verifiers are signing, with who has signed so far. */
export interface PendingRow {
  kind: string;
  job: string;
  epoch?: string;
  step?: number;
  accept?: boolean;
  signers: string[];
  threshold: number;
}

export interface Snapshot {
  at: number;
  /** reachable: null until the server first asked (the keepers may start after the dashboard). */
  coordinator: { url: string | null; reachable: boolean | null; lastOkAt: number | null };
  collector: { url: string | null; reachable: boolean | null; lastOkAt: number | null };
  processes: { name: string; role: string; lastSeenAt: number | null; detail?: string }[];
  heartbeats: HeartbeatRow[];
  pending: PendingRow[];
  indexedBlock: number;
  headBlock: number | null;
  /** Blocks above it are not confirmed yet (sdk/node/confirmations.ts); absent from older servers. */
  confirmedBlock?: number | null;
  /**
   * Why the deployment cannot be read on the chain, which answers (a stale deployment file, with the CLI's redeploy
   * advice), or null; absent from older servers.
   */
  deploymentProblem?: string | null;
  /** The escrow address the server reads now (the deployment file is read again after a stale one). */
  escrow?: string;
  /** The chain id the RPC last answered (null until it first answers). */
  chainId?: string | null;
}
