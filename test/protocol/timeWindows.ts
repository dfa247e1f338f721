/**
 * Every deadline at t-1, t and t+1, with both competing actions tried at the same instant from one snapshot:
 * exactly one of them succeeds. Deadlines are inclusive for the party whose time it is (the assignee's lease,
 * the client's dispute window, the arbiter's 3 days) and the permissionless action starts one second later.
 */
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import * as fx from "../helpers/fixture.ts";

const { time } = fx.networkHelpers;

interface Contender {
  send: () => Promise<ContractTransactionResponse>;
  /** Asserts the success (events) of a call made at `t`. */
  succeeded: (tx: Promise<ContractTransactionResponse>, t: bigint) => Promise<void>;
  /** Asserts the expected custom error of a call made at `t`. */
  failed: (tx: Promise<ContractTransactionResponse>, t: bigint) => Promise<void>;
}

/**
 * Tries `a` and `b` at instant `t`, each from the same snapshot. `aWins` says which one must succeed.
 * A reverted call is not mined (gas estimation fails), so an empty block consumes the instant afterwards.
 */
/** The revert a contender meets once the other has won: JobEscrowUnexpectedStatus(jobId, `actual`, `allowed`). */
function wrongStatus(
  p: fx.Protocol,
  jobId: bigint,
  tx: Promise<ContractTransactionResponse>,
  actual: number,
  ...allowed: number[]
): Promise<void> {
  return expect(tx)
    .to.be.revertedWithCustomError(p.escrow, "JobEscrowUnexpectedStatus")
    .withArgs(jobId, actual, fx.bits(...allowed));
}

async function race(t: bigint, a: Contender, b: Contender, aWins: boolean) {
  const snapshot = await fx.networkHelpers.takeSnapshot();
  for (const [who, wins] of [
    [a, aWins],
    [b, !aWins],
  ] as const) {
    await time.setNextBlockTimestamp(t);
    if (wins) {
      await who.succeeded(who.send(), t);
      expect(await fx.now()).to.equal(t);
    } else {
      await who.failed(who.send(), t);
      await fx.networkHelpers.mine();
    }
    await snapshot.restore();
  }
}

describe("JobEscrow: time windows at t-1, t, t+1", function () {
  describe("lease (leaseExpiresAt is inclusive for the assignee)", function () {
    async function leased() {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.startJob(p);
      const { leaseExpiresAt } = await p.escrow.jobOf(jobId);
      const unassign: Contender = {
        send: () => p.escrow.connect(p.stranger).unassign(jobId),
        succeeded: (tx) =>
          expect(tx)
            .to.emit(p.escrow, "ProviderUnassigned")
            .withArgs(jobId, p.provider1.address, 2n, fx.Reason.LeaseLapsed, p.stranger.address),
        failed: (tx, t) =>
          expect(tx).to.be.revertedWithCustomError(p.escrow, "JobEscrowLeaseActive").withArgs(jobId, leaseExpiresAt, t),
      };
      const lapsed = (tx: Promise<ContractTransactionResponse>, t: bigint) =>
        expect(tx).to.be.revertedWithCustomError(p.escrow, "JobEscrowLeaseLapsed").withArgs(jobId, leaseExpiresAt, t);
      const heartbeat: Contender = {
        send: () => p.escrow.connect(p.provider1).heartbeat(jobId, 1n),
        succeeded: (tx, t) =>
          expect(tx)
            .to.emit(p.escrow, "LeaseExtended")
            .withArgs(jobId, p.provider1.address, 1n, t + fx.LEASE),
        failed: lapsed,
      };
      const h = fx.ckpt(jobId, 10);
      const report: Contender = {
        send: () => p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, h),
        succeeded: (tx) =>
          expect(tx).to.emit(p.escrow, "CheckpointReported").withArgs(jobId, p.provider1.address, 1n, 10, h),
        failed: lapsed,
      };
      return { leaseExpiresAt, unassign, heartbeat, report };
    }

    for (const offset of [-1n, 0n, 1n]) {
      const live = offset <= 0n;
      it(`lease at leaseExpiresAt${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${live ? "heartbeat succeeds, permissionless unassign reverts with JobEscrowLeaseActive" : "heartbeat reverts with JobEscrowLeaseLapsed, permissionless unassign succeeds"}`, async function () {
        const { leaseExpiresAt, heartbeat, unassign } = await leased();
        await race(leaseExpiresAt + offset, heartbeat, unassign, live);
      });
      it(`lease at leaseExpiresAt${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${live ? "reportCheckpoint succeeds, permissionless unassign reverts" : "reportCheckpoint reverts with JobEscrowLeaseLapsed, permissionless unassign succeeds"}`, async function () {
        const { leaseExpiresAt, report, unassign } = await leased();
        await race(leaseExpiresAt + offset, report, unassign, live);
      });
    }
  });

  describe("progress timeout (lastProgressAt + the job's progressTimeout is inclusive for the assignee)", function () {
    /** Keeps the lease alive with heartbeats until just before `until`, making no progress. */
    async function heartbeatUntil(p: Awaited<ReturnType<typeof fx.deployProtocol>>, jobId: bigint, until: bigint) {
      for (let t = (await fx.now()) + 110n; t < until - 1n; t += 110n) {
        await time.setNextBlockTimestamp(t);
        await p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
      }
    }

    /** A heartbeat at `t`: extends the lease to t + LEASE when `live`, else reverts with JobEscrowNoProgress. */
    async function heartbeatAt(p: fx.Protocol, jobId: bigint, t: bigint, live: boolean, lastProgressAt: bigint) {
      await time.setNextBlockTimestamp(t);
      const tx = p.escrow.connect(p.provider1).heartbeat(jobId, 1n);
      if (live)
        await expect(tx)
          .to.emit(p.escrow, "LeaseExtended")
          .withArgs(jobId, p.provider1.address, 1n, t + fx.LEASE);
      else
        await expect(tx)
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoProgress")
          .withArgs(jobId, lastProgressAt, t);
    }

    async function stalled() {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.startJob(p);
      const { lastProgressAt, progressTimeout } = await p.escrow.jobOf(jobId);
      // interval 10 × MAX_SECONDS_PER_STEP (30 s): 300 s, above the 120 s lease and far below 6 h.
      expect(progressTimeout).to.equal(300n);
      const deadline = lastProgressAt + progressTimeout;
      await heartbeatUntil(p, jobId, deadline);
      return { p, jobId, lastProgressAt, deadline };
    }

    for (const offset of [-1n, 0n, 1n]) {
      const live = offset <= 0n;
      it(`heartbeat at lastProgressAt + progressTimeout${offset < 0n ? "-1" : offset > 0n ? "+1" : ""} with nothing pending: ${live ? "succeeds" : "reverts with JobEscrowNoProgress"}`, async function () {
        const { p, jobId, lastProgressAt, deadline } = await stalled();
        await heartbeatAt(p, jobId, deadline + offset, live, lastProgressAt);
      });
    }

    it("a report restarts the progress clock; a heartbeat then succeeds past the old deadline", async function () {
      const { p, jobId, deadline } = await stalled();
      await time.setNextBlockTimestamp(deadline);
      await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, fx.ckpt(jobId, 10));
      await time.setNextBlockTimestamp(deadline + 60n);
      await expect(p.escrow.connect(p.provider1).heartbeat(jobId, 1n)).to.emit(p.escrow, "LeaseExtended");
    });

    for (const offset of [-1n, 0n, 1n]) {
      const live = offset <= 0n;
      it(`while a checkpoint is pending the wait does not count, up to reportedAt + DECISION_TIMEOUT${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: heartbeat ${live ? "succeeds" : "reverts with JobEscrowReportLapsed (its own report lapsed: the hold is over)"}`, async function () {
        const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
        const jobId = await fx.startJob(p);
        await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, fx.ckpt(jobId, 10));
        const { reportedAt, lastProgressAt } = await p.escrow.jobOf(jobId);
        const t = reportedAt + fx.DECISION_TIMEOUT + offset;
        await heartbeatUntil(p, jobId, t);
        if (live) return heartbeatAt(p, jobId, t, live, lastProgressAt);
        await time.setNextBlockTimestamp(t);
        await expect(p.escrow.connect(p.provider1).heartbeat(jobId, 1n))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowReportLapsed")
          .withArgs(jobId, 1n, 10);
      });
    }

    it("a provider that only heartbeats loses the job: its lease lapses, anyone unassigns, the client cancels and is refunded", async function () {
      const { p, jobId, deadline } = await stalled();
      const { leaseExpiresAt, budget } = await p.escrow.jobOf(jobId);
      expect(leaseExpiresAt).to.be.at.most(deadline + fx.LEASE);
      await time.setNextBlockTimestamp(leaseExpiresAt + 1n);
      await expect(p.escrow.connect(p.stranger).unassign(jobId))
        .to.emit(p.escrow, "ProviderUnassigned")
        .withArgs(jobId, p.provider1.address, 2n, fx.Reason.LeaseLapsed, p.stranger.address);
      await expect(p.escrow.connect(p.client).cancel(jobId)).to.emit(p.escrow, "JobCancelled").withArgs(jobId, budget);
      expect(await p.escrow.statusOf(jobId)).to.equal(fx.Status.Cancelled);
    });
  });

  describe("dispute window (submittedAt + disputeWindow is inclusive for the client)", function () {
    async function inWindow() {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const { jobId } = await fx.runToVerdict(p);
      const deadline = (await p.escrow.verdictOf(jobId)).submittedAt + 3_600n;
      const dispute: Contender = {
        send: () => p.escrow.connect(p.client).dispute(jobId),
        succeeded: (tx, t) =>
          expect(tx)
            .to.emit(p.escrow, "DisputeOpened")
            .withArgs(jobId, p.client.address, 50_000_000n, t + fx.ARBITER_TIMEOUT),
        failed: (tx) => wrongStatus(p, jobId, tx, fx.Status.Settleable, fx.Status.DisputeWindow),
      };
      const settle: Contender = {
        send: () => p.escrow.connect(p.stranger).settle(jobId),
        succeeded: (tx) => expect(tx).to.emit(p.escrow, "JobSettled"),
        failed: (tx) =>
          wrongStatus(p, jobId, tx, fx.Status.DisputeWindow, fx.Status.Settleable, fx.Status.ArbiterTimedOut),
      };
      return { deadline, dispute, settle };
    }

    for (const offset of [-1n, 0n, 1n]) {
      const open = offset <= 0n;
      it(`dispute window at deadline${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${open ? "dispute succeeds, settle reverts with JobEscrowUnexpectedStatus(DisputeWindow)" : "dispute reverts with JobEscrowUnexpectedStatus(Settleable), settle succeeds"}`, async function () {
        const { deadline, dispute, settle } = await inWindow();
        await race(deadline + offset, dispute, settle, open);
      });
    }
  });

  describe("arbiter deadline (openedAt + 3 days is inclusive for the arbiter)", function () {
    async function disputed() {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const { jobId } = await fx.runToVerdict(p);
      await p.escrow.connect(p.client).dispute(jobId);
      const deadline = (await p.escrow.disputeOf(jobId)).openedAt + fx.ARBITER_TIMEOUT;
      const resolve: Contender = {
        send: () => p.escrow.connect(p.arbiter).resolveDispute(jobId, true),
        succeeded: (tx) => expect(tx).to.emit(p.escrow, "DisputeResolved").withArgs(jobId, p.arbiter.address, true),
        failed: (tx) => wrongStatus(p, jobId, tx, fx.Status.ArbiterTimedOut, fx.Status.Disputed),
      };
      const timeout: Contender = {
        send: () => p.escrow.connect(p.stranger).settle(jobId),
        succeeded: (tx) => expect(tx).to.emit(p.escrow, "ArbiterTimedOut").withArgs(jobId, p.stranger.address),
        failed: (tx) => wrongStatus(p, jobId, tx, fx.Status.Disputed, fx.Status.Settleable, fx.Status.ArbiterTimedOut),
      };
      return { deadline, resolve, timeout };
    }

    for (const offset of [-1n, 0n, 1n]) {
      const arbiterTime = offset <= 0n;
      it(`arbiter deadline${offset < 0n ? "-1" : offset > 0n ? "+1" : ""}: ${arbiterTime ? "resolveDispute succeeds, timeout settle reverts with JobEscrowUnexpectedStatus(Disputed)" : "resolveDispute reverts with JobEscrowUnexpectedStatus(ArbiterTimedOut), timeout settle succeeds"}`, async function () {
        const { deadline, resolve, timeout } = await disputed();
        await race(deadline + offset, resolve, timeout, arbiterTime);
      });
    }
  });
});
