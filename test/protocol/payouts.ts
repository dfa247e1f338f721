import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

/** A job trained 0..40 by provider1, 40..100 by provider2 (after a fail-over), settled without dispute. */
async function settledTwoProviderJob() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  const jobId = await fx.startJob(p);
  for (const step of [10, 20, 30, 40]) await fx.reportAndAccept(p, jobId, p.provider1, step);
  await p.escrow.connect(p.coordinator).unassign(jobId);
  const modelHash = await fx.trainToEnd(p, jobId, p.provider2);
  await p.escrow.submitVerdict(
    jobId,
    modelHash,
    fx.METRIC,
    true,
    await fx.signVerdict(p, jobId, modelHash, fx.METRIC, true),
  );
  await fx.networkHelpers.time.increase(3_601);
  await p.escrow.settle(jobId);
  return { ...p, jobId, earned1: 40n * fx.PRICE.provider1, earned2: 60n * fx.PRICE.provider2 };
}

describe("JobEscrow: claim and withdraw", function () {
  describe("claimEarnings", function () {
    it("claimEarnings: anyone moves a provider's accepted earnings to its withdrawable balance, once", async function () {
      const p = await settledTwoProviderJob();
      const lockedBefore = await p.escrow.totalLocked();
      await expect(p.escrow.connect(p.stranger).claimEarnings(p.jobId, p.provider1.address))
        .to.emit(p.escrow, "EarningsReleased")
        .withArgs(p.jobId, p.provider1.address, p.earned1);
      expect(await p.escrow.owed(p.provider1.address)).to.equal(p.earned1);
      expect(await p.escrow.earningsOf(p.jobId, p.provider1.address)).to.equal(0n);
      expect(await p.escrow.totalLocked()).to.equal(lockedBefore - p.earned1);
      await expect(p.escrow.claimEarnings(p.jobId, p.provider1.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoEarnings")
        .withArgs(p.jobId, p.provider1.address);
      await p.escrow.claimEarnings(p.jobId, p.provider2.address);
      expect(await p.escrow.totalLocked()).to.equal(0n);
    });

    it("claimEarnings: the client's refund plus both providers' earnings add up to the budget exactly", async function () {
      const p = await settledTwoProviderJob();
      await p.escrow.claimEarnings(p.jobId, p.provider1.address);
      await p.escrow.claimEarnings(p.jobId, p.provider2.address);
      const total =
        (await p.escrow.owed(p.client.address)) +
        (await p.escrow.owed(p.provider1.address)) +
        (await p.escrow.owed(p.provider2.address));
      expect(total).to.equal(100_000n);
    });

    it("claimEarnings: reverts with JobEscrowUnexpectedStatus before settlement and JobEscrowNoEarnings for a non-earner", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const { jobId } = await fx.runToVerdict(p);
      await expect(p.escrow.claimEarnings(jobId, p.provider1.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(jobId, fx.Status.DisputeWindow, fx.bits(fx.Status.Settled, fx.Status.Cancelled));
      await fx.networkHelpers.time.increase(3_601);
      await p.escrow.settle(jobId);
      await expect(p.escrow.claimEarnings(jobId, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoEarnings")
        .withArgs(jobId, p.provider2.address);
    });
  });

  describe("withdraw", function () {
    it("withdraw: pays the caller everything it is owed and emits Withdrawn; reserves stay balanced", async function () {
      const p = await settledTwoProviderJob();
      await p.escrow.claimEarnings(p.jobId, p.provider2.address);
      const tx = p.escrow.connect(p.provider2).withdraw();
      await expect(tx).to.changeTokenBalances(
        fx.ethers,
        p.usdc,
        [p.provider2, p.escrowAddress],
        [p.earned2, -p.earned2],
      );
      await expect(tx).to.emit(p.escrow, "Withdrawn").withArgs(p.provider2.address, p.earned2);
      expect(await p.escrow.owed(p.provider2.address)).to.equal(0n);
      const [held, owes] = await p.escrow.reserves();
      expect(held).to.equal(owes);
      expect(owes).to.equal(100_000n - p.earned2 + 3n * fx.STAKE); // the fixture providers' stakes
    });

    it("withdraw: one call collects a client's refunds from several jobs plus a returned bond", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const cancelled = await fx.createJob(p, { budget: 5_000n });
      await p.escrow.connect(p.client).cancel(cancelled);
      const { jobId } = await fx.runToVerdict(p);
      await p.escrow.connect(p.client).dispute(jobId);
      await p.escrow.connect(p.arbiter).resolveDispute(jobId, true);
      const expected = 5_000n + 100_000n + fx.BOND;
      expect(await p.escrow.owed(p.client.address)).to.equal(expected);
      await expect(p.escrow.connect(p.client).withdraw()).to.changeTokenBalance(fx.ethers, p.usdc, p.client, expected);
    });

    it("withdraw: reverts with JobEscrowNothingOwed when nothing is owed, including right after a withdrawal", async function () {
      const p = await settledTwoProviderJob();
      await expect(p.escrow.connect(p.stranger).withdraw())
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNothingOwed")
        .withArgs(p.stranger.address);
      await p.escrow.connect(p.client).withdraw();
      await expect(p.escrow.connect(p.client).withdraw())
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNothingOwed")
        .withArgs(p.client.address);
    });
  });
});
