import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

async function runningJob(overrides = {}) {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  return { ...p, jobId: await fx.startJob(p, overrides) };
}

describe("JobEscrow: report, accept, refuse", function () {
  describe("reportCheckpoint", function () {
    it("reportCheckpoint: records the pending checkpoint, extends the lease and emits CheckpointReported", async function () {
      const { escrow, provider1, jobId } = await runningJob();
      await fx.networkHelpers.time.increase(30);
      const h = fx.ckpt(jobId, 10);
      const tx = await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 10, h);
      await expect(tx).to.emit(escrow, "CheckpointReported").withArgs(jobId, provider1.address, 1n, 10, h);
      const job = await escrow.jobOf(jobId);
      expect([job.pendingStep, job.pendingHash]).to.deep.equal([10n, h]);
      expect(job.leaseExpiresAt).to.equal((await fx.now()) + fx.LEASE);
      expect(job.acceptedStep).to.equal(0n);
    });

    it("reportCheckpoint: any step in (acceptedStep, acceptedStep + interval] is allowed; the last interval is capped at totalSteps", async function () {
      const p = await runningJob({ totalSteps: 25, checkpointInterval: 10 });
      await fx.reportAndAccept(p, p.jobId, p.provider1, 3);
      await fx.reportAndAccept(p, p.jobId, p.provider1, 13);
      await fx.reportAndAccept(p, p.jobId, p.provider1, 20);
      await expect(p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 26, fx.ckpt(p.jobId, 26)))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidStep")
        .withArgs(p.jobId, 26, 20, 25);
      await fx.reportAndAccept(p, p.jobId, p.provider1, 25);
      expect((await p.escrow.jobOf(p.jobId)).acceptedStep).to.equal(25n);
    });

    it("reportCheckpoint: does not overflow when acceptedStep + interval exceeds uint32 (regression)", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.registry.connect(p.provider4).register("bulk", 1n, 0, "cpu", 1);
      await fx.depositStake(p, p.provider4, 4_000_000_000n);
      const total = 4_000_000_000;
      const jobId = await fx.startJob(
        p,
        { totalSteps: total, checkpointInterval: 3_000_000_000, maxPricePerStep: 1n, budget: BigInt(total) },
        p.provider4,
      );
      await fx.reportAndAccept(p, jobId, p.provider4, 3_000_000_000);
      // 3e9 + 3e9 > 2^32 - 1: before the fix this reverted with panic 0x11 and the job could never finish.
      await expect(p.escrow.connect(p.provider4).reportCheckpoint(jobId, 1n, total + 1, fx.ckpt(jobId, 1)))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidStep")
        .withArgs(jobId, total + 1, 3_000_000_000, total);
      await fx.reportAndAccept(p, jobId, p.provider4, total);
      expect((await p.escrow.jobOf(jobId)).paid).to.equal(BigInt(total));
    });

    it("reportCheckpoint: reverts with JobEscrowCheckpointPending while a checkpoint awaits a decision", async function () {
      const { escrow, provider1, jobId } = await runningJob();
      await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 10, fx.ckpt(jobId, 10));
      await expect(escrow.connect(provider1).reportCheckpoint(jobId, 1n, 5, fx.ckpt(jobId, 5)))
        .to.be.revertedWithCustomError(escrow, "JobEscrowCheckpointPending")
        .withArgs(jobId, 10);
    });

    it("reportCheckpoint: reverts with JobEscrowInvalidStep for a step at or below the accepted one or too far ahead", async function () {
      const p = await runningJob();
      await fx.reportAndAccept(p, p.jobId, p.provider1, 10);
      for (const step of [0, 9, 10, 21]) {
        await expect(p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, step, fx.ckpt(p.jobId, step)))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidStep")
          .withArgs(p.jobId, step, 10, 20);
      }
    });

    it("reportCheckpoint: reverts with JobEscrowZeroHash for an empty checkpoint hash", async function () {
      const { escrow, provider1, jobId } = await runningJob();
      await expect(escrow.connect(provider1).reportCheckpoint(jobId, 1n, 10, fx.ethers.ZeroHash))
        .to.be.revertedWithCustomError(escrow, "JobEscrowZeroHash")
        .withArgs(jobId);
    });
  });

  describe("acceptCheckpoint", function () {
    it("acceptCheckpoint: credits (step - acceptedStep) * price to the assignee, moves the accepted step, keeps tokens in place", async function () {
      const p = await runningJob();
      const { escrow, provider1, jobId } = p;
      const h = fx.ckpt(jobId, 7);
      await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 7, h);
      const reservesBefore = await escrow.reserves();
      const sigs = await fx.signDecision(p, jobId, 1n, 7, h, true);
      const tx = await escrow.connect(p.stranger).acceptCheckpoint(jobId, 1n, 7, h, sigs);
      await expect(tx)
        .to.emit(escrow, "CheckpointAccepted")
        .withArgs(jobId, provider1.address, 1n, 7, h, 7, 7n * fx.PRICE.provider1);
      const job = await escrow.jobOf(jobId);
      expect([job.acceptedStep, job.acceptedHash, job.pendingStep, job.pendingHash]).to.deep.equal([
        7n,
        h,
        0n,
        fx.ethers.ZeroHash,
      ]);
      expect(job.paid).to.equal(7n * fx.PRICE.provider1);
      expect(job.leaseExpiresAt).to.equal((await fx.now()) + fx.LEASE);
      expect(await escrow.earningsOf(jobId, provider1.address)).to.equal(7n * fx.PRICE.provider1);
      expect(await escrow.reserves()).to.deep.equal(reservesBefore);
      expect(await escrow.owed(provider1.address)).to.equal(0n); // claimable only after settlement
    });

    it("acceptCheckpoint: reverts with JobEscrowNoSuchPendingCheckpoint when nothing is pending or any field differs", async function () {
      const p = await runningJob();
      const { escrow, provider1, jobId } = p;
      const h = fx.ckpt(jobId, 10);
      const sigs = await fx.signDecision(p, jobId, 1n, 10, h, true);
      await expect(escrow.acceptCheckpoint(jobId, 1n, 10, h, sigs))
        .to.be.revertedWithCustomError(escrow, "JobEscrowNoSuchPendingCheckpoint")
        .withArgs(jobId, 1n, 10, h);
      await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 10, h);
      for (const [epoch, step, hash] of [
        [2n, 10, h],
        [1n, 9, h],
        [1n, 10, fx.ckpt(jobId, 10, "x")],
      ] as const) {
        await expect(escrow.acceptCheckpoint(jobId, epoch, step, hash, sigs))
          .to.be.revertedWithCustomError(escrow, "JobEscrowNoSuchPendingCheckpoint")
          .withArgs(jobId, epoch, step, hash);
      }
    });

    it("acceptCheckpoint: reverts with JobEscrowUnexpectedStatus when the job is final (Cancelled)", async function () {
      const p = await runningJob();
      await p.escrow.connect(p.coordinator).unassign(p.jobId);
      await p.escrow.connect(p.client).cancel(p.jobId);
      const h = fx.ckpt(p.jobId, 10);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, h, await fx.signDecision(p, p.jobId, 1n, 10, h, true)))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
        .withArgs(p.jobId, fx.Status.Cancelled, fx.bits(fx.Status.Open, fx.Status.Running));
    });
  });

  describe("refuseCheckpoint", function () {
    it("refuseCheckpoint: fences the assignee, reopens the job from the last accepted checkpoint, credits nothing", async function () {
      const p = await runningJob();
      const { escrow, provider1, jobId } = p;
      const h10 = await fx.reportAndAccept(p, jobId, provider1, 10);
      const bad = fx.ckpt(jobId, 20, "corrupted");
      await escrow.connect(provider1).reportCheckpoint(jobId, 1n, 20, bad);
      const tx = await escrow
        .connect(p.stranger)
        .refuseCheckpoint(jobId, 1n, 20, bad, await fx.signDecision(p, jobId, 1n, 20, bad, false));
      await expect(tx).to.emit(escrow, "CheckpointRefused").withArgs(jobId, provider1.address, 1n, 20, bad);
      await expect(tx)
        .to.emit(escrow, "ProviderUnassigned")
        .withArgs(jobId, provider1.address, 2n, fx.Reason.Refused, p.stranger.address);
      const job = await escrow.jobOf(jobId);
      expect(job.phase).to.equal(BigInt(fx.Status.Open));
      expect([job.acceptedStep, job.acceptedHash, job.paid]).to.deep.equal([10n, h10, 10n * fx.PRICE.provider1]);
      expect(await escrow.isFenced(jobId, provider1.address)).to.equal(true);
      await expect(escrow.connect(p.coordinator).assign(jobId, provider1.address))
        .to.be.revertedWithCustomError(escrow, "JobEscrowProviderFenced")
        .withArgs(jobId, provider1.address);
      await expect(escrow.connect(p.coordinator).assign(jobId, p.provider2.address))
        .to.emit(escrow, "ProviderAssigned")
        .withArgs(jobId, p.provider2.address, 3n, fx.PRICE.provider2, 10, h10, (await fx.now()) + 1n + fx.LEASE);
    });

    it("refuseCheckpoint: a provider fenced on one job may still be assigned other jobs", async function () {
      const p = await runningJob();
      const bad = fx.ckpt(p.jobId, 10, "bad");
      await p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 10, bad);
      await p.escrow.refuseCheckpoint(p.jobId, 1n, 10, bad, await fx.signDecision(p, p.jobId, 1n, 10, bad, false));
      const other = await fx.startJob(p);
      expect(await p.escrow.isFenced(other, p.provider1.address)).to.equal(false);
      expect((await p.escrow.jobOf(other)).provider).to.equal(p.provider1.address);
    });
  });
});
