/**
 * "Break this": the priced newcomer (e37aca8, 9bb968f). A template's step bound gives each job its own progress
 * timeout; a provider on probation whose hold ends by its own failure forfeits its lock to the client, and the
 * coordinator (priced mode) takes a newcomer away only once the contract prices it. Each attack against the real
 * contract (Hardhat chain) or the real coordinator decisions (pure).
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import * as fx from "../helpers/fixture.ts";
import { decideRunning, type CoordinatorJob, type CoordinatorView } from "../../keepers/coordinator/decide.ts";
import { projectedChainTime } from "../../keepers/coordinator/tick.ts";

const { time } = fx.networkHelpers;

/**
 * A proven provider2 reports step 10 of a job and is taken away (its checkpoint stays decidable); the newcomer
 * provider1 is assigned while that checkpoint waits. Step bound 15 s, interval 10: progressTimeout 150 s. The
 * newcomer beats honestly all the while, but cannot report: reportCheckpoint reverts CheckpointPending.
 */
async function newcomerBehindPending() {
  const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
  await fx.proveProvider(p, p.provider2);
  await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
  const jobId = await fx.startJob(p, {}, p.provider2);
  const { epoch } = await p.escrow.jobOf(jobId);
  const hash = fx.ckpt(jobId, 10, ":p2");
  await p.escrow.connect(p.provider2).reportCheckpoint(jobId, epoch, 10, hash);
  await p.escrow.connect(p.coordinator).unassign(jobId);
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  const job = await p.escrow.jobOf(jobId);
  expect(job.progressTimeout).to.equal(150n);
  expect(await p.escrow.isProven(p.provider1.address)).to.equal(false);
  // It trained its interval within the bound and tries to report: blocked by the other provider's checkpoint.
  await expect(
    p.escrow.connect(p.provider1).reportCheckpoint(jobId, job.epoch, 10, fx.ckpt(jobId, 10, ":p1")),
  ).to.be.revertedWithCustomError(p.escrow, "JobEscrowCheckpointPending");
  // It keeps beating while the verifiers take their time (allowed: the checkpoint is decidable).
  for (let t = job.lastProgressAt + 100n; t < job.reportedAt + fx.DECISION_TIMEOUT; t += 100n) {
    await time.setNextBlockTimestamp(t);
    await p.escrow.connect(p.provider1).heartbeat(jobId, job.epoch);
  }
  return { p, jobId, job, hash, epoch2: epoch };
}

describe("break the priced newcomer", function () {
  // FIXED (contracts/JobEscrow.sol `_stalledAfter`, `_refuse`): the progress clock ran while another provider's
  // checkpoint was decidable, so an honest newcomer assigned behind it was past its bound the moment the
  // checkpoint lapsed undecided, and the coordinator's take-away forfeited its lock.
  it("an honest newcomer blocked by another's pending checkpoint that lapses undecided keeps its lock when taken away right after", async function () {
    const { p, jobId, job } = await newcomerBehindPending();
    const lapse = job.reportedAt + fx.DECISION_TIMEOUT;
    await time.setNextBlockTimestamp(lapse + 1n);
    const tx = p.escrow.connect(p.coordinator).unassign(jobId);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
  });

  it("…and it may still beat and report right after the lapse, within its own timeout from the lapse", async function () {
    const { p, jobId, job } = await newcomerBehindPending();
    const lapse = job.reportedAt + fx.DECISION_TIMEOUT;
    await time.setNextBlockTimestamp(lapse);
    await p.escrow.connect(p.provider1).heartbeat(jobId, job.epoch);
    await time.setNextBlockTimestamp(lapse + 100n);
    await p.escrow.connect(p.provider1).heartbeat(jobId, job.epoch);
    await time.setNextBlockTimestamp(lapse + 150n);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, job.epoch, 10, fx.ckpt(jobId, 10, ":p1"));
  });

  it("a newcomer behind a lapsed checkpoint that then makes no progress still forfeits past lapse + its timeout", async function () {
    const { p, jobId, job } = await newcomerBehindPending();
    const lapse = job.reportedAt + fx.DECISION_TIMEOUT;
    await time.setNextBlockTimestamp(lapse + 151n);
    await expect(p.escrow.connect(p.coordinator).unassign(jobId))
      .to.emit(p.escrow, "HoldForfeited")
      .withArgs(jobId, p.provider1.address, fx.MIN_STAKE, fx.HoldEnd.Unassigned);
  });

  it("an honest newcomer blocked by another's checkpoint that the verifiers refuse late keeps its lock when taken away right after", async function () {
    const { p, jobId, job, hash, epoch2 } = await newcomerBehindPending();
    const late = job.reportedAt + fx.DECISION_TIMEOUT - 10n;
    await time.setNextBlockTimestamp(late);
    const sigs = await fx.signDecision(p, jobId, epoch2, 10, hash, false);
    await p.escrow.connect(p.stranger).refuseCheckpoint(jobId, epoch2, 10, hash, sigs);
    expect((await p.escrow.jobOf(jobId)).provider).to.equal(p.provider1.address); // still its hold
    await time.setNextBlockTimestamp(late + 1n);
    const tx = p.escrow.connect(p.coordinator).unassign(jobId);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
  });

  // The coordinator's mirror (keepers/coordinator/decide.ts decideProbation): it must not take the newcomer away
  // at lastProgressAt + timeout while the clock was stopped by another's checkpoint, or it sends a take-away the
  // contract releases (now) — before the fix it sent one that forfeited.
  it("the coordinator keeps a newcomer behind a lapsed checkpoint until the lapse + its timeout", function () {
    const provider = getAddress("0x" + "01".padStart(40, "0"));
    const job: CoordinatorJob = {
      jobId: 1n,
      status: "Running",
      epoch: 4n,
      templateId: "0x" + "ab".repeat(32),
      totalSteps: 100,
      acceptedStep: 0,
      pendingStep: 10,
      maxPricePerStep: 1_000n,
      checkpointInterval: 10,
      budget: 100_000n,
      paid: 0n,
      provider,
      leaseExpiresAt: 10_000n,
      lastProgressAt: 1_000n,
      reportedAt: 990n,
      progressTimeout: 150n,
    };
    const at = (chainTime: bigint): CoordinatorView => ({
      nowMs: 1_000_000,
      chainTime,
      timeoutMs: 5_000,
      isCoordinator: true,
      jobs: [job],
      providers: [],
      lastBeat: new Map(),
      lastJobBeat: new Map(),
      watchStart: new Map(),
      fenced: new Map(),
      memoryNeedMiB: () => 0,
      records: new Map(),
      probationPriced: true,
    });
    const lapse = 990n + 3_600n;
    expect(decideRunning(job, at(lapse + 1n)).action).to.equal("keep");
    expect(decideRunning(job, at(lapse + 150n)).action).to.equal("keep");
    expect(decideRunning(job, at(lapse + 151n)).action).to.equal("unassign");
  });

  it("SAFE: the step bound changed between createJob and assign: the job keeps its creation bound, the assignee's timeout with it", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
    const jobId = await fx.createJob(p);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 1);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(jobId);
    expect(progressTimeout).to.equal(150n);
    await time.setNextBlockTimestamp(lastProgressAt + 150n);
    await expect(p.escrow.connect(p.coordinator).unassign(jobId)).to.not.emit(p.escrow, "HoldForfeited");
  });

  it("SAFE: a newcomer cannot refresh its progress clock without a report: heartbeats do not move lastProgressAt, past the timeout they revert and the lease lapses into a forfeit", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
    const jobId = await fx.startJob(p);
    const { lastProgressAt, epoch } = await p.escrow.jobOf(jobId);
    await time.setNextBlockTimestamp(lastProgressAt + 100n);
    await p.escrow.connect(p.provider1).heartbeat(jobId, epoch);
    expect((await p.escrow.jobOf(jobId)).lastProgressAt).to.equal(lastProgressAt);
    // The lease it extended ends at +220 s; its timeout at +150 s: past it the beat reverts and the lease lapses.
    await time.setNextBlockTimestamp(lastProgressAt + 151n);
    await expect(p.escrow.connect(p.provider1).heartbeat(jobId, epoch)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowNoProgress",
    );
    await time.setNextBlockTimestamp(lastProgressAt + 100n + fx.LEASE + 1n);
    await expect(p.escrow.connect(p.stranger).unassign(jobId)).to.emit(p.escrow, "HoldForfeited");
  });

  it("SAFE: a newcomer's own checkpoint that lapses undecided is the verifiers' silence: its lapsed lease releases the lock", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.escrow.connect(p.owner).setTemplateStepBound(fx.TEMPLATE, 15_000);
    const jobId = await fx.startJob(p);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, fx.ckpt(jobId, 10));
    const { reportedAt } = await p.escrow.jobOf(jobId);
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    const tx = p.escrow.connect(p.stranger).unassign(jobId);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
  });

  // FIXED (contracts/JobEscrow.sol `expire`): stallSince is a uint32; past 2^32 s (Feb 2106) `uint32(block.timestamp)`
  // wraps, so `stallSince + STALL_EXPIRY` lay in 1970 and any Open job could be expired by anyone at creation.
  it("a job created after 2106 (uint32 stallSince wraps) is not expirable at once", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await time.increaseTo(2n ** 32n + 100n);
    const jobId = await fx.createJob(p);
    await expect(p.escrow.connect(p.stranger).expire(jobId)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowNotExpired",
    );
    const created = await fx.now();
    await time.setNextBlockTimestamp(created + 7n * 24n * 3600n + 1n);
    await expect(p.escrow.connect(p.stranger).expire(jobId)).to.emit(p.escrow, "JobExpired");
  });

  // OPEN: a job whose interval × step bound exceeds PROGRESS_TIMEOUT (any interval above 720 steps on a template
  // without a bound) has a capped timeout: no stall on it is evidence, so a newcomer that never trains holds it
  // ~6 h + one lease and leaves with its lock; the coordinator assigns newcomers to such jobs like any other (it
  // cannot tell a capped timeout from one of exactly 6 h: the job view carries no step bound). N identities: N × 6 h
  // of delay for free. Not fixed here: excluding newcomers from capped jobs would starve them when no proven provider
  // exists, and the contract cannot judge a capped stall. Reproduction below (passes today: it shows the free hold).
  it.skip("OPEN: a newcomer holding a capped job (interval 721 at the default 30 s bound) without training leaves free after ~6 h", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const request = { totalSteps: 721, checkpointInterval: 721, budget: 721n * 1_000n };
    const jobId = await fx.startJob(p, request);
    const lock = await p.registry.lockOf(p.provider1.address, jobId);
    const { lastProgressAt, epoch } = await p.escrow.jobOf(jobId);
    for (let t = lastProgressAt + 100n; t <= lastProgressAt + 6n * 3600n; t += 100n) {
      await time.setNextBlockTimestamp(t);
      await p.escrow.connect(p.provider1).heartbeat(jobId, epoch);
    }
    await time.setNextBlockTimestamp((await p.escrow.jobOf(jobId)).leaseExpiresAt + 1n);
    const tx = p.escrow.connect(p.stranger).unassign(jobId);
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, lock);
  });

  // OPEN: the projection (tick.ts projectedChainTime) assumes the next block is stamped no earlier than the head's
  // timestamp + the wall time since it was first seen − 1 s. A node whose head is AHEAD of its own clock breaks it:
  // an automining Hardhat/anvil node stamps each block at least prev + 1, so a burst of k transactions in one
  // second leaves the head k − 1 s ahead of the wall clock, and the next block is stamped max(head + 1, wall). A
  // newcomer (or anyone) sends such a burst just before its bound; the coordinator sees head H at wall W, projects
  // H + s − 1 > bound after s seconds, sends unassign, and it is mined at max(H + 1, W + s − drift) ≤ bound: a
  // take-away inside the bound, which releases the lock (a free exit). Reproduction in numbers below.
  it.skip("OPEN: a head stamped ahead of the node's clock makes the projection overshoot the next block's timestamp", function () {
    const drift = 5n; // a burst of 6 automined transactions within one wall second
    const wall = 1_000_000n;
    const head = wall + drift;
    const sinceSeenS = 4;
    const projected = projectedChainTime(head, sinceSeenS * 1_000);
    const nextBlock = head + 1n > wall + BigInt(sinceSeenS) ? head + 1n : wall + BigInt(sinceSeenS);
    expect(projected).to.be.lessThan(nextBlock); // fails: projected head + 3 > next block head + 1
  });
});
