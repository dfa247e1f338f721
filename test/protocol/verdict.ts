import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

async function trainedJob() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  const jobId = await fx.createJob(p, { totalSteps: 20 });
  const modelHash = await fx.trainToEnd(p, jobId);
  return { ...p, jobId, modelHash };
}

describe("JobEscrow: verdict", function () {
  it("submitVerdict: opens the dispute window, stores the verdict and bumps the epoch so the provider is fenced", async function () {
    const p = await trainedJob();
    const { escrow, jobId, modelHash } = p;
    const tx = await escrow
      .connect(p.stranger)
      .submitVerdict(jobId, modelHash, fx.METRIC, true, await fx.signVerdict(p, jobId, modelHash, fx.METRIC, true));
    const t = await fx.now();
    await expect(tx)
      .to.emit(escrow, "VerdictSubmitted")
      .withArgs(jobId, modelHash, fx.METRIC, true, t + 3_600n, 2n);
    expect(await escrow.statusOf(jobId)).to.equal(BigInt(fx.Status.DisputeWindow));
    const v = await escrow.verdictOf(jobId);
    expect([v.modelHash, v.metric, v.passed, v.submittedAt]).to.deep.equal([modelHash, fx.METRIC, true, t]);
    expect((await escrow.jobOf(jobId)).epoch).to.equal(2n);
    await expect(escrow.connect(p.provider1).heartbeat(jobId, 1n))
      .to.be.revertedWithCustomError(escrow, "JobEscrowStaleEpoch")
      .withArgs(jobId, 1n, 2n);
    await expect(escrow.connect(p.provider1).heartbeat(jobId, 2n))
      .to.be.revertedWithCustomError(escrow, "JobEscrowUnexpectedStatus")
      .withArgs(jobId, fx.Status.DisputeWindow, fx.bits(fx.Status.Running));
  });

  it("submitVerdict: also works on an Open job whose provider's lease lapsed after the final acceptance", async function () {
    const p = await trainedJob();
    await fx.networkHelpers.time.increase(121);
    await p.escrow.connect(p.stranger).unassign(p.jobId);
    expect(await p.escrow.statusOf(p.jobId)).to.equal(BigInt(fx.Status.Open));
    await expect(
      p.escrow.submitVerdict(p.jobId, p.modelHash, 1n, false, await fx.signVerdict(p, p.jobId, p.modelHash, 1n, false)),
    ).to.emit(p.escrow, "VerdictSubmitted");
    expect((await p.escrow.jobOf(p.jobId)).epoch).to.equal(3n);
  });

  it("submitVerdict: a failing verdict still pays the accepted steps at settlement (only accepted work is paid)", async function () {
    const p = await trainedJob();
    await p.escrow.submitVerdict(
      p.jobId,
      p.modelHash,
      10n,
      false,
      await fx.signVerdict(p, p.jobId, p.modelHash, 10n, false),
    );
    await fx.networkHelpers.time.increase(3_601);
    await expect(p.escrow.settle(p.jobId))
      .to.emit(p.escrow, "JobSettled")
      .withArgs(p.jobId, 100_000n - 18_000n, 18_000n, 0n, 0n);
  });

  it("submitVerdict: reverts with JobEscrowTrainingIncomplete before the last step is accepted", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p, { totalSteps: 20 });
    const h = await fx.reportAndAccept(p, jobId, p.provider1, 10);
    await expect(p.escrow.submitVerdict(jobId, h, fx.METRIC, true, await fx.signVerdict(p, jobId, h, fx.METRIC, true)))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowTrainingIncomplete")
      .withArgs(jobId, 10, 20);
  });

  it("submitVerdict: reverts with JobEscrowVerdictHashMismatch when the model is not the final accepted checkpoint", async function () {
    const p = await trainedJob();
    const other = fx.ckpt(p.jobId, 20, "other");
    await expect(
      p.escrow.submitVerdict(p.jobId, other, fx.METRIC, true, await fx.signVerdict(p, p.jobId, other, fx.METRIC, true)),
    )
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowVerdictHashMismatch")
      .withArgs(p.jobId, other, p.modelHash);
  });

  it("submitVerdict: reverts with JobEscrowInvalidVerifierSignatures when the signed metric or outcome differs", async function () {
    const p = await trainedJob();
    const sigs = await fx.signVerdict(p, p.jobId, p.modelHash, fx.METRIC, true);
    const digestFail = await p.escrow.verdictDigest(p.jobId, p.modelHash, fx.METRIC, false);
    await expect(p.escrow.submitVerdict(p.jobId, p.modelHash, fx.METRIC, false, sigs))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
      .withArgs(digestFail);
    const digestMetric = await p.escrow.verdictDigest(p.jobId, p.modelHash, fx.METRIC + 1n, true);
    await expect(p.escrow.submitVerdict(p.jobId, p.modelHash, fx.METRIC + 1n, true, sigs))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
      .withArgs(digestMetric);
  });

  it("submitVerdict: reverts with JobEscrowUnexpectedStatus when submitted twice or on a cancelled job", async function () {
    const p = await trainedJob();
    const sigs = await fx.signVerdict(p, p.jobId, p.modelHash, fx.METRIC, true);
    await p.escrow.submitVerdict(p.jobId, p.modelHash, fx.METRIC, true, sigs);
    await expect(p.escrow.submitVerdict(p.jobId, p.modelHash, fx.METRIC, true, sigs))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
      .withArgs(p.jobId, fx.Status.DisputeWindow, fx.bits(fx.Status.Open, fx.Status.Running));
    const cancelled = await fx.createJob(p);
    await p.escrow.connect(p.client).cancel(cancelled);
    await expect(p.escrow.submitVerdict(cancelled, p.modelHash, fx.METRIC, true, sigs))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
      .withArgs(cancelled, fx.Status.Cancelled, fx.bits(fx.Status.Open, fx.Status.Running));
  });
});
