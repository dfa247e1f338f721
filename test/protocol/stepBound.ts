/**
 * A template's step bound: the slowest an honest step of it may take, set by the owner. A job takes its template's
 * bound at creation, and its progress timeout is checkpointInterval × the bound (rounded up to a second, at least
 * one lease, at most PROGRESS_TIMEOUT). It is the on-chain measure of "no progress" that prices a newcomer's
 * stalled hold, so the coordinator need not be trusted with stake to take a job from a newcomer that beats
 * without training: past the job's own timeout the take-away forfeits the lock; inside it, it moves nothing.
 */
import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

const { time } = fx.networkHelpers;
const MAX_MILLIS = 30_000n; // MAX_SECONDS_PER_STEP × 1000

describe("template step bound: the job's own measure of no progress", function () {
  it("only the owner sets it; it must lie in [1, MAX_SECONDS_PER_STEP × 1000] ms; the default is the maximum", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    expect(await p.escrow.templateStepBound(fx.TEMPLATE)).to.equal(MAX_MILLIS);
    await expect(p.escrow.connect(p.stranger).setTemplateStepBound(fx.TEMPLATE, 100))
      .to.be.revertedWithCustomError(p.escrow, "OwnableUnauthorizedAccount")
      .withArgs(p.stranger.address);
    for (const bad of [0n, MAX_MILLIS + 1n]) {
      await expect(p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, bad))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidStepBound")
        .withArgs(fx.TEMPLATE, bad, MAX_MILLIS);
    }
    await expect(p.escrow.connect(p.owner).setTemplateStepBound(fx.ethers.ZeroHash, 100)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowZeroTemplate",
    );
    for (const good of [1n, MAX_MILLIS]) {
      await expect(p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, good))
        .to.emit(p.escrow, "TemplateStepBoundSet")
        .withArgs(fx.TEMPLATE, good);
      expect(await p.escrow.templateStepBound(fx.TEMPLATE)).to.equal(good);
    }
  });

  it("a bound set before any approval gives the template its record; approving it later keeps the bound", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const other = fx.ethers.id("gpuchain/template/other/v1");
    await p.escrow.connect(p.owner).setTemplateStepBound(other, 2_000);
    expect(await p.escrow.isApprovedTemplate(other)).to.equal(false);
    await p.escrow.connect(p.owner).setTemplateApproval(other, true);
    expect(await p.escrow.templateStepBound(other)).to.equal(2_000n);
    const jobId = await fx.createJob(p, { templateId: other, totalSteps: 100, checkpointInterval: 100 });
    expect((await p.escrow.jobOf(jobId)).templateId).to.equal(other);
    expect((await p.escrow.jobOf(jobId)).progressTimeout).to.equal(200n);
  });

  // interval 10 at the fixture's lease of 120 s: below 12,000 ms a step the lease is the floor.
  for (const [millis, interval, timeout] of [
    [20_000n, 10, 200n], // 10 × 20 s
    [12_001n, 10, 121n], // 120.01 s rounds up to the next second
    [12_000n, 10, 120n], // exactly the lease
    [1_000n, 10, fx.LEASE], // 10 s: the lease is the floor
    [1_000n, 21_601, 6n * 3600n], // 21,601 s: capped at PROGRESS_TIMEOUT
  ] as const) {
    it(`a job of interval ${interval} at ${millis} ms a step has a progress timeout of ${timeout} s`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, millis);
      const request = { totalSteps: interval, checkpointInterval: interval, budget: BigInt(interval) * 1_000n };
      const jobId = await fx.createJob(p, request);
      expect((await p.escrow.jobOf(jobId)).progressTimeout).to.equal(timeout);
    });
  }

  it("a job keeps the bound it was created with when the owner changes the template's bound", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const before = await fx.createJob(p);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
    const after = await fx.createJob(p);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 20_000);
    expect((await p.escrow.jobOf(before)).progressTimeout).to.equal(300n); // 10 × 30 s, the default
    expect((await p.escrow.jobOf(after)).progressTimeout).to.equal(150n); // 10 × 15 s
  });

  // The newcomer beats but never reports; the coordinator takes the job away at the job's own timeout.
  for (const offset of [-1n, 0n, 1n]) {
    const stalled = offset > 0n;
    it(`a newcomer beating without a report, taken away at lastProgressAt + progressTimeout${offset === 0n ? "" : offset < 0n ? "-1" : "+1"} under a 15 s step bound: ${stalled ? "forfeited to the client" : "released"}`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
      const jobId = await fx.startJob(p);
      const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(jobId);
      expect(progressTimeout).to.equal(150n);
      await time.setNextBlockTimestamp(lastProgressAt + 100n);
      await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
      const before = await p.escrow.owed(p.client.address);
      await time.setNextBlockTimestamp(lastProgressAt + progressTimeout + offset);
      const tx = p.escrow.connect(p.coordinator).unassign(jobId);
      if (stalled) {
        await expect(tx)
          .to.emit(p.escrow, "HoldForfeited")
          .withArgs(jobId, p.provider1.address, fx.MIN_STAKE, fx.HoldEnd.Unassigned);
        expect((await p.escrow.owed(p.client.address)) - before).to.equal(fx.MIN_STAKE);
      } else {
        await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
        await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
      }
    });
  }

  it("its heartbeat past the job's own timeout reverts JobEscrowNoProgress (the lease then lapses: forfeited)", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
    const jobId = await fx.startJob(p);
    const { lastProgressAt } = await p.escrow.jobOf(jobId);
    await time.setNextBlockTimestamp(lastProgressAt + 100n);
    await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
    await time.setNextBlockTimestamp(lastProgressAt + 150n);
    await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
    await time.setNextBlockTimestamp(lastProgressAt + 151n);
    await expect(p.escrow.connect(p.provider1).heartbeat(jobId, 1n))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoProgress")
      .withArgs(jobId, lastProgressAt, lastProgressAt + 151n);
  });

  // At 10 s a step the timeout is uncapped up to 2,160 steps (6 h): past it a lapse is no evidence.
  for (const interval of [2_160, 2_161]) {
    const evidence = interval <= 2_160;
    it(`a lapsed lease on a job of interval ${interval} at 10 s a step: ${evidence ? "forfeited" : "capped timeout, no evidence: released"}`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 10_000);
      const request = { totalSteps: interval, checkpointInterval: interval, budget: BigInt(interval) * 1_000n };
      const jobId = await fx.startJob(p, request);
      const lock = await p.registry.lockOf(p.provider1.address, jobId);
      await time.setNextBlockTimestamp((await p.escrow.jobOf(jobId)).leaseExpiresAt + 1n);
      const tx = p.escrow.connect(p.stranger).unassign(jobId);
      if (evidence) {
        await expect(tx)
          .to.emit(p.escrow, "HoldForfeited")
          .withArgs(jobId, p.provider1.address, lock, fx.HoldEnd.LeaseLapsed);
      } else await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, lock);
    });
  }
});
