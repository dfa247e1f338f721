import { expect } from "chai";
import { network } from "hardhat";
import GPUChainLocal from "../../ignition/modules/GPUChainLocal.ts";
import { checkpointDecisionDigest, escrowDomain, packSafeSignatures, signAsSafeOwner } from "../../sdk/verifierSignatures.ts";

const { ethers, ignition } = await network.create();

describe("smoke", function () {
  it("deploys through Ignition and accepts a checkpoint signed by 2 of 3 Safe owners", async function () {
    const signers = await ethers.getSigners();
    const [owner, coordinator, , v1, v2, v3, , client, provider] = signers;
    const d = await ignition.deploy(GPUChainLocal);
    const escrow = await ethers.getContractAt("JobEscrow", await d.escrow.getAddress());
    const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
    const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
    const safe = await d.verifierSafe.getAddress();
    console.log("owners", await d.verifierSafe.getOwners(), await d.verifierSafe.getThreshold());
    const tid = ethers.id("template");
    await escrow.connect(owner).setTemplateApproval(tid, true);
    await usdc.mint(client.address, 1_000_000_000n);
    await usdc.connect(client).approve(await escrow.getAddress(), 1_000_000_000n);
    await escrow.connect(client).createJob({ templateId: tid, totalSteps: 100, checkpointInterval: 10, maxPricePerStep: 1000, budget: 100_000, disputeWindow: 3600 });
    await registry.connect(provider).register("p1", 900, 0, "cpu", 1024);
    await escrow.connect(coordinator).assign(1, provider.address);
    const h = ethers.id("ckpt");
    await escrow.connect(provider).reportCheckpoint(1, 1, 10, h);
    const { chainId } = await ethers.provider.getNetwork();
    const domain = escrowDomain(chainId, await escrow.getAddress());
    const digest = checkpointDecisionDigest(domain, { jobId: 1n, epoch: 1n, step: 10, checkpointHash: h, accept: true });
    expect(digest).to.equal(await escrow.checkpointDecisionDigest(1, 1, 10, h, true));
    const s1 = await signAsSafeOwner(v1, chainId, safe, digest);
    const s3 = await signAsSafeOwner(v3, chainId, safe, digest);
    const one = packSafeSignatures([{ signer: v1.address, signature: s1 }]);
    await expect(escrow.acceptCheckpoint(1, 1, 10, h, one)).to.be.revertedWithCustomError(escrow, "JobEscrowInvalidVerifierSignatures");
    const two = packSafeSignatures([{ signer: v3.address, signature: s3 }, { signer: v1.address, signature: s1 }]);
    const tx = await escrow.acceptCheckpoint(1, 1, 10, h, two);
    console.log("gas", (await tx.wait())!.gasUsed);
    expect(await escrow.earningsOf(1, provider.address)).to.equal(9000n);
  });
});
