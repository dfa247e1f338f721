// Shared helpers for the agent tests (no tests here): a protocol on Hardhat's simulated chain, an in-process agent
// with captured logs and heartbeats, and polling waits.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet, type Provider } from "ethers";
import { network } from "hardhat";
import { runAgent, type AgentResult } from "../../agent/agent.ts";
import type { DeviceProfile } from "../../agent/device.ts";
import type { Fault } from "../../agent/faults.ts";
import { DEFAULT_TIMING, type AgentConfig, type AgentDeps } from "../../agent/types.ts";
import { connectProtocol, type Protocol } from "../../sdk/node/contracts.ts";
import type { SignedHeartbeat } from "../../sdk/rules/heartbeat.ts";
import { createLogger } from "../../sdk/run/log.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  packSafeSignatures,
  signAsSafeOwner,
} from "../../sdk/rules/verifierSignatures.ts";
import { FsCheckpointStore, listTemplates, loadTemplate } from "../../workloads/index.ts";
import { deployOn } from "../helpers/deploy.ts";

export const CPU_DEVICE: DeviceProfile = {
  kind: "CPU",
  model: "Test CPU",
  memoryMiB: 4096,
  realMemoryMiB: 4096,
  capped: false,
  executionProvider: "cpu",
};

export const FAST_TIMING = {
  ...DEFAULT_TIMING,
  pollMs: 40,
  fenceCheckMs: 0,
  idleMs: 80,
  fundingPollMs: 50,
  retryBaseMs: 20,
  retryMaxMs: 200,
};

export function agentConfig(over: Partial<AgentConfig> = {}): AgentConfig {
  return {
    name: "test-provider",
    pricePerStep: 900n,
    device: CPU_DEVICE,
    once: false,
    dryRun: false,
    heartbeatMs: 100,
    ...FAST_TIMING,
    ...over,
  };
}

export interface LogRecord {
  level: string;
  msg: string;
  [k: string]: unknown;
}

/** A logger whose JSON lines land in `records` (and nowhere else). */
export function captureLogger() {
  const records: LogRecord[] = [];
  const logger = createLogger({ component: "agent", write: (line) => records.push(JSON.parse(line)) });
  return { logger, records };
}

export async function tmpStore(): Promise<FsCheckpointStore> {
  return new FsCheckpointStore(await mkdtemp(join(tmpdir(), "gpuchain-agent-")));
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const BLOBS = loadTemplate("blobs-tiny");

/** The whole protocol on a fresh simulated chain, with the small template approved and a funded client. */
export async function localProtocol() {
  const connection = await network.create();
  const { ethers } = connection;
  const [owner, coordinator, , v1, v2, , , client] = await ethers.getSigners();
  const { escrow, usdc, registry, deployment, chainId } = await deployOn(connection);
  const safe = deployment.verifierSafe;
  for (const t of listTemplates()) await escrow.connect(owner).setTemplateApproval(t.templateId, true);
  await usdc.mint(client.address, 1_000_000_000n);
  await usdc.connect(client).approve(deployment.escrow, 1_000_000_000n);
  const domain = escrowDomain(chainId, deployment.escrow);

  async function createJob(totalSteps = 12, checkpointInterval = 4, templateId: string = BLOBS.templateId) {
    await escrow.connect(client).createJob({
      templateId,
      totalSteps,
      checkpointInterval,
      maxPricePerStep: 1_000n,
      budget: BigInt(totalSteps) * 1_000n,
      disputeWindow: 3_600n,
    });
    return await escrow.jobCount();
  }

  /** 2-of-3 verifier signatures on accepting (or refusing) the pending checkpoint, relayed by anyone. */
  async function decide(jobId: bigint, accept: boolean) {
    const job = await escrow.jobOf(jobId);
    // A checkpoint is decided on the epoch it was reported at (its reporter may have been unassigned since).
    const msg = {
      jobId,
      epoch: job.pendingEpoch,
      step: Number(job.pendingStep),
      checkpointHash: job.pendingHash,
      accept,
    };
    const digest = checkpointDecisionDigest(domain, msg);
    const sigs = packSafeSignatures([
      { signer: v1.address, signature: await signAsSafeOwner(v1, chainId, safe, digest) },
      { signer: v2.address, signature: await signAsSafeOwner(v2, chainId, safe, digest) },
    ]);
    const fn = accept ? escrow.acceptCheckpoint : escrow.refuseCheckpoint;
    await (await fn(jobId, job.pendingEpoch, job.pendingStep, job.pendingHash, sigs)).wait();
    return msg;
  }

  /** A fresh provider key holding 10 ETH for gas, connected to the simulated chain. */
  async function fundedWallet(): Promise<Wallet> {
    const w = Wallet.createRandom().connect(ethers.provider as unknown as Provider);
    await (await owner.sendTransaction({ to: w.address, value: 10n ** 19n })).wait();
    return new Wallet(w.privateKey, ethers.provider as unknown as Provider);
  }

  return {
    connection,
    ethers,
    escrow,
    usdc,
    registry,
    coordinator,
    owner,
    client,
    deployment,
    createJob,
    decide,
    fundedWallet,
  };
}

export interface RunningAgent {
  done: Promise<AgentResult>;
  stop: () => Promise<AgentResult>;
  records: LogRecord[];
  beats: SignedHeartbeat[];
  protocol: Protocol;
  store: FsCheckpointStore;
  wallet: Wallet;
}

/** Starts the agent in-process with injected deps; `stop()` aborts it and waits for a clean exit. */
export async function startAgent(
  wallet: Wallet,
  deployment: Parameters<typeof connectProtocol>[0],
  opts: { fault?: Fault; store?: FsCheckpointStore; deps?: Partial<AgentDeps>; config?: Partial<AgentConfig> } = {},
): Promise<RunningAgent> {
  const { logger, records } = captureLogger();
  const beats: SignedHeartbeat[] = [];
  const controller = new AbortController();
  const store = opts.store ?? (await tmpStore());
  const protocol = connectProtocol(deployment, wallet);
  const done = runAgent(agentConfig({ fault: opts.fault, ...opts.config }), {
    signer: wallet,
    protocol,
    store,
    logger,
    clock: { now: () => Date.now() },
    heartbeatSender: async (b) => {
      beats.push(b);
    },
    signal: controller.signal,
    ...opts.deps,
  });
  return {
    done,
    records,
    beats,
    protocol,
    store,
    wallet,
    stop: async () => {
      controller.abort();
      return done;
    },
  };
}

/** Registered, active and with stake deposited: the agent takes work only then (it stakes right after registering). */
export async function staked(
  registry: { isActive(a: string): Promise<boolean>; stakeOf(a: string): Promise<{ deposited: bigint }> },
  address: string,
) {
  return (await registry.isActive(address)) && (await registry.stakeOf(address)).deposited > 0n;
}

export type LocalProtocol = Awaited<ReturnType<typeof localProtocol>>;

/** A new funded provider running the agent, registered and staked, and assigned `jobId` by the coordinator. */
export async function assignedAgent(
  p: LocalProtocol,
  jobId: bigint,
  opts: Parameters<typeof startAgent>[2] = {},
): Promise<{ wallet: Wallet; agent: RunningAgent }> {
  const wallet = await p.fundedWallet();
  const agent = await startAgent(wallet, p.deployment, opts);
  await until("registration and stake", () => staked(p.registry, wallet.address));
  await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
  return { wallet, agent };
}
