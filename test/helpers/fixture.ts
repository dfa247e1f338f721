/**
 * The one shared fixture of the protocol tests: the whole protocol deployed through the same Ignition module the
 * local chain uses (test USDC, registry, a real Safe v1.4.1 as 2-of-3 verifier multisig, escrow), with named
 * actors, an approved template, a funded client and three registered providers.
 *
 * Hardhat accounts: 0 owner, 1 coordinator, 2 arbiter, 3/4/5 verifiers (Safe owners), 6 fee recipient,
 * 7 client, 8/9/10 provider1..3, 11 stranger, 12/13 client2/3, 14 provider4 (used by the long scenarios).
 *
 * The protocol tests take it as one namespace (`import * as fx from "../helpers/fixture.ts"`): `fx.` says where a
 * name comes from, and no file restates a long list of the fixture's names.
 */
import { network } from "hardhat";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/types";
import { HDNodeWallet, type Signer, type TypedDataDomain } from "ethers";
import {
  type CheckpointDecision,
  type Fault,
  checkpointDecisionDigest,
  escrowDomain,
  faultRefusalDigest,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../../sdk/rules/verifierSignatures.ts";
import { deployOn } from "./deploy.ts";

/** One simulated chain shared by every protocol test file; `loadFixture` isolates the tests. */
export const connection = await network.create();
export const { ethers, networkHelpers, ignition } = connection;

export const MNEMONIC = "test test test test test test test test test test test junk";
/** Hardhat account `i` as a wallet with its private key (same address as `ethers.getSigners()[i]`). */
export const wallet = (i: number) => HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`);

export const TEMPLATE = ethers.id("gpuchain/template/mnist-mlp/v1");
export const USDC = 1_000_000n; // 6 decimals
export const LEASE = 120n; // leaseDurationSeconds, Ignition's default
export const BOND = 50n * USDC; // disputeBond, Ignition's default
export const ARBITER_TIMEOUT = 3n * 24n * 3600n;
export const PRICE = { provider1: 900n, provider2: 1_000n, provider3: 1_100n };
export const MIN_STAKE = 1_000_000n; // minStake, Ignition's default (1 USDC)
export const UNBONDING = 2n * 24n * 3600n; // unbondingDelaySeconds, Ignition's default
export const DECISION_TIMEOUT = 3_600n;
/** What each fixture provider deposits: ten jobs' minimum locks. */
export const STAKE = 10n * MIN_STAKE;

/** The job a test gets unless it asks for something else: 100 steps, checkpoints every 10, at most 1000/step. */
export const DEFAULT_REQUEST = {
  templateId: TEMPLATE,
  totalSteps: 100,
  checkpointInterval: 10,
  maxPricePerStep: 1_000n,
  budget: 100_000n,
  disputeWindow: 3_600n,
};
export type JobRequest = typeof DEFAULT_REQUEST;

/** The numbering of IJobEscrow's enums, kept once in sdk/rules/ledger.ts. */
import { JobStatus as Status, UnassignReason as Reason } from "../../sdk/rules/ledger.ts";
export { Status, Reason };
export { HoldEnd } from "../../sdk/rules/job.ts";
/** bit i = JobStatus(i), as in JobEscrowUnexpectedStatus's `allowed`. */
export const bits = (...statuses: number[]) => statuses.reduce((acc, s) => acc | (1n << BigInt(s)), 0n);
export const DeviceKind = { CPU: 0, GPU: 1 } as const;

/** A checkpoint blob hash that is easy to tell apart in failures. */
export const ckpt = (jobId: bigint, step: number, tag = "") => ethers.id(`ckpt:${jobId}:${step}${tag}`);

export async function deployProtocol() {
  const signers = await ethers.getSigners();
  const [owner, coordinator, arbiter, verifier1, verifier2, verifier3, feeRecipient, client] = signers;
  const [provider1, provider2, provider3, stranger, client2, client3, provider4] = signers.slice(8);

  const { escrow, usdc, registry, safe, deployment, chainId } = await deployOn(connection);
  const safeAddress = deployment.verifierSafe;
  const escrowAddress = deployment.escrow;
  const singletons = deployment.safe;

  await escrow.connect(owner).setTemplateApproval(TEMPLATE, true);
  for (const c of [client, client2, client3]) {
    await usdc.mint(c.address, 1_000_000n * USDC);
    await usdc.connect(c).approve(escrowAddress, ethers.MaxUint256);
  }
  await registry.connect(provider1).register("provider1", PRICE.provider1, DeviceKind.GPU, "NVIDIA H200", 143_771);
  await registry.connect(provider2).register("provider2", PRICE.provider2, DeviceKind.GPU, "NVIDIA L4", 23_034);
  await registry.connect(provider3).register("provider3", PRICE.provider3, DeviceKind.CPU, "x86_64 CPU", 16_384);
  for (const provider of [provider1, provider2, provider3]) await depositStake({ usdc, registry }, provider);

  return {
    escrow,
    usdc,
    registry,
    safe,
    safeAddress,
    escrowAddress,
    chainId,
    deployment,
    singletons,
    owner,
    coordinator,
    arbiter,
    verifier1,
    verifier2,
    verifier3,
    verifiers: [verifier1, verifier2, verifier3],
    feeRecipient,
    client,
    client2,
    client3,
    provider1,
    provider2,
    provider3,
    provider4,
    stranger,
  };
}
export type Protocol = Awaited<ReturnType<typeof deployProtocol>>;

/** The escrow's constructor roles as the fixture deployed them, with `overrides` (role → address) on top. */
export function escrowRoles(p: Protocol, overrides: Record<string, string> = {}) {
  return {
    owner: p.owner.address,
    coordinator: p.coordinator.address,
    arbiter: p.arbiter.address,
    feeRecipient: p.feeRecipient.address,
    verifierSafe: p.safeAddress,
    ...overrides,
  };
}

/** provider1 holds a job (epoch 1) with its checkpoint at step 10 pending. */
export async function pendingCheckpoint() {
  const p = await networkHelpers.loadFixture(deployProtocol);
  const jobId = await startJob(p);
  const hash = ckpt(jobId, 10);
  await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
  return { ...p, jobId, hash };
}

/**
 * Ends `provider`'s probation the only way there is: one of its checkpoints accepted (on a job of its own, which
 * it then leaves with its lock back). Returns that job.
 */
export async function proveProvider(p: Protocol, provider = p.provider1): Promise<bigint> {
  const jobId = await startJob(p, {}, provider);
  await reportAndAccept(p, jobId, provider, 10);
  await p.escrow.connect(p.coordinator).unassign(jobId);
  return jobId;
}

/** Mints test USDC to a (registered) provider and deposits it as stake (default STAKE). */
export async function depositStake(
  p: Pick<Protocol, "usdc" | "registry">,
  provider: Signer & { address: string },
  amount = STAKE,
): Promise<void> {
  await p.usdc.mint(provider.address, amount);
  await p.usdc.connect(provider).approve(await p.registry.getAddress(), amount);
  await p.registry.connect(provider).depositStake(amount);
}

/** Creates a job (DEFAULT_REQUEST with `overrides`) as `from` (default: the client) and returns its id. */
export async function createJob(p: Protocol, overrides: Partial<JobRequest> = {}, from = p.client): Promise<bigint> {
  await p.escrow.connect(from).createJob({ ...DEFAULT_REQUEST, ...overrides });
  return p.escrow.jobCount();
}

/** Creates a job and has the coordinator assign it to `provider` (epoch 1). Returns its id. */
export async function startJob(
  p: Protocol,
  overrides: Partial<JobRequest> = {},
  provider = p.provider1,
): Promise<bigint> {
  const jobId = await createJob(p, overrides);
  await p.escrow.connect(p.coordinator).assign(jobId, provider.address);
  return jobId;
}

/** The checkpoint a decision or a fault refusal is about: CheckpointDecision without its `accept`. */
type CheckpointRef = Omit<CheckpointDecision, "accept">;

/**
 * Signs one kind of message about a checkpoint (decision, fault refusal: `digestOf` adds what the kind says of it)
 * with Safe-owner signatures packed in owner order. Default signers: verifier1 + 2.
 */
function checkpointSigner<V>(digestOf: (domain: TypedDataDomain, ref: CheckpointRef, value: V) => string) {
  return (
    p: Protocol,
    jobId: bigint,
    epoch: bigint,
    step: number,
    hash: string,
    value: V,
    signers: HardhatEthersSigner[] = [p.verifier1, p.verifier2],
  ): Promise<string> => {
    const domain = escrowDomain(p.chainId, p.escrowAddress);
    return signDigest(p, digestOf(domain, { jobId, epoch, step, checkpointHash: hash }, value), signers);
  };
}

/** Signatures over the checkpoint decision digest: `value` is `accept`. */
export const signDecision = checkpointSigner<boolean>((domain, ref, accept) =>
  checkpointDecisionDigest(domain, { ...ref, accept }),
);

export type { Fault };

/** A replay mismatch at `step` found by `finder` (default verifier1): committed and replayed hashes differ. */
export function faultAt(p: Protocol, step: number, finder = p.verifier1.address): Fault {
  const h = (what: string) => ethers.id(`state:${step}:${what}`);
  return { step, inputHash: h("in"), committedHash: h("committed"), replayedHash: h("replayed"), finder };
}

/** Signatures over a fault refusal's digest: `value` is the fault. */
export const signFault = checkpointSigner<Fault>((domain, ref, fault) => faultRefusalDigest(domain, { ...ref, fault }));

/** Safe-owner signatures over the verdict digest. Default: verifier1 + 2. */
export async function signVerdict(
  p: Protocol,
  jobId: bigint,
  modelHash: string,
  metric: bigint,
  passed: boolean,
  signers: HardhatEthersSigner[] = [p.verifier1, p.verifier2],
): Promise<string> {
  const digest = verdictDigest(escrowDomain(p.chainId, p.escrowAddress), { jobId, modelHash, metric, passed });
  return signDigest(p, digest, signers);
}

/** Packed Safe-owner signatures over `digest` (default: verifiers 1 and 2). */
export async function signDigest(
  p: Protocol,
  digest: string,
  signers: HardhatEthersSigner[] = [p.verifier1, p.verifier2],
): Promise<string> {
  const parts = [];
  for (const s of signers) {
    parts.push({ signer: s.address, signature: await signAsSafeOwner(s, p.chainId, p.safeAddress, digest) });
  }
  return packSafeSignatures(parts);
}

/** The assignee reports `step`, and the verifiers accept it (relayed by a stranger). Returns the hash. */
export async function reportAndAccept(
  p: Protocol,
  jobId: bigint,
  provider: HardhatEthersSigner,
  step: number,
  hash = ckpt(jobId, step),
): Promise<string> {
  const { epoch } = await p.escrow.jobOf(jobId);
  await p.escrow.connect(provider).reportCheckpoint(jobId, epoch, step, hash);
  await p.escrow
    .connect(p.stranger)
    .acceptCheckpoint(jobId, epoch, step, hash, await signDecision(p, jobId, epoch, step, hash, true));
  return hash;
}

/** Assigns `provider` and trains to the end, one accepted checkpoint per interval. Returns the final hash. */
export async function trainToEnd(p: Protocol, jobId: bigint, provider = p.provider1): Promise<string> {
  const job = await p.escrow.jobOf(jobId);
  if (job.phase === BigInt(Status.Open)) await p.escrow.connect(p.coordinator).assign(jobId, provider.address);
  let hash = job.acceptedHash;
  for (let step = Number(job.acceptedStep); step < Number(job.totalSteps);) {
    step = Math.min(step + Number(job.checkpointInterval), Number(job.totalSteps));
    hash = await reportAndAccept(p, jobId, provider, step);
  }
  return hash;
}

export const METRIC = 9_712n; // held-out accuracy in basis points

/** Creates a job, trains it to the end with `provider`, and submits a passing verdict. */
export async function runToVerdict(
  p: Protocol,
  {
    overrides = {},
    provider = p.provider1,
    passed = true,
  }: {
    overrides?: Partial<JobRequest>;
    provider?: HardhatEthersSigner;
    passed?: boolean;
  } = {},
): Promise<{ jobId: bigint; modelHash: string }> {
  const jobId = await createJob(p, overrides);
  const modelHash = await trainToEnd(p, jobId, provider);
  await p.escrow.submitVerdict(
    jobId,
    modelHash,
    METRIC,
    passed,
    await signVerdict(p, jobId, modelHash, METRIC, passed),
  );
  return { jobId, modelHash };
}

/** Seconds of the latest block. */
export async function now(): Promise<bigint> {
  return BigInt(await networkHelpers.time.latest());
}

/**
 * `expire(job)` by a stranger in the block at `expiresAt + offset`: emits JobExpired when offset > 0, else reverts
 * JobEscrowNotExpired with the job, the deadline and the block's time (the window's t−1, t, t+1).
 */
export async function expectExpireAt(
  p: Pick<Protocol, "escrow" | "stranger"> & { jobId: bigint },
  expiresAt: bigint,
  offset: bigint,
): Promise<void> {
  const { expect } = await import("chai");
  await networkHelpers.time.setNextBlockTimestamp(expiresAt + offset);
  const tx = p.escrow.connect(p.stranger).expire(p.jobId);
  if (offset > 0n) await expect(tx).to.emit(p.escrow, "JobExpired");
  else {
    await expect(tx)
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotExpired")
      .withArgs(p.jobId, expiresAt, expiresAt + offset);
  }
}
