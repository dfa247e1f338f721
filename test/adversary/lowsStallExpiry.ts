/**
 * `expire()` needed STALL_EXPIRY (7 days) continuously Open: a job bounced Running ↔ Open
 * (assigned, then unassigned without an accepted checkpoint, again and again) restarted the clock at every
 * reopening, so it never expired and the accepted earnings on it stayed locked. Now the stall clock
 * (`Job.stallSince`) restarts only on real progress, the job's creation and each acceptance (Open or Running);
 * `expire` still needs the job Open, so a Running job past the clock is expirable the moment it is reopened.
 * The real escrow on Hardhat's simulated chain; every window at t−1, t and t+1.
 */
import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

const DAY = 86_400n;
const STALL_EXPIRY = 7n * DAY;
const { time } = fx.networkHelpers;

/** provider1 earned 10 steps (9 000) at `acceptedAt`; the job is Running on provider1 again afterwards. */
async function acceptedThenHeld() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  // Both holders past probation: sixty holds ended without an acceptance would otherwise forfeit provider2's stake.
  await fx.proveProvider(p, p.provider2);
  const jobId = await fx.startJob(p);
  await fx.reportAndAccept(p, jobId, p.provider1, 10);
  const acceptedAt = await fx.now();
  return { ...p, jobId, acceptedAt };
}

/**
 * The bounce: the job changes hands every `every` seconds until `until`, never with an accepted checkpoint —
 * by the coordinator, and by anyone once a silent holder's lease has lapsed — and ends Open at `until`.
 */
async function bounceUntil(p: Awaited<ReturnType<typeof acceptedThenHeld>>, until: bigint, every: bigint) {
  const holders = [p.provider2, p.provider1]; // provider3 asks more than the job's maximum
  let round = 0;
  for (;;) {
    const next = (await fx.now()) + every;
    if (next >= until) break;
    await time.setNextBlockTimestamp(next);
    if (round % 2 === 0) await p.escrow.connect(p.coordinator).unassign(p.jobId);
    else await p.escrow.connect(p.stranger).unassign(p.jobId); // the silent holder's lease lapsed long ago
    await p.escrow.connect(p.coordinator).assign(p.jobId, holders[round % holders.length].address);
    round += 1;
  }
  await time.setNextBlockTimestamp(until);
  await p.escrow.connect(p.coordinator).unassign(p.jobId);
  expect(Number(await p.escrow.statusOf(p.jobId))).to.equal(fx.Status.Open);
  return round;
}

describe("adversary: a job bounced Running ↔ Open without an acceptance still expires", function () {
  it("bounced for 30 days, reopened the last time a minute ago: anyone expires it, earnings are claimable", async function () {
    const p = await acceptedThenHeld();
    const rounds = await bounceUntil(p, p.acceptedAt + 30n * DAY, DAY / 2n);
    expect(rounds).to.be.greaterThan(50);
    await time.increase(60);
    const tx = p.escrow.connect(p.stranger).expire(p.jobId);
    await expect(tx)
      .to.emit(p.escrow, "JobExpired")
      .withArgs(p.jobId, 100_000n - 9_000n, p.stranger.address);
    await expect(tx)
      .to.emit(p.escrow, "JobCancelled")
      .withArgs(p.jobId, 100_000n - 9_000n);
    await expect(p.escrow.connect(p.stranger).claimEarnings(p.jobId, p.provider1.address))
      .to.emit(p.escrow, "EarningsReleased")
      .withArgs(p.jobId, p.provider1.address, 9_000n);
  });

  for (const offset of [-1n, 0n, 1n]) {
    const expirable = offset > 0n;
    it(`bounced, then expire at lastAcceptance + STALL_EXPIRY${offset < 0n ? "−1" : offset > 0n ? "+1" : ""}: ${expirable ? "succeeds" : "JobEscrowNotExpired"}`, async function () {
      const p = await acceptedThenHeld();
      const expiresAt = p.acceptedAt + STALL_EXPIRY;
      // Reopened 10 s before the boundary being probed: the last reopening must not restart anything.
      await bounceUntil(p, expiresAt + offset - 10n, DAY / 3n);
      await fx.expectExpireAt(p, expiresAt, offset);
    });
  }

  it("no acceptance at all: the clock runs from the job's creation, however often it was assigned", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.createJob(p);
    const createdAt = await fx.now();
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    const q = { ...p, jobId, acceptedAt: createdAt };
    await bounceUntil(q, createdAt + STALL_EXPIRY - 5n, DAY);
    await fx.expectExpireAt(q, createdAt + STALL_EXPIRY, 0n);
    await time.setNextBlockTimestamp(createdAt + STALL_EXPIRY + 1n);
    await expect(p.escrow.connect(p.stranger).expire(jobId))
      .to.emit(p.escrow, "JobExpired")
      .withArgs(jobId, 100_000n, p.stranger.address);
  });

  it("an acceptance while Running restarts the clock (t−1, t, t+1 from it); reopening after it does not", async function () {
    const p = await acceptedThenHeld();
    await bounceUntil(p, p.acceptedAt + 6n * DAY, DAY); // six days of bouncing, then real progress
    await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider1.address);
    await fx.reportAndAccept(p, p.jobId, p.provider1, 20);
    const acceptedAt = await fx.now();
    expect((await p.escrow.jobOf(p.jobId)).stallSince).to.equal(acceptedAt);
    await bounceUntil({ ...p, acceptedAt }, acceptedAt + STALL_EXPIRY - 3n, DAY);
    for (const offset of [-1n, 0n]) await fx.expectExpireAt(p, acceptedAt + STALL_EXPIRY, offset);
    await time.setNextBlockTimestamp(acceptedAt + STALL_EXPIRY + 1n);
    await expect(p.escrow.connect(p.stranger).expire(p.jobId))
      .to.emit(p.escrow, "JobExpired")
      .withArgs(p.jobId, 100_000n - 18_000n, p.stranger.address);
  });

  it("Running past the clock is not expired; once its lease lapses anyone unassigns and expires it at once", async function () {
    const p = await acceptedThenHeld();
    await bounceUntil(p, p.acceptedAt + 8n * DAY, DAY);
    await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address);
    await expect(p.escrow.connect(p.stranger).expire(p.jobId))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
      .withArgs(p.jobId, fx.Status.Running, fx.bits(fx.Status.Open));
    const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
    await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
    await p.escrow.connect(p.stranger).unassign(p.jobId);
    await expect(p.escrow.connect(p.stranger).expire(p.jobId)).to.emit(p.escrow, "JobExpired");
  });
});
