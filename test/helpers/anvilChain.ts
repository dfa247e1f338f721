/**
 * The protocol on a real anvil node (deployed through Ignition, as `npm start` deploys it) for the tests of what each
 * part does across a reorganisation: anvil replaces blocks on request (`anvil_reorg DEPTH [txs]`). Named
 * actors from Hardhat's test accounts (client, coordinator, the verifier Safe's owners, a relaying keeper) and
 * fresh provider keys, registered and staked. No tests here.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, type ContractTransactionResponse, type JsonRpcProvider } from "ethers";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { connectProtocol, rpcProvider, type Protocol } from "../../sdk/node/contracts.ts";
import { loadDeployment, type Deployment } from "../../sdk/node/deployment.ts";
import {
  checkpointDecisionDigest,
  escrowDomain,
  packSafeSignatures,
  signAsSafeOwner,
  verdictDigest,
} from "../../sdk/rules/verifierSignatures.ts";
import { loadTemplate } from "../../workloads/index.ts";

export const CHAIN_ID = 31337n;
const MNEMONIC = "test test test test test test test test test test test junk";
export const VERIFIER_KEYS = [TEST_KEYS.verifier1, TEST_KEYS.verifier2];

export interface AnvilProtocol {
  rpc: string;
  chain: JsonRpcProvider;
  deployment: Deployment;
  /** The deployment's addresses file (the CLI's --deployment). */
  deploymentFile: string;
  templateId: string;
  /** The protocol as `key` sends it. */
  as(key: string): Protocol;
  createJob(totalSteps: number, interval: number): Promise<bigint>;
  /** A fresh provider key (Hardhat account `index` ≥ 10 of the test mnemonic) with ETH, registered and staked. */
  provider(index: number): Promise<Wallet>;
  /** 2-of-3 Safe owner signatures on accepting (or refusing) the job's pending checkpoint, relayed by the keeper key. */
  decide(jobId: bigint, accept: boolean): Promise<number>;
  /** The verifiers' verdict on the final checkpoint, relayed by the keeper key; the block it landed in. */
  verdict(jobId: bigint, passed?: boolean): Promise<number>;
  /** Replaces the blocks from `block` to the head by as many empty ones (`anvil_reorg`): the depth it replaced. */
  reorgFrom(block: number): Promise<number>;
  stop(): Promise<void>;
}

/** `pruneHistory`: a pruned (non-archive) node keeping only that many recent blocks' state (anvil --prune-history). */
export async function anvilProtocol(name: string, o: { pruneHistory?: number } = {}): Promise<AnvilProtocol> {
  const group = new ProcessGroup(() => {});
  const deploymentId = `${name}-${process.pid}`;
  const rpc = await startAnvil(group, await freePort(0), o, `${name}-chain`);
  const deploymentFile = await deployLocal(rpc, deploymentId);
  const deployment = loadDeployment(deploymentFile);
  const chain = rpcProvider(rpc, 50);
  const as = (key: string) => connectProtocol(deployment, new Wallet(key, chain));
  const send = async (tx: Promise<ContractTransactionResponse>) => (await (await tx).wait())!;
  const templateId = loadTemplate("blobs-tiny").templateId;
  await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
  const client = as(TEST_KEYS.client);
  const clientAddress = new Wallet(TEST_KEYS.client).address;
  await send(client.usdc.mint(clientAddress, 1_000_000_000n));
  await send(client.usdc.approve(deployment.escrow, 1_000_000_000n));
  const domain = escrowDomain(CHAIN_ID, deployment.escrow);
  const sign = async (digest: string) =>
    packSafeSignatures(
      await Promise.all(
        VERIFIER_KEYS.map(async (k) => {
          const w = new Wallet(k);
          return { signer: w.address, signature: await signAsSafeOwner(w, CHAIN_ID, deployment.verifierSafe, digest) };
        }),
      ),
    );
  const keeper = as(TEST_KEYS.keeper).escrow;

  return {
    rpc,
    chain,
    deployment,
    deploymentFile,
    templateId,
    as,
    async createJob(totalSteps, interval) {
      const request = {
        templateId,
        totalSteps,
        checkpointInterval: interval,
        maxPricePerStep: 1_000n,
        budget: BigInt(totalSteps) * 1_000n,
        disputeWindow: 3_600n,
      };
      await send(client.escrow.createJob(request));
      return client.escrow.jobCount();
    },
    async provider(index) {
      const w = HDNodeWallet.fromMnemonic(Mnemonic.fromPhrase(MNEMONIC), `m/44'/60'/0'/0/${index}`);
      const wallet = new Wallet(w.privateKey, chain);
      await chain.send("anvil_setBalance", [wallet.address, "0x56BC75E2D63100000"]);
      const p = connectProtocol(deployment, wallet);
      await send(p.registry.register(`prov-${index}`, 900n, 0, "x86_64 CPU", 4096));
      await send(p.usdc.mint(wallet.address, 10_000_000n));
      await send(p.usdc.approve(deployment.registry, 10_000_000n));
      await send(p.registry.depositStake(10_000_000n));
      return wallet;
    },
    async decide(jobId, accept) {
      const job = await keeper.jobOf(jobId);
      const m = { jobId, epoch: job.pendingEpoch, step: Number(job.pendingStep), checkpointHash: job.pendingHash };
      const sigs = await sign(checkpointDecisionDigest(domain, { ...m, accept }));
      const fn = accept ? keeper.acceptCheckpoint : keeper.refuseCheckpoint;
      return (await send(fn(jobId, m.epoch, m.step, m.checkpointHash, sigs))).blockNumber;
    },
    async verdict(jobId, passed = true) {
      const modelHash = (await keeper.jobOf(jobId)).acceptedHash;
      const sigs = await sign(verdictDigest(domain, { jobId, modelHash, metric: 9_700n, passed }));
      return (await send(keeper.submitVerdict(jobId, modelHash, 9_700n, passed, sigs))).blockNumber;
    },
    async reorgFrom(block) {
      const depth = (await chain.getBlockNumber()) - block + 1;
      await chain.send("anvil_reorg", [depth, []]);
      return depth;
    },
    async stop() {
      chain.destroy();
      await group.stopAll(3_000);
      rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
    },
  };
}

/** Mines `n` empty blocks (so that a reorganisation of depth n + 1 reaches back to the block before them). */
export async function mine(chain: JsonRpcProvider, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await chain.send("evm_mine", []);
}

/**
 * On a chain the tests started themselves (`deployLocal`): approves blobs-tiny, funds the client and posts one Open
 * job (10 steps, one checkpoint); its receipt (job 1 on a fresh deployment).
 */
export async function postOpenJob(deployment: Deployment, chain: JsonRpcProvider) {
  const send = async (tx: Promise<ContractTransactionResponse>) => (await (await tx).wait())!;
  const as = (key: string) => connectProtocol(deployment, new Wallet(key, chain));
  const templateId = loadTemplate("blobs-tiny").templateId;
  await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
  const client = as(TEST_KEYS.client);
  await send(client.usdc.mint(new Wallet(TEST_KEYS.client).address, 1_000_000n));
  await send(client.usdc.approve(deployment.escrow, 1_000_000n));
  const request = {
    templateId,
    totalSteps: 10,
    checkpointInterval: 10,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    disputeWindow: 3_600n,
  };
  return send(client.escrow.createJob(request));
}
