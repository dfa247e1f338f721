/**
 * Stake, slashing and the liveness rules (progress, not heartbeats, holds a job), on the real protocol (Ignition
 * deployment, real Safe): deposit / lock / release / unbond in the registry, a fault refusal that slashes exactly once
 * and splits the stake, a checkpoint that stays its reporter's after unassignment (pay cannot be redirected), a stalled
 * job that anyone can expire (accepted earnings are never locked forever), and each window at t−1, t, t+1.
 */
import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

const { time } = fx.networkHelpers;
const DAY = 86_400n;
const STALL_EXPIRY = 7n * DAY;

const stakeOf = async (p: fx.Protocol, who: { address: string }) => {
  const st = await p.registry.stakeOf(who.address);
  return { deposited: st.deposited, locked: st.locked, unbonding: st.unbonding };
};

describe("stake: deposit, lock, release, unbond", function () {
  it("depositStake pulls the tokens and emits StakeDeposited; reserves count the stake", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.usdc.mint(p.provider1.address, 5n * fx.MIN_STAKE);
    await p.usdc.connect(p.provider1).approve(await p.registry.getAddress(), 5n * fx.MIN_STAKE);
    const tx = p.registry.connect(p.provider1).depositStake(5n * fx.MIN_STAKE);
    await expect(tx)
      .to.emit(p.registry, "StakeDeposited")
      .withArgs(p.provider1.address, 5n * fx.MIN_STAKE, fx.STAKE + 5n * fx.MIN_STAKE);
    await expect(tx).to.changeTokenBalances(
      fx.ethers,
      p.usdc,
      [p.provider1, p.registry],
      [-5n * fx.MIN_STAKE, 5n * fx.MIN_STAKE],
    );
    expect(await p.registry.totalStaked()).to.equal(3n * fx.STAKE + 5n * fx.MIN_STAKE);
    const [held, owes] = await p.escrow.reserves();
    expect([held, owes]).to.deep.equal([3n * fx.STAKE + 5n * fx.MIN_STAKE, 3n * fx.STAKE + 5n * fx.MIN_STAKE]);
  });

  it("assign locks max(minStake, price × interval); an identity without stake takes no work", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.createJob(p);
    await expect(p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address))
      .to.emit(p.registry, "StakeLocked")
      .withArgs(p.provider1.address, jobId, fx.MIN_STAKE); // 900 × 10 is under the 1 USDC network minimum
    expect(await stakeOf(p, p.provider1)).to.deep.equal({ deposited: fx.STAKE, locked: fx.MIN_STAKE, unbonding: 0n });
    // A job whose checkpoint pays more than the minimum locks what one checkpoint pays.
    await p.registry.connect(p.provider2).update(2_000n, fx.DeviceKind.GPU, "GPU", 8_192);
    const request = { totalSteps: 4_000, checkpointInterval: 700, maxPricePerStep: 2_000n, budget: 8_000_000n };
    const big = await fx.createJob(p, request);
    await expect(p.escrow.connect(p.coordinator).assign(big, p.provider2.address))
      .to.emit(p.registry, "StakeLocked")
      .withArgs(p.provider2.address, big, 2_000n * 700n);
    await p.registry.connect(p.provider4).register("sybil", 1n, 1, "GPU", 200_000);
    const other = await fx.createJob(p);
    await expect(p.escrow.connect(p.coordinator).assign(other, p.provider4.address))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowStakeShort")
      .withArgs(other, p.provider4.address, 0n, fx.MIN_STAKE);
  });

  it("a proven provider's lock comes back when it is unassigned with nothing of its own pending, and at the verdict", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await fx.proveProvider(p);
    const jobId = await fx.startJob(p);
    await expect(p.escrow.connect(p.coordinator).unassign(jobId))
      .to.emit(p.registry, "StakeReleased")
      .withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
    expect((await stakeOf(p, p.provider1)).locked).to.equal(0n);
    const { jobId: done } = await fx.runToVerdict(p);
    expect(await p.registry.lockOf(p.provider1.address, done)).to.equal(0n);
    expect((await stakeOf(p, p.provider1)).locked).to.equal(0n);
  });

  it("a reporter unassigned with its checkpoint pending keeps its lock until the decision", async function () {
    const p = await fx.pendingCheckpoint();
    await expect(p.escrow.connect(p.coordinator).unassign(p.jobId)).to.not.emit(p.registry, "StakeReleased");
    expect(await p.registry.lockOf(p.provider1.address, p.jobId)).to.equal(fx.MIN_STAKE);
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
    await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
      .to.emit(p.registry, "StakeReleased")
      .withArgs(p.provider1.address, p.jobId, fx.MIN_STAKE);
  });

  for (const offset of [-1n, 0n, 1n]) {
    const ready = offset >= 0n;
    it(`withdrawStake at unbondingReadyAt${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${ready ? "pays the unbonded stake" : "reverts with ProviderRegistryUnbondingNotReady"}`, async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const tx = await p.registry.connect(p.provider3).requestUnbond(4n * fx.MIN_STAKE);
      const readyAt = (await fx.now()) + fx.UNBONDING;
      await expect(tx)
        .to.emit(p.registry, "UnbondingStarted")
        .withArgs(p.provider3.address, 4n * fx.MIN_STAKE, 4n * fx.MIN_STAKE, readyAt);
      // Unbonding stake is no longer lockable.
      expect(await p.registry.stakeQuote(p.provider3.address, 1n, 0n)).to.deep.equal([
        fx.MIN_STAKE,
        fx.STAKE - 4n * fx.MIN_STAKE,
      ]);
      await time.setNextBlockTimestamp(readyAt + offset);
      const withdraw = p.registry.connect(p.provider3).withdrawStake();
      if (ready) {
        await expect(withdraw)
          .to.emit(p.registry, "StakeWithdrawn")
          .withArgs(p.provider3.address, 4n * fx.MIN_STAKE);
        expect(await stakeOf(p, p.provider3)).to.deep.equal({
          deposited: fx.STAKE - 4n * fx.MIN_STAKE,
          locked: 0n,
          unbonding: 0n,
        });
        expect(await p.usdc.balanceOf(p.provider3.address)).to.equal(4n * fx.MIN_STAKE);
      } else {
        await expect(withdraw)
          .to.be.revertedWithCustomError(p.registry, "ProviderRegistryUnbondingNotReady")
          .withArgs(p.provider3.address, readyAt, readyAt - 1n);
      }
    });
  }

  it("the unbonding delay is longer than the window in which a fault can be proven (the escrow checks it)", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    expect(await p.registry.unbondingDelay()).to.be.greaterThan(await p.escrow.DECISION_TIMEOUT());
    const registry = await fx.ethers.deployContract("ProviderRegistry", [
      p.usdc.target,
      fx.MIN_STAKE,
      fx.DECISION_TIMEOUT,
    ]);
    const roles = fx.escrowRoles(p);
    await expect(fx.ethers.deployContract("JobEscrow", [p.usdc.target, registry.target, roles, 120n, 1n]))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnbondingTooShort")
      .withArgs(fx.DECISION_TIMEOUT, fx.DECISION_TIMEOUT);
    const unbonded = await fx.ethers.deployContract("ProviderRegistry", [
      p.usdc.target,
      fx.MIN_STAKE,
      fx.DECISION_TIMEOUT + 1n,
    ]);
    await fx.ethers.deployContract("JobEscrow", [p.usdc.target, unbonded.target, roles, 120n, 1n]);
  });
});

describe("slashing: a refusal carrying a fault signed 2 of 3", function () {
  it("slashes the reporter's lock (50 % client, 20 % finder, 30 % fee recipient), voids its unclaimed earnings, fences it", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    await fx.reportAndAccept(p, jobId, p.provider1, 10); // 9 000 credited
    const hash = fx.ckpt(jobId, 20, "fabricated");
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 20, hash);
    const fault = fx.faultAt(p, 17, p.verifier3.address);
    const sigs = await fx.signFault(p, jobId, 1n, 20, hash, fault);
    const tx = p.escrow.connect(p.stranger).refuseWithFault(jobId, 1n, 20, hash, fault, sigs);
    const [toClient, toFinder] = [fx.MIN_STAKE / 2n, fx.MIN_STAKE / 5n];
    await expect(tx)
      .to.emit(p.escrow, "ProviderSlashed")
      .withArgs(
        jobId,
        p.provider1.address,
        17,
        p.verifier3.address,
        fx.MIN_STAKE,
        toClient,
        toFinder,
        fx.MIN_STAKE - toClient - toFinder,
        10n * fx.PRICE.provider1,
      );
    await expect(tx).to.emit(p.registry, "StakeSlashed").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
    await expect(tx).to.emit(p.escrow, "CheckpointRefused").withArgs(jobId, p.provider1.address, 1n, 20, hash);
    await expect(tx)
      .to.emit(p.escrow, "ProviderUnassigned")
      .withArgs(jobId, p.provider1.address, 2n, fx.Reason.Refused, p.stranger.address);
    await expect(tx).to.changeTokenBalances(fx.ethers, p.usdc, [p.registry, p.escrow], [-fx.MIN_STAKE, fx.MIN_STAKE]);
    expect(await p.escrow.owed(p.client.address)).to.equal(toClient);
    expect(await p.escrow.owed(p.verifier3.address)).to.equal(toFinder);
    expect(await p.escrow.owed(p.feeRecipient.address)).to.equal(fx.MIN_STAKE - toClient - toFinder);
    expect(await p.escrow.earningsOf(jobId, p.provider1.address)).to.equal(0n);
    const job = await p.escrow.jobOf(jobId);
    expect([job.paid, job.acceptedStep]).to.deep.equal([0n, 10n]); // the voided credits return to the budget
    expect(await stakeOf(p, p.provider1)).to.deep.equal({
      deposited: fx.STAKE - fx.MIN_STAKE,
      locked: 0n,
      unbonding: 0n,
    });
    expect(await p.escrow.isFenced(jobId, p.provider1.address)).to.equal(true);
    const [held, owes] = await p.escrow.reserves();
    expect(held).to.equal(owes);
    // Exactly once: the checkpoint is gone, and with it any second slash.
    await expect(p.escrow.refuseWithFault(jobId, 1n, 20, hash, fault, sigs))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoSuchPendingCheckpoint")
      .withArgs(jobId, 1n, 20, hash);
  });

  it("a plain refusal (no proven fault: a missing blob, an accuracy dip) never slashes: a proven provider's lock comes back", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await fx.proveProvider(p);
    const jobId = await fx.startJob(p);
    const hash = fx.ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    const sigs = await fx.signDecision(p, jobId, 1n, 10, hash, false);
    const tx = p.escrow.refuseCheckpoint(jobId, 1n, 10, hash, sigs);
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
    await expect(tx).to.not.emit(p.registry, "StakeSlashed");
    await expect(tx).to.not.emit(p.escrow, "HoldForfeited");
    expect(await stakeOf(p, p.provider1)).to.deep.equal({ deposited: fx.STAKE, locked: 0n, unbonding: 0n });
  });

  it("fault step boundaries: accepted step (t−1) reverts, accepted+1 (t) slashes; pending step (t) slashes, +1 reverts", async function () {
    for (const [faultStep, ok] of [
      [0, false],
      [1, true],
      [10, true],
      [11, false],
    ] as const) {
      const p = await fx.pendingCheckpoint();
      const fault = fx.faultAt(p, faultStep);
      const tx = p.escrow.refuseWithFault(
        p.jobId,
        1n,
        10,
        p.hash,
        fault,
        await fx.signFault(p, p.jobId, 1n, 10, p.hash, fault),
      );
      if (ok) await expect(tx, `fault at ${faultStep}`).to.emit(p.escrow, "ProviderSlashed");
      else {
        await expect(tx, `fault at ${faultStep}`)
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidFaultStep")
          .withArgs(p.jobId, faultStep, 0, 10);
      }
    }
  });

  it("an honest provider's checkpoint cannot be slashed without the Safe: one owner's signature is not enough", async function () {
    const p = await fx.pendingCheckpoint();
    const fault = fx.faultAt(p, 5);
    const one = await fx.signFault(p, p.jobId, 1n, 10, p.hash, fault, [p.verifier1]);
    await expect(p.escrow.connect(p.verifier1).refuseWithFault(p.jobId, 1n, 10, p.hash, fault, one))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
      .withArgs(await p.escrow.faultRefusalDigest(p.jobId, 1n, 10, p.hash, fault));
    expect(await p.registry.lockOf(p.provider1.address, p.jobId)).to.equal(fx.MIN_STAKE);
  });
});

describe("pay cannot be redirected: a checkpoint stays its reporter's (finding, fixed)", function () {
  it("after the coordinator hands the job over, the newcomer cannot re-report the pending blob; the reporter is paid and the job resumes from it", async function () {
    const p = await fx.pendingCheckpoint();
    await p.escrow.connect(p.coordinator).unassign(p.jobId); // epoch 2
    await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider2.address); // epoch 3
    // Before the fix the newcomer reported the same bytes at epoch 3 and was paid for the first one's work.
    await expect(p.escrow.connect(p.provider2).reportCheckpoint(p.jobId, 3n, 10, p.hash))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowCheckpointPending")
      .withArgs(p.jobId, 10);
    const job = await p.escrow.jobOf(p.jobId);
    expect([job.pendingProvider, job.pendingEpoch, job.pendingPrice]).to.deep.equal([
      p.provider1.address,
      1n,
      fx.PRICE.provider1,
    ]);
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
    await expect(p.escrow.connect(p.stranger).acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
      .to.emit(p.escrow, "CheckpointAccepted")
      .withArgs(p.jobId, p.provider1.address, 1n, 10, p.hash, 10, 10n * fx.PRICE.provider1);
    expect(await p.escrow.earningsOf(p.jobId, p.provider1.address)).to.equal(10n * fx.PRICE.provider1);
    expect(await p.escrow.earningsOf(p.jobId, p.provider2.address)).to.equal(0n);
    // The newcomer resumes from the accepted checkpoint and is paid for its own steps only.
    await fx.reportAndAccept(p, p.jobId, p.provider2, 20);
    expect(await p.escrow.earningsOf(p.jobId, p.provider2.address)).to.equal(10n * fx.PRICE.provider2);
  });

  it("a provider that dies right after reporting is still credited when the verifiers accept after its lease lapsed", async function () {
    const p = await fx.pendingCheckpoint();
    const { leaseExpiresAt } = await p.escrow.jobOf(p.jobId);
    await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
    await p.escrow.connect(p.stranger).unassign(p.jobId);
    const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
    await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
      .to.emit(p.escrow, "CheckpointAccepted")
      .withArgs(p.jobId, p.provider1.address, 1n, 10, p.hash, 10, 10n * fx.PRICE.provider1);
    expect(await p.escrow.statusOf(p.jobId)).to.equal(fx.Status.Open);
  });

  it("a budget reserve covers the reporter's checkpoint at its price before anyone else is assigned", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    // Budget exactly 100 steps at provider2's 1 000: provider2 reports 10, is unassigned; provider1 (900) takes over.
    const jobId = await fx.startJob(p, { budget: 100_000n }, p.provider2);
    await p.escrow.connect(p.provider2).reportCheckpoint(jobId, 2n - 1n, 10, fx.ckpt(jobId, 10));
    await p.escrow.connect(p.coordinator).unassign(jobId);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    await p.escrow.acceptCheckpoint(
      jobId,
      1n,
      10,
      fx.ckpt(jobId, 10),
      await fx.signDecision(p, jobId, 1n, 10, fx.ckpt(jobId, 10), true),
    );
    const job = await p.escrow.jobOf(jobId);
    expect(job.paid).to.equal(10n * fx.PRICE.provider2);
    expect(job.budget - job.paid).to.be.at.least(90n * fx.PRICE.provider1);
  });

  for (const offset of [-1n, 0n, 1n]) {
    const open = offset <= 0n;
    it(`decision window at reportedAt + DECISION_TIMEOUT${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: accept ${open ? "succeeds" : "reverts with JobEscrowDecisionWindowClosed"}`, async function () {
      const p = await fx.pendingCheckpoint();
      const { reportedAt } = await p.escrow.jobOf(p.jobId);
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      const deadline = reportedAt + fx.DECISION_TIMEOUT;
      await time.setNextBlockTimestamp(deadline + offset);
      const tx = p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs);
      if (open) await expect(tx).to.emit(p.escrow, "CheckpointAccepted");
      else {
        await expect(tx)
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowDecisionWindowClosed")
          .withArgs(p.jobId, deadline, deadline + 1n);
      }
    });
  }

  it("a lapsed checkpoint is dropped by the next assignment and its (proven) reporter's lock comes back", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await fx.proveProvider(p);
    const jobId = await fx.startJob(p);
    const hash = fx.ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    await p.escrow.connect(p.coordinator).unassign(jobId);
    const { reportedAt } = await p.escrow.jobOf(jobId);
    await time.setNextBlockTimestamp(reportedAt + fx.DECISION_TIMEOUT + 1n);
    const tx = p.escrow.connect(p.coordinator).assign(jobId, p.provider2.address);
    await expect(tx).to.emit(p.escrow, "CheckpointLapsed").withArgs(jobId, p.provider1.address, 1n, 10, hash);
    await expect(tx).to.emit(p.registry, "StakeReleased").withArgs(p.provider1.address, jobId, fx.MIN_STAKE);
    expect((await p.escrow.jobOf(jobId)).pendingStep).to.equal(0n);
  });
});

describe("accepted earnings are never locked forever: anyone expires a stalled job (finding, fixed)", function () {
  /** provider1 earned 10 steps, then was unassigned; nobody else takes the job. */
  async function stalledJob() {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const jobId = await fx.startJob(p);
    await fx.reportAndAccept(p, jobId, p.provider1, 10);
    await p.escrow.connect(p.coordinator).unassign(jobId);
    const { stallSince } = await p.escrow.jobOf(jobId);
    return { ...p, jobId, stallSince };
  }

  it("a job left Open for a year: anyone expires it, the provider claims its earnings, the client gets the rest", async function () {
    const p = await stalledJob();
    await time.increase(365n * DAY);
    // Before the fix earnings were claimable only after Settled or Cancelled, and only the client could cancel.
    await expect(p.escrow.claimEarnings(p.jobId, p.provider1.address))
      .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
      .withArgs(p.jobId, fx.Status.Open, fx.bits(fx.Status.Settled, fx.Status.Cancelled));
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
    expect(await p.escrow.owed(p.client.address)).to.equal(91_000n);
  });

  for (const offset of [-1n, 0n, 1n]) {
    const expirable = offset > 0n;
    it(`expire at stallSince + STALL_EXPIRY${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${expirable ? "succeeds" : "reverts with JobEscrowNotExpired"}`, async function () {
      const p = await stalledJob();
      const expiresAt = p.stallSince + STALL_EXPIRY;
      await fx.expectExpireAt(p, expiresAt, offset);
    });
  }

  it("an acceptance while Open restarts the stall clock", async function () {
    const p = await fx.pendingCheckpoint();
    await p.escrow.connect(p.coordinator).unassign(p.jobId);
    await time.increase(1_800);
    await p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true));
    expect((await p.escrow.jobOf(p.jobId)).stallSince).to.equal(await fx.now());
  });
});

describe("hold bound: no identity holds a job longer than a bound tied to the job", function () {
  it("progressTimeout = checkpointInterval × MAX_SECONDS_PER_STEP, at least one lease, at most PROGRESS_TIMEOUT", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const perStep = await p.escrow.MAX_SECONDS_PER_STEP();
    const cap = await p.escrow.PROGRESS_TIMEOUT();
    const lease = await p.escrow.leaseDuration();
    const cases: [number, bigint][] = [
      [1, lease], // 30 s < 120 s lease
      [4, lease], // 120 s = one lease (t)
      [5, 5n * perStep], // 150 s (t+1 side)
      [100, 100n * perStep], // 3 000 s
      [720, cap], // exactly 6 h: MAX_CHECKPOINT_INTERVAL
      [721, cap], // capped
    ];
    expect(await p.escrow.MAX_CHECKPOINT_INTERVAL()).to.equal(720n);
    for (const [interval, expected] of cases) {
      const jobId = await fx.createJob(p, { totalSteps: 1_000, checkpointInterval: interval, budget: 1_000_000n });
      expect((await p.escrow.jobOf(jobId)).progressTimeout, `interval ${interval}`).to.equal(expected);
    }
  });

  it("an idle identity that only heartbeats loses the job one lease after its job's bound, not after 6 h", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    await p.registry.connect(p.provider4).register("idle", 1n, 1, "GPU", 200_000);
    await fx.depositStake(p, p.provider4);
    const jobId = await fx.startJob(p, {}, p.provider4);
    const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(jobId);
    let t = lastProgressAt;
    while (t + 110n <= lastProgressAt + progressTimeout) {
      t += 110n;
      await time.setNextBlockTimestamp(t);
      await p.escrow.connect(p.provider4).heartbeat(jobId, 1n);
    }
    await time.setNextBlockTimestamp(lastProgressAt + progressTimeout + 1n);
    await expect(p.escrow.connect(p.provider4).heartbeat(jobId, 1n)).to.be.revertedWithCustomError(
      p.escrow,
      "JobEscrowNoProgress",
    );
    const { leaseExpiresAt } = await p.escrow.jobOf(jobId);
    expect(leaseExpiresAt - lastProgressAt).to.be.at.most(progressTimeout + 120n);
    await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
    // On probation (no accepted checkpoint yet): the idle hold costs it its lock, paid to the client.
    await expect(p.escrow.connect(p.stranger).unassign(jobId))
      .to.emit(p.escrow, "HoldForfeited")
      .withArgs(jobId, p.provider4.address, fx.MIN_STAKE, fx.HoldEnd.LeaseLapsed);
  });
});
