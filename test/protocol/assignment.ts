import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

/** The protocol with a fresh Open job (DEFAULT_REQUEST). */
async function openJob() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  return { ...p, jobId: await fx.createJob(p) };
}

/** The protocol with a job assigned to provider1 (epoch 1). */
async function runningJob() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  return { ...p, jobId: await fx.startJob(p) };
}

describe("JobEscrow: assign, unassign, heartbeat", function () {
  describe("assign", function () {
    it("assign: the coordinator assigns an active provider; epoch 1, its price fixed, lease from now", async function () {
      const { escrow, coordinator, provider1, jobId } = await openJob();
      const tx = await escrow.connect(coordinator).assign(jobId, provider1.address);
      const t = await fx.now();
      await expect(tx)
        .to.emit(escrow, "ProviderAssigned")
        .withArgs(jobId, provider1.address, 1n, fx.PRICE.provider1, 0, fx.ethers.ZeroHash, t + fx.LEASE);
      const job = await escrow.jobOf(jobId);
      expect(job.phase).to.equal(BigInt(fx.Status.Running));
      expect(job.provider).to.equal(provider1.address);
      expect(job.pricePerStep).to.equal(fx.PRICE.provider1);
      expect(job.leaseExpiresAt).to.equal(t + fx.LEASE);
      expect(job.epoch).to.equal(1n);
    });

    it("assign: after a fail-over the new provider resumes from the last accepted step and hash, at its own price", async function () {
      const p = await runningJob();
      const h10 = await fx.reportAndAccept(p, p.jobId, p.provider1, 10);
      await p.escrow.connect(p.coordinator).unassign(p.jobId); // epoch 2
      const tx = await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address);
      await expect(tx)
        .to.emit(p.escrow, "ProviderAssigned")
        .withArgs(p.jobId, p.provider2.address, 3n, fx.PRICE.provider2, 10, h10, (await fx.now()) + fx.LEASE);
      await fx.reportAndAccept(p, p.jobId, p.provider2, 20);
      expect(await p.escrow.earningsOf(p.jobId, p.provider1.address)).to.equal(10n * fx.PRICE.provider1);
      expect(await p.escrow.earningsOf(p.jobId, p.provider2.address)).to.equal(10n * fx.PRICE.provider2);
      expect((await p.escrow.jobOf(p.jobId)).paid).to.equal(10n * (fx.PRICE.provider1 + fx.PRICE.provider2));
    });

    it("assign: a price change in the registry does not change a running assignment's price", async function () {
      const p = await runningJob();
      await p.registry.connect(p.provider1).update(1n, 1, "cheaper now", 1);
      const h = fx.ckpt(p.jobId, 10);
      await p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 10, h);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, h, await fx.signDecision(p, p.jobId, 1n, 10, h, true)))
        .to.emit(p.escrow, "CheckpointAccepted")
        .withArgs(p.jobId, p.provider1.address, 1n, 10, h, 10, 10n * fx.PRICE.provider1);
    });

    it("assign: a deactivated provider keeps the job it already holds", async function () {
      const p = await runningJob();
      await p.registry.connect(p.provider1).deactivate();
      await fx.reportAndAccept(p, p.jobId, p.provider1, 10);
      expect(await p.escrow.earningsOf(p.jobId, p.provider1.address)).to.equal(10n * fx.PRICE.provider1);
    });

    it("assign: succeeds when the budget covers the remaining steps exactly", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.createJob(p, { budget: 100n * fx.PRICE.provider1 });
      await expect(p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address)).to.emit(
        p.escrow,
        "ProviderAssigned",
      );
    });

    it("assign: reverts with JobEscrowBudgetShort counting only the remaining steps at the new price", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.createJob(p, { budget: 100n * fx.PRICE.provider1 }); // 90 000
      await expect(p.escrow.connect(p.coordinator).assign(jobId, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowBudgetShort")
        .withArgs(jobId, 100n * fx.PRICE.provider2, 90_000n);
      await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
      await fx.reportAndAccept(p, jobId, p.provider1, 10); // paid 9 000, 90 steps left
      await p.escrow.connect(p.coordinator).unassign(jobId);
      // 90 steps * 1 000 = 90 000 > 81 000 left
      await expect(p.escrow.connect(p.coordinator).assign(jobId, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowBudgetShort")
        .withArgs(jobId, 90n * fx.PRICE.provider2, 81_000n);
    });

    it("assign: reverts with JobEscrowProviderInactive for an unregistered, zero or deactivated provider", async function () {
      const p = await openJob();
      for (const who of [p.stranger.address, fx.ethers.ZeroAddress]) {
        await expect(p.escrow.connect(p.coordinator).assign(p.jobId, who))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowProviderInactive")
          .withArgs(who);
      }
      await p.registry.connect(p.provider2).deactivate();
      await expect(p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowProviderInactive")
        .withArgs(p.provider2.address);
    });

    it("assign: reverts with JobEscrowPriceAboveMax when the provider's price exceeds the job's maximum", async function () {
      const p = await openJob();
      await expect(p.escrow.connect(p.coordinator).assign(p.jobId, p.provider3.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowPriceAboveMax")
        .withArgs(p.jobId, fx.PRICE.provider3, fx.DEFAULT_REQUEST.maxPricePerStep);
    });

    it("assign: reverts with JobEscrowNotCoordinator for anyone but the coordinator, even the owner", async function () {
      const p = await openJob();
      for (const who of [p.owner, p.provider1, p.client]) {
        await expect(p.escrow.connect(who).assign(p.jobId, p.provider1.address))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotCoordinator")
          .withArgs(who.address, p.coordinator.address);
      }
    });

    it("assign: reverts with JobEscrowUnexpectedStatus on a Running job and on a job that does not exist", async function () {
      const p = await runningJob();
      await expect(p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Running, fx.bits(fx.Status.Open));
      await expect(p.escrow.connect(p.coordinator).assign(99n, p.provider2.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(99n, fx.Status.None, fx.bits(fx.Status.Open));
    });
  });

  describe("unassign", function () {
    it("unassign: the coordinator reopens the job at any time, bumps the epoch; the pending checkpoint stays its reporter's", async function () {
      const p = await runningJob();
      await fx.reportAndAccept(p, p.jobId, p.provider1, 10);
      await p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 20, fx.ckpt(p.jobId, 20));
      await expect(p.escrow.connect(p.coordinator).unassign(p.jobId))
        .to.emit(p.escrow, "ProviderUnassigned")
        .withArgs(p.jobId, p.provider1.address, 2n, fx.Reason.Coordinator, p.coordinator.address);
      const job = await p.escrow.jobOf(p.jobId);
      expect(job.phase).to.equal(BigInt(fx.Status.Open));
      expect(job.provider).to.equal(fx.ethers.ZeroAddress);
      expect([job.pricePerStep, job.leaseExpiresAt]).to.deep.equal([0n, 0n]);
      expect([job.pendingStep, job.pendingHash, job.pendingProvider, job.pendingEpoch, job.pendingPrice]).to.deep.equal(
        [20n, fx.ckpt(p.jobId, 20), p.provider1.address, 1n, fx.PRICE.provider1],
      );
      expect([job.acceptedStep, job.paid]).to.deep.equal([10n, 10n * fx.PRICE.provider1]);
      expect(await p.escrow.isFenced(p.jobId, p.provider1.address)).to.equal(false);
    });

    it("unassign: anyone may unassign once the lease lapsed (reason LeaseLapsed, by the caller)", async function () {
      const p = await runningJob();
      const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
      await fx.networkHelpers.time.increaseTo(leaseExpiresAt + 1n);
      await expect(p.escrow.connect(p.stranger).unassign(p.jobId))
        .to.emit(p.escrow, "ProviderUnassigned")
        .withArgs(p.jobId, p.provider1.address, 2n, fx.Reason.LeaseLapsed, p.stranger.address);
    });

    it("unassign: reverts with JobEscrowLeaseActive for a non-coordinator while the lease runs", async function () {
      const p = await runningJob();
      const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
      await fx.networkHelpers.time.setNextBlockTimestamp(leaseExpiresAt);
      await expect(p.escrow.connect(p.client).unassign(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowLeaseActive")
        .withArgs(p.jobId, leaseExpiresAt, leaseExpiresAt);
      await fx.networkHelpers.mine();
    });

    it("unassign: reverts with JobEscrowUnexpectedStatus when the job is not Running", async function () {
      const p = await openJob();
      await expect(p.escrow.connect(p.coordinator).unassign(p.jobId))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Open, fx.bits(fx.Status.Running));
    });

    it("unassign: the old worker is fenced by epoch: stale epoch, then not the assignee after reassignment", async function () {
      const p = await runningJob();
      await p.escrow.connect(p.coordinator).unassign(p.jobId);
      await expect(p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 10, fx.ckpt(p.jobId, 10)))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowStaleEpoch")
        .withArgs(p.jobId, 1n, 2n);
      await expect(p.escrow.connect(p.provider1).heartbeat(p.jobId, 2n))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Open, fx.bits(fx.Status.Running));
      await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address);
      await expect(p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 3n, 10, fx.ckpt(p.jobId, 10)))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotAssignee")
        .withArgs(p.jobId, p.provider1.address, p.provider2.address);
    });
  });

  describe("heartbeat", function () {
    it("heartbeat: extends the lease to now + leaseDuration and emits LeaseExtended", async function () {
      const p = await runningJob();
      await fx.networkHelpers.time.increase(60);
      const tx = await p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n);
      const t = await fx.now();
      await expect(tx)
        .to.emit(p.escrow, "LeaseExtended")
        .withArgs(p.jobId, p.provider1.address, 1n, t + fx.LEASE);
      expect((await p.escrow.jobOf(p.jobId)).leaseExpiresAt).to.equal(t + fx.LEASE);
    });

    it("heartbeat: reverts with JobEscrowStaleEpoch, JobEscrowNotAssignee, JobEscrowLeaseLapsed as the case may be", async function () {
      const p = await runningJob();
      await expect(p.escrow.connect(p.provider1).heartbeat(p.jobId, 0n))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowStaleEpoch")
        .withArgs(p.jobId, 0n, 1n);
      await expect(p.escrow.connect(p.provider2).heartbeat(p.jobId, 1n))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotAssignee")
        .withArgs(p.jobId, p.provider2.address, p.provider1.address);
      const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
      await fx.networkHelpers.time.setNextBlockTimestamp(leaseExpiresAt + 1n);
      await expect(p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowLeaseLapsed")
        .withArgs(p.jobId, leaseExpiresAt, leaseExpiresAt + 1n);
      await fx.networkHelpers.mine();
    });
  });
});
