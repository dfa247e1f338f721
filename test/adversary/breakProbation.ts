/**
 * Break attempts on the on-chain probation rule (contracts/JobEscrow.sol `_endHold`, `_checkNotLapsed`).
 *
 * Each `describe` block is one strategy, tried by a second engineer told only "break this". FIXED: failed on the
 * rule as first written (they assert the safe behaviour: no honest newcomer loses its lock), pass now. HELD: the
 * attack was stopped already. OPEN (skipped): a known limit, written up in docs/THREATS.md.
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

async function deposited(p: fx.Protocol, who: { address: string }) {
  return (await p.registry.stakeOf(who.address)).deposited;
}

describe("breakProbation: the coordinator (never trusted by the contracts) harvests honest newcomers' locks", function () {
  it("FIXED: assign then unassign at once (lease live, heartbeat just sent, well inside progressTimeout) must not forfeit an honest newcomer's lock", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const clientBefore = await p.escrow.owed(p.client.address);
    // Three jobs by the same client; the coordinator hands each to the newcomer and takes it away a block later,
    // while the newcomer is live and beating (it had no chance to train a single interval).
    for (let i = 0; i < 3; i++) {
      const jobId = await fx.startJob(p);
      await p.escrow.connect(p.provider1).heartbeat(jobId, 1n); // honest and live
      const job = await p.escrow.jobOf(jobId);
      expect(await fx.now()).to.be.lessThan(job.lastProgressAt + job.progressTimeout);
      await p.escrow.connect(p.coordinator).unassign(jobId);
    }
    await expectReservesBalanced(p);
    // SAFE: the honest newcomer keeps its stake; the client is not paid for the coordinator's decision.
    expect((await p.escrow.owed(p.client.address)) - clientBefore, "client harvested newcomer locks").to.equal(0n);
    expect(await deposited(p, p.provider1), "honest newcomer lost stake").to.equal(fx.STAKE);
  });

  it("HELD: a stranger (or the client) cannot unassign a live lease early to trigger the forfeit", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    for (const who of [p.stranger, p.client]) {
      await expect(p.escrow.connect(who).unassign(jobId)).to.be.revertedWithCustomError(
        p.escrow,
        "JobEscrowLeaseActive",
      );
    }
    expect(await deposited(p, p.provider1)).to.equal(fx.STAKE);
  });
});

describe("breakProbation: a client picks an interval an honest newcomer cannot finish inside the capped progress timeout", function () {
  it("FIXED: at 25 s/step (< MAX_SECONDS_PER_STEP) an interval of 5000 steps cannot reach its first report before PROGRESS_TIMEOUT (6 h): the honest newcomer must not forfeit price x interval", async function () {
    this.timeout(300_000);
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const interval = 5_000;
    let jobId: bigint;
    try {
      jobId = await fx.startJob(p, {
        totalSteps: interval,
        checkpointInterval: interval,
        maxPricePerStep: 1_000n,
        budget: BigInt(interval) * 1_000n,
      });
    } catch {
      return; // SAFE too: the escrow refuses an interval longer than PROGRESS_TIMEOUT / MAX_SECONDS_PER_STEP
    }
    const lock = await p.registry.lockOf(p.provider1.address, jobId);
    expect(lock).to.equal(fx.PRICE.provider1 * BigInt(interval)); // 4.5 USDC: the client's choice of interval
    const job = await p.escrow.jobOf(jobId);
    expect(job.progressTimeout).to.equal(6n * 3600n); // capped: 5000 × 30 s would be 41.7 h
    // The honest agent trains a whole interval before its first report (agent/decide.ts segmentTarget) and beats
    // every lease/3. Each step takes 25 s, within the contract's own MAX_SECONDS_PER_STEP (30 s).
    const firstReportAt = job.lastProgressAt + BigInt(interval) * 25n;
    let t = await fx.now();
    let stopped = false;
    while (t + 40n < firstReportAt) {
      t += 40n;
      await time.setNextBlockTimestamp(t);
      try {
        await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
      } catch {
        stopped = true; // JobEscrowNoProgress: the chain refuses the beats of a provider still training
        break;
      }
    }
    if (stopped) {
      await time.setNextBlockTimestamp(t + fx.LEASE + 1n);
      await p.escrow.connect(p.stranger).unassign(jobId);
    }
    await expectReservesBalanced(p);
    // SAFE: an honest provider working within MAX_SECONDS_PER_STEP is not priced out of its own stake.
    expect(await deposited(p, p.provider1), "honest newcomer forfeited price x interval").to.equal(fx.STAKE);
    // Still open (docs/THREATS.md): past MAX_CHECKPOINT_INTERVAL the capped timeout refuses a slow honest
    // holder's beats before its first report, so it loses the job (not its stake).
    expect(stopped, "the capped progress timeout ended the hold").to.equal(true);
  });
});

describe("breakProbation: the verifiers abstain (a store outage, or two of three offline) on an honest newcomer's first report", function () {
  it("FIXED: a report that lapses undecided because the verifiers abstained must not forfeit the honest reporter's lock", async function () {
    const p = await fx.pendingCheckpoint(); // provider1's honest first checkpoint at step 10
    const { reportedAt } = await p.escrow.jobOf(p.jobId);
    // The newcomer keeps beating while it waits (allowed while the checkpoint is decidable).
    for (let s = reportedAt + 100n; s <= reportedAt + fx.DECISION_TIMEOUT; s += 100n) {
      await time.setNextBlockTimestamp(s);
      await p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n);
    }
    // The verifiers abstained ("an I/O failure is never a refusal: the verifier abstains", docs/THREATS.md):
    // no decision. The window closes; the holder may no longer beat; its lease lapses; anyone unassigns.
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    await expect(p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowReportLapsed",
    );
    const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
    await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
    await p.escrow.connect(p.stranger).unassign(p.jobId);
    await expectReservesBalanced(p);
    // SAFE: abstention is the verifiers' (or the store's) failure, never the reporter's.
    expect(await deposited(p, p.provider1), "honest reporter forfeited for the verifiers' silence").to.equal(fx.STAKE);
  });
});

describe("breakProbation: an identity buys its way out of probation with one step on a job of its own", function () {
  // OPEN (docs/THREATS.md, "Hold a job without progress"): probation ends at any accepted checkpoint, and an
  // identity can pay itself for one on a job of its own (the cost: that job's gas and one checkpoint of real work
  // of an approved template). After that its on-chain holds cost no lock; the coordinator's strikes, back-off and
  // provenFirst bound them off chain instead. Kept skipped as the reproduction for whoever prices the self-deal.
  it.skip("OPEN: a 1-step self-dealt job (attacker as client and provider, paying itself) makes the identity proven; its idle holds on others' jobs then cost no lock", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const attacker = p.provider1; // cheapest offer: the honest coordinator picks it for both jobs
    const sybilClient = p.client2; // another address of the attacker
    // 1 step, interval 1, budget exactly one step: cost = gas + one honest step (the price comes back to itself).
    const selfJob = await fx.createJob(
      p,
      { totalSteps: 1, checkpointInterval: 1, maxPricePerStep: fx.PRICE.provider1, budget: fx.PRICE.provider1 },
      sybilClient,
    );
    await p.escrow.connect(p.coordinator).assign(selfJob, attacker.address);
    await fx.reportAndAccept(p, selfJob, attacker, 1);
    expect(await p.escrow.isProven(attacker.address)).to.equal(true);

    // Now: idle holds on a victim's jobs. Each ends by lease lapse; count the attacker's losses.
    const stakeBefore = await deposited(p, attacker);
    for (let i = 0; i < 3; i++) {
      const victim = await fx.startJob(p, {}, attacker);
      const { leaseExpiresAt } = await p.escrow.jobOf(victim);
      await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
      await p.escrow.connect(p.stranger).unassign(victim);
    }
    await expectReservesBalanced(p);
    // SAFE (the commit's own promise: "N identities cost N locks", "trying and failing is never free"): three idle
    // holds cost at least three locks. Now they cost nothing.
    expect(
      stakeBefore - (await deposited(p, attacker)),
      "three idle holds cost the proven-by-self-deal identity nothing",
    ).to.be.at.least(3n * fx.MIN_STAKE);
  });
});

describe("breakProbation: accounting and fencing around forfeits (HELD)", function () {
  it("HELD: a forfeit, a re-assignment of the same newcomer, its acceptance and the client's withdrawal all add up", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    await time.setNextBlockTimestamp((await p.escrow.jobOf(jobId)).leaseExpiresAt + 1n);
    await p.escrow.connect(p.stranger).unassign(jobId); // lease lapsed on probation: forfeit 1
    await expectReservesBalanced(p);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    await fx.reportAndAccept(p, jobId, p.provider1, 10);
    expect(await p.escrow.isProven(p.provider1.address)).to.equal(true);
    await p.escrow.connect(p.coordinator).unassign(jobId); // proven: lock back
    expect(await p.registry.lockOf(p.provider1.address, jobId)).to.equal(0n);
    expect(await deposited(p, p.provider1)).to.equal(fx.STAKE - fx.MIN_STAKE);
    const owed = await p.escrow.owed(p.client.address);
    expect(owed).to.equal(fx.MIN_STAKE);
    await p.escrow.connect(p.client).withdraw();
    await expectReservesBalanced(p);
  });

  it("HELD: a holder whose own report lapsed cannot keep the job alive by beating or re-reporting (no free extra window)", async function () {
    const p = await fx.pendingCheckpoint();
    const { reportedAt } = await p.escrow.jobOf(p.jobId);
    for (let s = reportedAt + 100n; s <= reportedAt + fx.DECISION_TIMEOUT; s += 100n) {
      await time.setNextBlockTimestamp(s);
      await p.escrow.connect(p.provider1).heartbeat(p.jobId, 1n);
    }
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    await expect(
      p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 10, fx.ckpt(p.jobId, 10, "again")),
    ).to.be.revertedWithCustomError(p.escrow, "JobEscrowReportLapsed");
  });

  it("HELD: a decision after the window cannot revive the lapsed checkpoint (accept reverts; no double credit)", async function () {
    const p = await fx.pendingCheckpoint();
    const { reportedAt } = await p.escrow.jobOf(p.jobId);
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
    await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowDecisionWindowClosed",
    );
  });
});
