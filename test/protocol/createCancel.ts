import { expect } from "chai";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/types";
import * as fx from "../helpers/fixture.ts";
import { permitDomain, signPermit } from "../../sdk/rules/permit.ts";

/** The client-side permit (sdk/rules/permit.ts, as `gpuchain job create` signs it), on the token's pinned EIP-712 name. */
async function permit(p: fx.Protocol, owner: HardhatEthersSigner, value: bigint, deadline: bigint) {
  expect((await permitDomain(p.usdc, p.chainId)).name).to.equal("GPUChain Test USDC");
  return signPermit(owner, p.usdc, { spender: p.escrowAddress, value, deadline, chainId: p.chainId });
}

describe("JobEscrow: create and cancel", function () {
  describe("createJob", function () {
    it("createJob: locks the budget, stores the request, emits JobCreated with the derived seed", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const { escrow, usdc, client } = p;
      const seed = fx.ethers.keccak256(
        fx.ethers.AbiCoder.defaultAbiCoder().encode(
          ["uint256", "address", "uint256", "address"],
          [p.chainId, p.escrowAddress, 1n, client.address],
        ),
      );
      const r = fx.DEFAULT_REQUEST;
      const tx = escrow.connect(client).createJob(r);
      await expect(tx)
        .to.emit(escrow, "JobCreated")
        .withArgs(
          1n,
          client.address,
          r.templateId,
          seed,
          r.totalSteps,
          r.checkpointInterval,
          r.maxPricePerStep,
          r.budget,
          r.disputeWindow,
        );
      await expect(tx).to.changeTokenBalances(fx.ethers, usdc, [client, p.escrowAddress], [-r.budget, r.budget]);
      const job = await escrow.jobOf(1n);
      expect(job.client).to.equal(client.address);
      expect(job.phase).to.equal(BigInt(fx.Status.Open));
      expect(job.epoch).to.equal(0n);
      expect(job.seed).to.equal(seed);
      expect(job.budget).to.equal(r.budget);
      expect(job.totalSteps).to.equal(BigInt(r.totalSteps));
      expect(await escrow.statusOf(1n)).to.equal(BigInt(fx.Status.Open));
      expect(await escrow.jobCount()).to.equal(1n);
      expect(await escrow.totalLocked()).to.equal(r.budget);
      // reserves() counts the three fixture providers' stakes too (held by the registry).
      expect(await escrow.reserves()).to.deep.equal([r.budget + 3n * fx.STAKE, r.budget + 3n * fx.STAKE]);
    });

    it("createJob: accepts the dispute-window bounds (1 minute and 30 days) and interval == totalSteps", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await fx.createJob(p, { disputeWindow: 60n });
      await fx.createJob(p, { disputeWindow: 30n * 24n * 3600n, totalSteps: 7, checkpointInterval: 7 });
      expect((await p.escrow.jobOf(2n)).disputeWindow).to.equal(30n * 24n * 3600n);
    });

    it("createJob: ids are sequential and seeds differ per job and per client", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      expect(await fx.createJob(p)).to.equal(1n);
      expect(await fx.createJob(p, {}, p.client2)).to.equal(2n);
      const [a, b] = [await p.escrow.jobOf(1n), await p.escrow.jobOf(2n)];
      expect(a.seed).to.not.equal(b.seed);
      expect(b.client).to.equal(p.client2.address);
    });

    it("createJob: reverts with the token's ERC20InsufficientAllowance when the client approved too little", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.usdc.connect(p.client).approve(p.escrowAddress, 10n);
      await expect(p.escrow.connect(p.client).createJob(fx.DEFAULT_REQUEST))
        .to.be.revertedWithCustomError(p.usdc, "ERC20InsufficientAllowance")
        .withArgs(p.escrowAddress, 10n, fx.DEFAULT_REQUEST.budget);
    });
  });

  describe("createJobWithPermit", function () {
    it("createJobWithPermit: approves through an EIP-2612 permit and locks the budget in one transaction", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.usdc.connect(p.client).approve(p.escrowAddress, 0n);
      const deadline = BigInt(await fx.networkHelpers.time.latest()) + 3600n;
      const { v, r, s } = await permit(p, p.client, fx.DEFAULT_REQUEST.budget, deadline);
      const tx = p.escrow.connect(p.client).createJobWithPermit(fx.DEFAULT_REQUEST, deadline, v, r, s);
      await expect(tx).to.changeTokenBalance(fx.ethers, p.usdc, p.client, -fx.DEFAULT_REQUEST.budget);
      await expect(tx).to.emit(p.escrow, "JobCreated");
      expect(await p.usdc.nonces(p.client.address)).to.equal(1n);
      expect(await p.usdc.allowance(p.client.address, p.escrowAddress)).to.equal(0n);
    });

    it("createJobWithPermit: still creates the job when a front-runner already used the permit", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.usdc.connect(p.client).approve(p.escrowAddress, 0n);
      const deadline = BigInt(await fx.networkHelpers.time.latest()) + 3600n;
      const { v, r, s } = await permit(p, p.client, fx.DEFAULT_REQUEST.budget, deadline);
      await p.usdc
        .connect(p.stranger)
        .permit(p.client.address, p.escrowAddress, fx.DEFAULT_REQUEST.budget, deadline, v, r, s);
      await expect(p.escrow.connect(p.client).createJobWithPermit(fx.DEFAULT_REQUEST, deadline, v, r, s)).to.emit(
        p.escrow,
        "JobCreated",
      );
    });

    it("createJobWithPermit: reverts with ERC20InsufficientAllowance when the permit is invalid and no allowance exists", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.usdc.connect(p.client).approve(p.escrowAddress, 0n);
      const deadline = BigInt(await fx.networkHelpers.time.latest()) + 3600n;
      const { v, r, s } = await permit(p, p.stranger, fx.DEFAULT_REQUEST.budget, deadline); // signed by the wrong key
      await expect(p.escrow.connect(p.client).createJobWithPermit(fx.DEFAULT_REQUEST, deadline, v, r, s))
        .to.be.revertedWithCustomError(p.usdc, "ERC20InsufficientAllowance")
        .withArgs(p.escrowAddress, 0n, fx.DEFAULT_REQUEST.budget);
    });
  });

  describe("cancel", function () {
    it("cancel: an Open job becomes Cancelled and the whole budget becomes the client's to withdraw", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.createJob(p);
      await expect(p.escrow.connect(p.client).cancel(jobId))
        .to.emit(p.escrow, "JobCancelled")
        .withArgs(jobId, fx.DEFAULT_REQUEST.budget);
      expect(await p.escrow.statusOf(jobId)).to.equal(BigInt(fx.Status.Cancelled));
      expect(await p.escrow.owed(p.client.address)).to.equal(fx.DEFAULT_REQUEST.budget);
      expect(await p.escrow.totalLocked()).to.equal(0n);
      expect(await p.escrow.totalWithdrawable()).to.equal(fx.DEFAULT_REQUEST.budget);
    });

    it("cancel: after a fail-over, refunds only the unspent budget; the dropped provider's accepted work stays claimable", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.createJob(p);
      await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
      await fx.reportAndAccept(p, jobId, p.provider1, 10);
      await p.escrow.connect(p.coordinator).unassign(jobId);
      const earned = 10n * 900n;
      await expect(p.escrow.connect(p.client).cancel(jobId))
        .to.emit(p.escrow, "JobCancelled")
        .withArgs(jobId, fx.DEFAULT_REQUEST.budget - earned);
      await expect(p.escrow.claimEarnings(jobId, p.provider1.address))
        .to.emit(p.escrow, "EarningsReleased")
        .withArgs(jobId, p.provider1.address, earned);
      expect(await p.escrow.owed(p.provider1.address)).to.equal(earned);
      expect(await p.escrow.totalLocked()).to.equal(0n);
    });

    it("cancel: reverts with JobEscrowUnexpectedStatus while Running and with JobEscrowNotClient for anyone else", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.createJob(p);
      await expect(p.escrow.connect(p.stranger).cancel(jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotClient")
        .withArgs(jobId, p.stranger.address, p.client.address);
      await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
      await expect(p.escrow.connect(p.client).cancel(jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(jobId, fx.Status.Running, fx.bits(fx.Status.Open));
    });
  });
});
