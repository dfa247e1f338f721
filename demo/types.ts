/** The scenario's options, result and the one `Run` object its parts share (instead of long parameter lists). */
import type { JsonRpcProvider, Wallet } from "ethers";
import type { Protocol } from "../sdk/node/contracts.ts";
import type { Deployment } from "../sdk/node/deployment.ts";
import type { ChainNode, ScenarioNetwork, Role } from "./network.ts";
import type { ProcessGroup } from "./processes.ts";
import type { Recorder } from "./recording.ts";
import type { RunStore } from "./s3.ts";
import type { HostNet } from "./hosts.ts";
import type { StatusLine } from "./status.ts";

export type { ChainNode } from "./network.ts";

export interface PromiseCheck {
  promise: string;
  held: boolean;
  detail: string;
}

export interface ProviderRow {
  name: string;
  stepsAccepted: number;
  checkpointsRefused: number;
  earned: bigint;
  withdrawn: bigint;
  /**
   * The provider's stake books in the registry at settlement, as its `stakeOf` reads them: `deposited` is what the
   * registry still holds for it (after slashes and stake withdrawals), `locked` the part a job holds; `slashed` is
   * what faults cost it over the whole run, `paidIn` what it deposited (Σ StakeDeposited).
   */
  stake: { deposited: bigint; locked: bigint; slashed: bigint; forfeited: bigint; paidIn: bigint };
  why: string;
}

export interface ScenarioOptions {
  template: string;
  totalSteps: number;
  checkpointInterval: number;
  dispute: boolean;
  /** Fault injected into mallory ("" for an honest mallory). */
  fault: string;
  /** Kill alice (SIGKILL) after her first accepted checkpoint. */
  kill: boolean;
  runDir: string;
  deploymentId: string;
  timeoutMs: number;
  print: (line: string) => void;
  /** Stops the run early (Ctrl-C). */
  signal?: AbortSignal;
  /** Which local node to start (default Hardhat's); ignored with `external`. */
  node?: ChainNode;
  /** The local chain's port: exactly this one when given, else 8545 if free, else any free port. */
  port?: number;
  /** After settlement, leave everything running until `signal` aborts (Ctrl-C), printing how to look around. */
  keep?: boolean;
  /** Redraw a one-line live status (step, holder, epoch, pending checkpoint, signatures): for a TTY. */
  liveStatus?: boolean;
  /** Checkpoint store URL (s3://… or file://…); unset: an embedded S3 server for this run (demo/s3.ts). */
  store?: string;
  /** Each part on a separate network host (a namespace of its own, demo/hosts.ts; Linux, as root). */
  hosts?: boolean;
  /** `--network rehearsal`: anvil, 2-s blocks, fault proxies, reorgs and a gas spike (demo/rehearsal.ts). */
  rehearsal?: boolean;
  /** Run against an existing deployment instead of an embedded chain (see demo/network.ts). */
  external?: { rpc: string; deploymentFile: string; keysDir: string };
  /**
   * Called once the chain is up, deployed and checked, before any provider starts: where a dashboard server (or a
   * test) hooks in; it gets the chain and the run's folder (the recording is written there as the run goes).
   */
  onNetworkUp?: (network: {
    provider: JsonRpcProvider;
    protocol: Protocol;
    rpc: string;
    deploymentFile: string;
    runDir: string;
  }) => Promise<void>;
  /** Heartbeat period, heartbeat timeout and keeper tick (ms) instead of the defaults (the bench). */
  detection?: { beatMs: number; timeoutMs: number; keeperTickMs: number };
  /**
   * Niceness for the processes that are not providers (chain, keepers, verifiers, a child store): the bench's
   * "provider on a machine of its own" configuration, where the working trainer has its core. Unset:
   * all at the same priority, as `npm start` runs.
   */
  backgroundNice?: number;
  /** Called after settlement, before the chain stops: lets a test inspect the live chain. */
  beforeStop?: (chain: LiveChain) => Promise<void>;
}

export interface LiveChain {
  provider: JsonRpcProvider;
  protocol: Protocol;
  jobId: bigint;
  rpc: string;
  deploymentFile: string;
}

export interface ScenarioResult {
  ok: boolean;
  checks: PromiseCheck[];
  failoverSeconds?: number;
  lostSteps?: number;
  /** When the killed provider was killed (ms since the epoch), and the work it lost (the bench's failover timeline). */
  killedAt?: number;
  lostWork?: LostWork;
  /** The verdict's metric as on chain (workloads/metric.ts says what it means for the template). */
  metric?: bigint;
  /** Wall time from job creation to the verdict: what N steps cost through the whole network. */
  jobWallSeconds?: number;
  /** The smallest held − owed seen at any block during the run, in USDC base units. */
  minReserveMargin?: bigint;
  recording: string;
  jobId?: bigint;
  deployment?: Deployment;
  /** `--network rehearsal`: what was injected and what each part did (demo/rehearsal.ts), and its figures. */
  rehearsal?: {
    lines: string[];
    injected: Record<string, number>;
    reorgs: number;
    falseActions: number;
    moneyFalseActions: number;
    requestsPerPart: Record<string, number>;
    callsPerPart: Record<string, number>;
    secondsPerPart: Record<string, number>;
    jobSeconds?: number;
  };
  /** The closing lines (table, checks), printed last. */
  summary: string[];
}

export interface Provider {
  name: "mallory" | "alice" | "bob";
  wallet: Wallet;
  keyFile: string;
}

export interface Actors {
  client: Wallet;
  providers: Provider[];
  keyFiles: Record<Role, string>;
}

/** Everything one run's parts share. */
export interface Run {
  o: ScenarioOptions;
  net: ScenarioNetwork;
  provider: JsonRpcProvider;
  protocol: Protocol;
  deployment: Deployment;
  group: ProcessGroup;
  recorder: Recorder;
  status: StatusLine;
  /** The run's checkpoint store: the URL and environment verifiers and providers get. */
  storage: RunStore;
  /** --hosts: every part on a host of its own; alice is cut off instead of killed. */
  hostNet?: HostNet;
  /** Prints and records one line. */
  note: (line: string) => void;
  /** The keepers' HTTP servers, once started (the dashboard reads them). */
  keeperUrls?: { coordinator: string; collector: string };
  /** Lower-case address → the run's name for it (providers, verifiers), once the actors exist. */
  names?: Record<string, string>;
  /** The first block whose escrow and registry events the recording does not hold yet (watch.ts keeps it). */
  recordedTo?: number;
}

/** What following the job told: the kill, the failover, lost work, reserves at every block. */
export interface SampledSpan {
  first: number;
  last: number;
  settledBlock?: number;
}

export interface WatchResult {
  killedAt?: number;
  failoverSeconds?: number;
  lostWork?: LostWork;
  jobWallSeconds?: number;
  minReserveMargin?: bigint;
  minReserveBlock?: number;
  /** The most the escrow owed at any sampled block (what the margin protected). */
  maxOwed?: bigint;
  maxOwedBlock?: number;
  blocksSampled?: number;
  /** The blocks whose reserves were sampled (every one from `first` to `last`) and the job's settlement block. */
  sampled?: SampledSpan;
  /** The faulty provider's slash (ProviderSlashed): the fault step, who found it, what it cost. */
  slash?: { faultStep: number; finder: string; slashed: bigint; toClient: bigint };
}

/** Work the killed provider did that its replacement had to redo, from the chain and the agent's own record. */
export interface LostWork {
  /** The step the replacement resumed from (its ProviderAssigned event: the last accepted checkpoint). */
  resumeStep: number;
  /** The highest step the killed provider reported on chain at its epoch (0 if none). */
  reportedStep: number;
  /** The highest step the killed provider's own progress records say it trained. */
  trainedStep: number;
  /** trainedStep − resumeStep, at least 0. */
  steps: number;
}
