/** The agent's configuration (built and validated once, by agent/cli.ts or a test) and its injected I/O. */
import type { Wallet } from "ethers";
import type { Protocol } from "../sdk/node/contracts.ts";
import type { Logger } from "../sdk/run/log.ts";
import type { CheckpointStore } from "../workloads/index.ts";
import type { DeviceProfile } from "./device.ts";
import type { ProviderBehaviour } from "./behaviour.ts";
import type { Fault } from "./faults.ts";
import type { HeartbeatSender } from "./liveness.ts";
import type { Terminal } from "./progress.ts";
import type { TrainerFactory } from "./trainers.ts";

export interface AgentConfig {
  name: string;
  /** Test USDC base units (6 decimals) per accepted step. */
  pricePerStep: bigint;
  device: DeviceProfile;
  /** The injected fault as parsed from --fault (undefined: honest); the agent runs `behaviourOf(fault)`. */
  fault?: Fault;
  /** Work the jobs assigned now, then exit (no idle waiting). */
  once: boolean;
  /** Decide and log the registration without sending anything, then exit. */
  dryRun: boolean;
  /** `--faucet`: a key without gas takes 1 test ETH from a development node (anvil, Hardhat) instead of waiting. */
  faucet?: boolean;
  /** How often to re-read a job while waiting for a decision. */
  pollMs: number;
  /** Between steps the job's epoch is re-read at most this often (every write is always checked first). */
  fenceCheckMs: number;
  /** How long to sleep between scans when no job is assigned. */
  idleMs: number;
  /** Off-chain heartbeat period (HEARTBEAT_DEFAULTS.intervalMs). */
  heartbeatMs: number;
  /** Balance re-check period while waiting for gas money. */
  fundingPollMs: number;
  /** write-after-fence: how many rejected writes of each kind to attempt after being fenced. */
  writeAfterFenceAttempts: number;
  /** Log every trained step (debug level): an exact record of the work done, even if the process is killed. */
  stepLog?: boolean;
  /**
   * The command that withdraws this key's earnings, said with each change in when they are withdrawable
   * (agent/earnings.ts); agent/cli.ts writes it with absolute paths. Default: `npx gpuchain withdraw --key FILE`.
   */
  withdrawCommand?: string;
  /** Backoff of chain retries (ms). */
  retryBaseMs: number;
  retryMaxMs: number;
}

export interface Clock {
  now(): number;
}

export interface AgentDeps {
  /** The provider key, connected to the chain's provider. */
  signer: Wallet;
  protocol: Protocol;
  store: CheckpointStore;
  logger: Logger;
  clock: Clock;
  heartbeatSender: HeartbeatSender;
  signal: AbortSignal;
  /** die-at:N. Default: SIGKILL to this process. */
  die?: (step: number) => void;
  terminal?: Terminal;
  trainerFactory?: TrainerFactory;
  /** Replaces the behaviour built from `config.fault` (tests give their own). */
  behaviour?: ProviderBehaviour;
}

export const DEFAULT_TIMING = {
  pollMs: 250,
  fenceCheckMs: 250,
  idleMs: 2_000,
  fundingPollMs: 3_000,
  writeAfterFenceAttempts: 3,
  retryBaseMs: 500,
  retryMaxMs: 15_000,
};
