/**
 * No free tries: a provider with no accepted checkpoint yet is on probation, and every hold it ends without an
 * accepted checkpoint by its own failure — its lease lapsed, its checkpoint refused, or no progress for the job's
 * progress timeout before the coordinator took the job away — forfeits the lock it took for that hold to the job's
 * client. What is not the holder's failure never forfeits: the coordinator's unassignment inside the progress
 * timeout (the coordinator is not trusted with stake) and a report the verifiers left undecided. Its first
 * accepted checkpoint ends probation for good; after it a plain end costs nothing but the unaccepted work. A lapsed
 * report also ends the hold: its holder may not report or beat again in that epoch. Each case checks the money:
 * the client is credited exactly the lock, the stake loses exactly it, and the reserves still add up.
 */
import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

const { time } = fx.networkHelpers;

async function expectReservesBalanced(p: fx.Protocol) {
  const [held, owes] = await p.escrow.reserves();
  expect(held).to.equal(owes);
  const [regHeld, regOwes] = await p.registry.reserves();
  expect(regHeld).to.equal(regOwes);
}

/** The hold's end forfeits provider1's MIN_STAKE lock on `jobId` to the client, `how` saying why. */
async function expectForfeit(p: fx.Protocol, send: () => Promise<unknown>, jobId: bigint, how: number) {
  const before = await p.escrow.owed(p.client.address);
  const tx = send();
  await expect(tx).to.emit(p.escrow, "HoldForfeited").withArgs(jobId, p.provider1.address, fx.MIN_STAKE, how);
  await expect(tx).to.emit(p.registry, "StakeForfeited").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
  await expect(tx).to.not.emit(p.registry, "StakeReleased");
  expect((await p.escrow.owed(p.client.address)) - before).to.equal(fx.MIN_STAKE);
  const st = await p.registry.stakeOf(p.provider1.address);
  expect([st.deposited, st.locked]).to.deep.equal([fx.STAKE - fx.MIN_STAKE, 0n]);
  expect(await p.registry.lockOf(p.provider1.address, jobId)).to.equal(0n);
  await expectReservesBalanced(p);
  return tx;
}

describe("probation: a hold that ends without an accepted checkpoint costs a newcomer its lock", function () {
  it("a new provider is on probation; its first accepted checkpoint ends it once, for good", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    expect(await p.escrow.isProven(p.provider1.address)).to.equal(false);
    const jobId = await fx.startJob(p);
    const hash = fx.ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    const sigs = await fx.signDecision(p, jobId, 1n, 10, hash, true);
    await expect(p.escrow.acceptCheckpoint(jobId, 1n, 10, hash, sigs))
      .to.emit(p.escrow, "ProbationEnded")
      .withArgs(jobId, p.provider1.address);
    expect(await p.escrow.isProven(p.provider1.address)).to.equal(true);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, fx.ckpt(jobId, 20));
    const sigs2 = await fx.signDecision(p, jobId, 1n, 20, fx.ckpt(jobId, 20), true);
    await expect(p.escrow.acceptCheckpoint(jobId, 1n, 20, fx.ckpt(jobId, 20), sigs2)).to.not.emit(
      p.escrow,
      "ProbationEnded",
    );
  });

  for (const offset of [0n, 1n]) {
    const stalled = offset > 0n;
    it(`taken away by the coordinator at lastProgressAt + progressTimeout${stalled ? "+1" : ""}: ${stalled ? "no progress for the job's bound, the lock goes to the client (Unassigned)" : "the coordinator's choice, the lock comes back"}`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.startJob(p);
      const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(jobId);
      // Heartbeats keep the lease alive up to the instant tried (the coordinator may act while the lease runs).
      for (let t = lastProgressAt + 110n; t < lastProgressAt + progressTimeout; t += 110n) {
        await time.setNextBlockTimestamp(t);
        await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
      }
      await time.setNextBlockTimestamp(lastProgressAt + progressTimeout + offset);
      const unassign = () => p.escrow.connect(p.coordinator).unassign(jobId);
      if (stalled) return void (await expectForfeit(p, unassign, jobId, fx.HoldEnd.Unassigned));
      const tx = unassign();
      await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
      await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    });
  }

  for (const interval of [720, 721]) {
    const evidence = interval <= 720;
    it(`a lapsed lease on a job of interval ${interval} (MAX_CHECKPOINT_INTERVAL${evidence ? "" : " + 1"}): ${evidence ? "forfeited" : "no evidence (its progress timeout is capped), the lock comes back"}`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const request = { totalSteps: interval, checkpointInterval: interval, budget: BigInt(interval) * 1_000n };
      const jobId = await fx.startJob(p, request);
      const lock = await p.registry.lockOf(p.provider1.address, jobId);
      await time.setNextBlockTimestamp((await p.escrow.jobOf(jobId)).leaseExpiresAt + 1n);
      const tx = p.escrow.connect(p.stranger).unassign(jobId);
      if (evidence) await expect(tx).to.emit(p.escrow, "HoldForfeited").withArgs(jobId, p.provider1.address, lock, 1);
      else await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, lock);
    });
  }

  it("a coordinator that assigns and at once unassigns a newcomer (to harvest its lock for the client) moves nothing", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const before = await p.escrow.owed(p.client.address);
    for (let i = 0; i < 3; i++) await p.escrow.connect(p.coordinator).unassign(await fx.startJob(p));
    expect(await p.escrow.owed(p.client.address)).to.equal(before);
    expect((await p.registry.stakeOf(p.provider1.address)).deposited).to.equal(fx.STAKE);
  });

  it("a plain refusal (no fault) costs the newcomer its lock (Refused); a fault refusal still slashes", async function () {
    const p = await fx.pendingCheckpoint();
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, false);
    await expectForfeit(p, () => p.escrow.refuseCheckpoint(p.jobId, 1n, 10, p.hash, sigs), p.jobId, fx.HoldEnd.Refused);

    const other = await fx.startJob(p);
    const hash = fx.ckpt(other, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(other, 1n, 10, hash);
    const fault = fx.faultAt(p, 7);
    const tx = p.escrow.refuseWithFault(other, 1n, 10, hash, fault, await fx.signFault(p, other, 1n, 10, hash, fault));
    await expect(tx).to.emit(p.escrow, "ProviderSlashed");
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    await expectReservesBalanced(p);
  });

  it("a reporter taken away with its checkpoint pending keeps its lock; acceptance returns it (no forfeit)", async function () {
    const p = await fx.pendingCheckpoint();
    await expect(p.escrow.connect(p.coordinator).unassign(p.jobId)).to.not.emit(p.escrow, "HoldForfeited");
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
    const tx = p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs);
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, p.jobId, fx.MIN_STAKE);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
  });

  it("a checkpoint lapsed after its reporter left (the verifiers never decided) is dropped by the next assignment: its lock comes back", async function () {
    const p = await fx.pendingCheckpoint();
    await p.escrow.connect(p.coordinator).unassign(p.jobId);
    const { reportedAt } = await p.escrow.jobOf(p.jobId);
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    const tx = p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address);
    await expect(tx).to.emit(p.escrow, "CheckpointLapsed").withArgs(p.jobId, p.provider1.address, 1n, 10, p.hash);
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, p.jobId, fx.MIN_STAKE);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
  });

  for (const offset of [-1n, 0n, 1n]) {
    const lapsed = offset > 0n;
    it(`the holder's own report at reportedAt + DECISION_TIMEOUT${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: a second report ${lapsed ? "reverts with JobEscrowReportLapsed (the hold is over)" : "reverts with JobEscrowCheckpointPending"}`, async function () {
      const p = await fx.pendingCheckpoint();
      const { reportedAt } = await p.escrow.jobOf(p.jobId);
      // Keep the lease alive (a heartbeat every 110 s) up to the instant tried.
      const t = reportedAt + fx.DECISION_TIMEOUT + offset;
      for (let s = reportedAt + 110n; s < t; s += 110n) {
        await time.setNextBlockTimestamp(s);
        await p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n);
      }
      await time.setNextBlockTimestamp(t);
      const again = p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 10, p.hash);
      if (lapsed)
        await expect(again).to.be.revertedWithCustomError(p.escrow, "JobEscrowReportLapsed").withArgs(p.jobId, 1n, 10);
      else await expect(again).to.be.revertedWithCustomError(p.escrow, "JobEscrowCheckpointPending");
    });
  }

  it("a report lapsed in the holder's own epoch ends the hold; its lease then lapses, and its lock still comes back (not its failure)", async function () {
    const p = await fx.pendingCheckpoint();
    const { reportedAt, leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
    const after = reportedAt + fx.DECISION_TIMEOUT + 1n;
    expect(after > leaseExpiresAt).to.equal(true);
    await time.setNextBlockTimestamp(after);
    const tx = p.escrow.connect(p.stranger).unassign(p.jobId);
    await expect(tx).to.emit(p.escrow, "CheckpointLapsed");
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, p.jobId, fx.MIN_STAKE);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
  });

  it("after probation an honest end costs nothing: a lapsed lease, a plain refusal return the lock", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await fx.proveProvider(p);
    const away = await fx.startJob(p);
    await time.setNextBlockTimestamp((await p.escrow.jobOf(away)).leaseExpiresAt + 1n);
    await expect(p.escrow.connect(p.stranger).unassign(away))
      .to.emit(p.registry, "StakeReleased")
      .withArgs(p.provider1.address, away, fx.MIN_STAKE);
    const refused = await fx.startJob(p);
    const hash = fx.ckpt(refused, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(refused, 1n, 10, hash);
    const sigs = await fx.signDecision(p, refused, 1n, 10, hash, false);
    const tx = p.escrow.refuseCheckpoint(refused, 1n, 10, hash, sigs);
    await expect(tx).to.emit(p.registry, "StakeReleased");
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    expect((await p.registry.stakeOf(p.provider1.address)).deposited).to.equal(fx.STAKE);
  });

  it("the verdict never forfeits: the last holder's lock comes back", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const { jobId } = await fx.runToVerdict(p);
    expect(await p.registry.lockOf(p.provider1.address, jobId)).to.equal(0n);
    expect((await p.registry.stakeOf(p.provider1.address)).deposited).to.equal(fx.STAKE);
  });

  it("N fresh identities each letting a hold lapse cost the attacker N locks, all paid to the delayed client", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.createJob(p, { maxPricePerStep: 1_100n, budget: 110_000n });
    const before = await p.escrow.owed(p.client.address);
    const identities = [p.provider1, p.provider2, p.provider3];
    for (const who of identities) {
      await p.escrow.connect(p.coordinator).assign(jobId, who.address);
      await time.setNextBlockTimestamp((await p.escrow.jobOf(jobId)).leaseExpiresAt + 1n);
      await p.escrow.connect(p.stranger).unassign(jobId);
    }
    const locks = await Promise.all(
      identities.map(async (w) => fx.STAKE - (await p.registry.stakeOf(w.address)).deposited),
    );
    expect(locks.every((l) => l >= fx.MIN_STAKE)).to.equal(true);
    expect((await p.escrow.owed(p.client.address)) - before).to.equal(locks.reduce((a, b) => a + b, 0n));
    await expectReservesBalanced(p);
  });
});
