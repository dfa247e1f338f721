/**
 * The agent's report and heartbeat land when the estimate was made within the second of the slot's last write.
 * Found as a CI failure (test/cli/slashed.ts): a report estimated at 44,450 gas in the second of the previous
 * report ran out of gas when mined a second later (47,250 needed), because rewriting an equal timestamp costs
 * 100 gas and a new one 2,900. Reproduced here deterministically on anvil: the previous report and its acceptance
 * are mined at a chosen second T, the agent estimates and broadcasts at T, and the block that includes it is at T+2
 * (a 2-second chain such as Base).
 */
import { safeSignatures } from "../helpers/cli.ts";
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, id, type ContractTransactionResponse, type JsonRpcProvider } from "ethers";
import { connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { checkpointDecisionDigest, escrowDomain } from "../../sdk/rules/verifierSignatures.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { sendHeartbeat, sendReport } from "../../agent/sends.ts";
import type { JobEscrow } from "../../types/ethers-contracts/index.ts";

const PRICE = 1_000n;

describe("agent: report and heartbeat land when estimated in the second of the last write (anvil)", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  let chain: JsonRpcProvider;
  let escrowAs: (key: string | HDNodeWallet) => JobEscrow;
  let acceptSigs: (step: number, hash: string) => Promise<string>;
  const provider = HDNodeWallet.fromMnemonic(
    Mnemonic.fromPhrase("test test test test test test test test test test test junk"),
    "m/44'/60'/0'/0/9",
  );
  let job = 0n;
  const deploymentId = `gas-headroom-${process.pid}`;

  before(async function () {
    const rpc = await startAnvil(group, await freePort(0), {}, "gas-headroom-chain");
    const d = loadDeployment(await deployLocal(rpc, deploymentId));
    chain = rpcProvider(rpc, 50);
    const { chainId } = await chain.getNetwork();
    const as = (key: string | HDNodeWallet) =>
      connectProtocol(d, typeof key === "string" ? new Wallet(key, chain) : key.connect(chain));
    escrowAs = (key) => as(key).escrow;
    const send = async (tx: Promise<ContractTransactionResponse>) => (await tx).wait();
    const templateId = loadTemplate("blobs-tiny").templateId;
    await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
    const p = as(provider);
    await send(p.registry.register("p", PRICE, 0, "x86_64 CPU", 4096));
    await send(p.usdc.mint(provider.address, 100_000_000n));
    await send(p.usdc.approve(d.registry, 100_000_000n));
    await send(p.registry.depositStake(100_000_000n));
    const c = as(TEST_KEYS.client);
    await send(c.usdc.mint(new Wallet(TEST_KEYS.client).address, 10_000_000n));
    await send(c.usdc.approve(d.escrow, 10_000_000n));
    const domain = escrowDomain(chainId, d.escrow);
    const verifiers = [new Wallet(TEST_KEYS.verifier1), new Wallet(TEST_KEYS.verifier2)];
    acceptSigs = async (step, hash) => {
      const digest = checkpointDecisionDigest(domain, {
        jobId: job,
        epoch: 1n,
        step,
        checkpointHash: hash,
        accept: true,
      });
      return safeSignatures(chainId, d.verifierSafe, digest, verifiers);
    };
    const request = {
      templateId,
      totalSteps: 100,
      checkpointInterval: 10,
      maxPricePerStep: PRICE,
      disputeWindow: 3_600n,
    };
    for (let i = 0; i < 2; i++) {
      await send(c.escrow.createJob({ ...request, budget: 100_000n }));
      await send(as(TEST_KEYS.coordinator).escrow.assign(BigInt(i + 1), provider.address));
    }
    await chain.send("evm_setAutomine", [false]);
  });

  after(async () => {
    await group.stopAll();
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  /** Mines the transactions sent by `during` in one block at second `at`; returns their receipts' statuses. */
  async function mineAt(at: number, during: () => Promise<ContractTransactionResponse[]>): Promise<number[]> {
    const txs = await during();
    await chain.send("evm_setNextBlockTimestamp", [at]);
    await chain.send("evm_mine", []);
    const receipts = await Promise.all(txs.map((t) => chain.getTransactionReceipt(t.hash)));
    return receipts.map((r) => r?.status ?? -1);
  }

  /** Job `j`'s step-10 report and its acceptance, mined together at a second ahead of anvil's clock. */
  async function reportAndAcceptAt(j: bigint): Promise<number> {
    job = j;
    const T = (await chain.getBlock("latest"))!.timestamp + 20; // within the 120 s lease of the assignment
    const h10 = id(`headroom:${j}:10`);
    const sigs = await acceptSigs(10, h10);
    const gas = { gasLimit: 1_000_000n };
    const statuses = await mineAt(T, async () => [
      await escrowAs(provider).reportCheckpoint(j, 1n, 10, h10, gas),
      await escrowAs(TEST_KEYS.keeper).acceptCheckpoint(j, 1n, 10, h10, sigs, gas),
    ]);
    expect(statuses).to.deep.equal([1, 1]);
    return T;
  }

  it("an exact estimate made at T runs out of gas at T+2 (the failure this guards against)", async () => {
    const T = await reportAndAcceptAt(1n);
    const escrow = escrowAs(provider);
    const h20 = id("headroom:1:20");
    // Estimated on the block at T itself (not the pending one, whose second moves on with the wall clock).
    const call = {
      from: provider.address,
      to: String(escrow.target),
      data: escrow.interface.encodeFunctionData("reportCheckpoint", [1n, 1n, 20, h20]),
    };
    const estimate = BigInt(await chain.send("eth_estimateGas", [call, "latest"]));
    const statuses = await mineAt(T + 2, async () => [
      await escrow.reportCheckpoint(1n, 1n, 20, h20, { gasLimit: estimate }),
    ]);
    expect(statuses).to.deep.equal([0]);
  });

  it("the agent's report, estimated at T, lands at T+2", async () => {
    const T = await reportAndAcceptAt(2n);
    const statuses = await mineAt(T + 2, async () => [
      await sendReport(escrowAs(provider), 2n, 1n, 20, id("headroom:2:20")),
    ]);
    expect(statuses).to.deep.equal([1]);
    const view = await escrowAs(provider).jobOf(2n);
    expect(view.pendingStep).to.equal(20n);
  });

  it("the agent's heartbeat, estimated in the second of the last lease write, lands two seconds later", async () => {
    const T = (await chain.getBlock("latest"))!.timestamp + 20;
    const escrow = escrowAs(provider);
    expect(await mineAt(T, async () => [await escrow.heartbeat(2n, 1n, { gasLimit: 1_000_000n })])).to.deep.equal([1]);
    expect(await mineAt(T + 2, async () => [await sendHeartbeat(escrow, 2n, 1n)])).to.deep.equal([1]);
  });
});
