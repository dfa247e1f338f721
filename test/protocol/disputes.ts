import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

const BUDGET = 100_000n;
const PAID = 100n * fx.PRICE.provider1; // the whole job, trained by provider1

async function verdictJob() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  const { jobId } = await fx.runToVerdict(p);
  return { ...p, jobId };
}

async function disputedJob() {
  const p = await verdictJob();
  await p.escrow.connect(p.client).dispute(p.jobId);
  return p;
}

describe("JobEscrow: dispute, arbiter, settle", function () {
  describe("dispute", function () {
    it("dispute: the client posts the bond during the window; the job is Disputed until openedAt + 3 days", async function () {
      const p = await verdictJob();
      const tx = p.escrow.connect(p.client).dispute(p.jobId);
      await expect(tx).to.changeTokenBalances(fx.ethers, p.usdc, [p.client, p.escrowAddress], [-fx.BOND, fx.BOND]);
      const t = await fx.now();
      await expect(tx)
        .to.emit(p.escrow, "DisputeOpened")
        .withArgs(p.jobId, p.client.address, fx.BOND, t + fx.ARBITER_TIMEOUT);
      expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.Disputed));
      const d = await p.escrow.disputeOf(p.jobId);
      expect([d.bond, d.openedAt, d.resolved, d.upheld]).to.deep.equal([fx.BOND, t, false, false]);
      expect(await p.escrow.totalBonds()).to.equal(fx.BOND);
      const [held, owes] = await p.escrow.reserves();
      expect(held).to.equal(owes);
    });

    it("dispute: reverts with JobEscrowBondNotApproved when the allowance is below the bond", async function () {
      const p = await verdictJob();
      await p.usdc.connect(p.client).approve(p.escrowAddress, fx.BOND - 1n);
      await expect(p.escrow.connect(p.client).dispute(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowBondNotApproved")
        .withArgs(p.jobId, fx.BOND - 1n, fx.BOND);
    });

    it("dispute: reverts with JobEscrowNotClient for anyone else, and JobEscrowUnexpectedStatus once the window passed", async function () {
      const p = await verdictJob();
      await expect(p.escrow.connect(p.provider1).dispute(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotClient")
        .withArgs(p.jobId, p.provider1.address, p.client.address);
      await fx.networkHelpers.time.increase(3_601);
      await expect(p.escrow.connect(p.client).dispute(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Settleable, fx.bits(fx.Status.DisputeWindow));
    });
  });

  describe("resolveDispute", function () {
    it("resolveDispute(upheld): voids the providers' pay; the whole budget and the bond go back to the client", async function () {
      const p = await disputedJob();
      const tx = await p.escrow.connect(p.arbiter).resolveDispute(p.jobId, true);
      await expect(tx).to.emit(p.escrow, "DisputeResolved").withArgs(p.jobId, p.arbiter.address, true);
      await expect(tx).to.emit(p.escrow, "JobSettled").withArgs(p.jobId, BUDGET, 0n, fx.BOND, 0n);
      expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.Settled));
      expect(await p.escrow.owed(p.client.address)).to.equal(BUDGET + fx.BOND);
      expect(await p.escrow.earningsOf(p.jobId, p.provider1.address)).to.equal(0n);
      await expect(p.escrow.claimEarnings(p.jobId, p.provider1.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoEarnings")
        .withArgs(p.jobId, p.provider1.address);
      const d = await p.escrow.disputeOf(p.jobId);
      expect([d.resolved, d.upheld]).to.deep.equal([true, true]);
      expect([await p.escrow.totalLocked(), await p.escrow.totalBonds()]).to.deep.equal([0n, 0n]);
    });

    it("resolveDispute(rejected): the verdict stands; the bond goes to the fee recipient; providers keep their pay", async function () {
      const p = await disputedJob();
      const tx = await p.escrow.connect(p.arbiter).resolveDispute(p.jobId, false);
      await expect(tx).to.emit(p.escrow, "DisputeResolved").withArgs(p.jobId, p.arbiter.address, false);
      await expect(tx)
        .to.emit(p.escrow, "JobSettled")
        .withArgs(p.jobId, BUDGET - PAID, PAID, 0n, fx.BOND);
      expect(await p.escrow.owed(p.feeRecipient.address)).to.equal(fx.BOND);
      expect(await p.escrow.owed(p.client.address)).to.equal(BUDGET - PAID);
      await expect(p.escrow.claimEarnings(p.jobId, p.provider1.address))
        .to.emit(p.escrow, "EarningsReleased")
        .withArgs(p.jobId, p.provider1.address, PAID);
    });

    it("resolveDispute: a forfeited bond goes to the fee recipient named at resolution time", async function () {
      const p = await disputedJob();
      await p.escrow.connect(p.owner).setFeeRecipient(p.stranger.address);
      await p.escrow.connect(p.arbiter).resolveDispute(p.jobId, false);
      expect(await p.escrow.owed(p.stranger.address)).to.equal(fx.BOND);
      expect(await p.escrow.owed(p.feeRecipient.address)).to.equal(0n);
    });

    it("resolveDispute: reverts with JobEscrowNotArbiter for anyone but the arbiter, even the owner", async function () {
      const p = await disputedJob();
      for (const who of [p.owner, p.client, p.coordinator]) {
        await expect(p.escrow.connect(who).resolveDispute(p.jobId, true))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotArbiter")
          .withArgs(who.address, p.arbiter.address);
      }
    });

    it("resolveDispute: reverts with JobEscrowUnexpectedStatus on an undisputed job and after the 3-day deadline", async function () {
      const p = await verdictJob();
      await expect(p.escrow.connect(p.arbiter).resolveDispute(p.jobId, true))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.DisputeWindow, fx.bits(fx.Status.Disputed));
      await p.escrow.connect(p.client).dispute(p.jobId);
      await fx.networkHelpers.time.increase(fx.ARBITER_TIMEOUT + 1n);
      await expect(p.escrow.connect(p.arbiter).resolveDispute(p.jobId, true))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.ArbiterTimedOut, fx.bits(fx.Status.Disputed));
    });
  });

  describe("settle", function () {
    it("settle: once the window passed anyone settles; the unspent budget becomes the client's, earnings stay claimable", async function () {
      const p = await verdictJob();
      await fx.networkHelpers.time.increase(3_601);
      expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.Settleable));
      await expect(p.escrow.connect(p.stranger).settle(p.jobId))
        .to.emit(p.escrow, "JobSettled")
        .withArgs(p.jobId, BUDGET - PAID, PAID, 0n, 0n);
      expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.Settled));
      expect(await p.escrow.owed(p.client.address)).to.equal(BUDGET - PAID);
      expect(await p.escrow.totalLocked()).to.equal(PAID); // until provider1 claims
    });

    it("settle: after 3 days of arbiter silence anyone settles; the verdict stands and the bond is returned", async function () {
      const p = await disputedJob();
      await fx.networkHelpers.time.increase(fx.ARBITER_TIMEOUT + 1n);
      expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.ArbiterTimedOut));
      const tx = await p.escrow.connect(p.stranger).settle(p.jobId);
      await expect(tx).to.emit(p.escrow, "ArbiterTimedOut").withArgs(p.jobId, p.stranger.address);
      await expect(tx)
        .to.emit(p.escrow, "JobSettled")
        .withArgs(p.jobId, BUDGET - PAID, PAID, fx.BOND, 0n);
      const d = await p.escrow.disputeOf(p.jobId);
      expect([d.resolved, d.upheld]).to.deep.equal([true, false]);
      expect(await p.escrow.owed(p.client.address)).to.equal(BUDGET - PAID + fx.BOND);
      expect(await p.escrow.totalBonds()).to.equal(0n);
    });

    it("settle: reverts with JobEscrowUnexpectedStatus during the window, during the arbiter's time, and when settled", async function () {
      const p = await verdictJob();
      const allowed = fx.bits(fx.Status.Settleable, fx.Status.ArbiterTimedOut);
      await expect(p.escrow.settle(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.DisputeWindow, allowed);
      await p.escrow.connect(p.client).dispute(p.jobId);
      await expect(p.escrow.settle(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Disputed, allowed);
      await p.escrow.connect(p.arbiter).resolveDispute(p.jobId, false);
      await expect(p.escrow.settle(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Settled, allowed);
    });
  });
});
