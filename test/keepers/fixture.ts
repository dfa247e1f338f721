/**
 * The keepers' test fixture: the whole protocol deployed through the same Ignition module as the local chain
 * (test USDC, registry, a real 2-of-3 Safe, escrow), named actors, and helpers to build keeper contexts with an
 * injected clock, logger and sender.
 *
 * Hardhat accounts: 0 owner, 1 coordinator, 2 arbiter, 3/4/5 verifiers (Safe owners), 6 fee recipient,
 * 7 client, 8/9/10 provider1..3, 11 stranger.
 */
import { network } from "hardhat";
import { HDNodeWallet, type Signer } from "ethers";
import GPUChainLocal from "../../ignition/modules/GPUChainLocal.ts";
import type { Deployment } from "../../sdk/deployment.ts";
import { signHeartbeat, type SignedHeartbeat } from "../../sdk/heartbeat.ts";
import { createLogger, type Logger } from "../../sdk/log.ts";
import { checkpointDecisionDigest, escrowDomain, packSafeSignatures, signAsSafeOwner, verdictDigest } from "../../sdk/verifierSignatures.ts";
import type { KeeperContext, Sender, TxHandle } from "../../keepers/chain.ts";
import { keeperContext } from "../../keepers/context.ts";

export const connection = await network.create();
export const { ethers, networkHelpers, ignition } = connection;

export const MNEMONIC = "test test test test test test test test test test test junk";
/** Hardhat account `i` as a wallet with its private key (same address as `ethers.getSigners()[i]`). */
export const wallet = (i: number) => HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`);

export const TEMPLATE = ethers.id("gpuchain/template/keepers-test/v1");
export const LEASE = 120n;
export const ARBITER_TIMEOUT = 3n * 24n * 3600n;
export const REQUEST = {
  templateId: TEMPLATE,
  totalSteps: 100,
  checkpointInterval: 10,
  maxPricePerStep: 1_000n,
  budget: 100_000n,
  disputeWindow: 3_600n,
};

export async function deployProtocol() {
  const signers = await ethers.getSigners();
  const [owner, coordinator, arbiter, verifier1, verifier2, verifier3, feeRecipient, client] = signers;
  const [provider1, provider2, provider3, stranger] = signers.slice(8);
  const d = await ignition.deploy(GPUChainLocal);
  const escrow = await ethers.getContractAt("JobEscrow", await d.escrow.getAddress());
  const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
  const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
  const { chainId } = await ethers.provider.getNetwork();
  const deployment: Deployment = {
    escrow: await escrow.getAddress(),
    registry: await registry.getAddress(),
    usdc: await usdc.getAddress(),
    verifierSafe: await d.verifierSafe.getAddress(),
    safe: {
      safeSingletonAddress: await d.safeSingleton.getAddress(),
      safeProxyFactoryAddress: await d.proxyFactory.getAddress(),
      fallbackHandlerAddress: await d.fallbackHandler.getAddress(),
      multiSendAddress: await d.multiSend.getAddress(),
      multiSendCallOnlyAddress: await d.multiSendCallOnly.getAddress(),
      signMessageLibAddress: await d.signMessageLib.getAddress(),
      createCallAddress: await d.createCall.getAddress(),
      simulateTxAccessorAddress: await d.simulateTxAccessor.getAddress(),
    },
  };
  await escrow.connect(owner).setTemplateApproval(TEMPLATE, true);
  await usdc.mint(client.address, 10n ** 12n);
  await usdc.connect(client).approve(deployment.escrow, ethers.MaxUint256);
  await registry.connect(provider1).register("provider1", 900n, 1, "NVIDIA H200", 143_771);
  await registry.connect(provider2).register("provider2", 1_000n, 1, "NVIDIA L4", 23_034);
  await registry.connect(provider3).register("provider3", 1_100n, 0, "x86_64 CPU", 16_384);
  // An identity without stake takes no work: each provider deposits ten network-minimum locks.
  const stake = 10n * (await registry.minStake());
  for (const provider of [provider1, provider2, provider3]) {
    await usdc.mint(provider.address, stake);
    await usdc.connect(provider).approve(deployment.registry, stake);
    await registry.connect(provider).depositStake(stake);
  }
  return {
    escrow, usdc, registry, safe: d.verifierSafe, deployment, chainId,
    owner, coordinator, arbiter, verifier1, verifier2, verifier3, verifiers: [verifier1, verifier2, verifier3],
    feeRecipient, client, provider1, provider2, provider3, stranger,
  };
}
export type Protocol = Awaited<ReturnType<typeof deployProtocol>>;

export const load = () => networkHelpers.loadFixture(deployProtocol);

export async function createJob(p: Protocol, over: Partial<typeof REQUEST> = {}): Promise<bigint> {
  await p.escrow.connect(p.client).createJob({ ...REQUEST, ...over });
  return p.escrow.jobCount();
}

export const ckpt = (jobId: bigint, step: number, tag = "") => ethers.id(`ckpt:${jobId}:${step}${tag}`);

/** Packed 2-of-3 signatures over a digest (default: verifiers 1 and 2). */
export async function signDigest(p: Protocol, digest: string, signers = [p.verifier1, p.verifier2]): Promise<string> {
  const parts = [];
  for (const s of signers) parts.push({ signer: s.address, signature: await signAsSafeOwner(s, p.chainId, p.deployment.verifierSafe, digest) });
  return packSafeSignatures(parts);
}

export const domainOf = (p: Protocol) => escrowDomain(p.chainId, p.deployment.escrow);

/** The assignee reports `step` and the verifiers accept it (relayed by the stranger). */
export async function reportAndAccept(p: Protocol, jobId: bigint, provider: Signer, step: number): Promise<string> {
  const hash = ckpt(jobId, step);
  const { epoch } = await p.escrow.jobOf(jobId);
  await p.escrow.connect(provider).reportCheckpoint(jobId, epoch, step, hash);
  const digest = checkpointDecisionDigest(domainOf(p), { jobId, epoch, step, checkpointHash: hash, accept: true });
  await p.escrow.connect(p.stranger).acceptCheckpoint(jobId, epoch, step, hash, await signDigest(p, digest));
  return hash;
}

/** Trains an assigned job to its last step; returns the final hash. */
export async function trainToEnd(p: Protocol, jobId: bigint, provider: Signer): Promise<string> {
  const job = await p.escrow.jobOf(jobId);
  let hash = job.acceptedHash;
  for (let step = Number(job.acceptedStep); step < Number(job.totalSteps); ) {
    step = Math.min(step + Number(job.checkpointInterval), Number(job.totalSteps));
    hash = await reportAndAccept(p, jobId, provider, step);
  }
  return hash;
}

export async function submitVerdict(p: Protocol, jobId: bigint, modelHash: string, passed = true): Promise<void> {
  const digest = verdictDigest(domainOf(p), { jobId, modelHash, metric: 9_700n, passed });
  await p.escrow.connect(p.stranger).submitVerdict(jobId, modelHash, 9_700n, passed, await signDigest(p, digest));
}

/** A logger that keeps its records for assertions (and prints nothing). */
export function captureLogger(component = "test"): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    component,
    write: (line) => {
      lines.push(JSON.parse(line));
      if (process.env.KEEPER_TEST_LOGS) console.log(line);
    },
  });
  return { logger, lines };
}

/** A clock the test moves by hand. */
export function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, set: (t: number) => void (now = t), advance: (ms: number) => void (now += ms) };
}

export interface TestContextOptions {
  signer?: Signer;
  dryRun?: boolean;
  nowMs?: () => number;
  sender?: (base: Sender) => Sender;
  txTimeoutMs?: number;
  rpcTimeoutMs?: number;
  component?: string;
}

export async function testContext(p: Protocol, o: TestContextOptions = {}) {
  const { logger, lines } = captureLogger(o.component);
  const ctx: KeeperContext = await keeperContext({
    deployment: p.deployment,
    provider: ethers.provider,
    chainId: p.chainId,
    logger,
    signer: o.signer,
    dryRun: o.dryRun,
    nowMs: o.nowMs,
    sender: o.sender,
    txTimeoutMs: o.txTimeoutMs ?? 10_000,
    rpcTimeoutMs: o.rpcTimeoutMs ?? 5_000,
    retry: { retries: 3, baseMs: 10, maxMs: 50 },
  });
  return { ctx, lines };
}

/** Where an injected sender fails, as if the keeper process died there. */
export type CrashPoint = "before send" | "after send, before receipt" | "after receipt";
export const CRASH_POINTS: CrashPoint[] = ["before send", "after send, before receipt", "after receipt"];

export class Crash extends Error {}

/** A sender that "dies" at `point` on its first send (the tx is broadcast for the later points). */
export function crashingSender(point: CrashPoint) {
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a): Promise<TxHandle> {
      if (point === "before send") throw new Crash(`killed ${point}`);
      const handle = await base.send(m, a);
      if (point === "after send, before receipt") throw new Crash(`killed ${point}`);
      await handle.wait();
      throw new Crash(`killed ${point}`);
    },
  });
}

/** A sender that resolves without broadcasting and never gets a receipt (a dropped transaction). */
export function droppingSender(base: Sender): Sender {
  return {
    simulate: (m, a) => base.simulate(m, a),
    send: async () => ({ hash: "0x" + "de".repeat(32), wait: () => new Promise(() => {}) }),
  };
}

/** A sender whose first `failures` sends fail like a flaky RPC (retryable). */
export function flakySender(failures: number) {
  let left = failures;
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a) {
      if (left-- > 0) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8545"), { code: "ECONNREFUSED" });
      return base.send(m, a);
    },
  });
}

/** Holds every sender at the send until `n` of them got there (both keepers decided and simulated). */
export function barrier(n: number) {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((r) => (release = r));
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a) {
      if (++arrived >= n) release();
      await all;
      return base.send(m, a);
    },
  });
}

export async function beat(w: HDNodeWallet, chainId: bigint, sentAt: number, jobId = 0n, epoch = 0n): Promise<SignedHeartbeat> {
  return signHeartbeat(w as never, {
    chainId: chainId.toString(),
    provider: w.address,
    jobId: jobId.toString(),
    epoch: epoch.toString(),
    step: 0,
    sentAt,
  });
}

export async function eventCount(p: Protocol, name: string, ...args: unknown[]): Promise<number> {
  const filter = (p.escrow.filters as unknown as Record<string, (...a: unknown[]) => never>)[name](...args);
  return (await p.escrow.queryFilter(filter)).length;
}

export const warnings = (lines: Record<string, unknown>[]) => lines.filter((l) => l.level === "warn");
export const errors = (lines: Record<string, unknown>[]) => lines.filter((l) => l.level === "error");
