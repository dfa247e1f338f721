/** sdk/rules/ledger.ts as a pure function: hand-written events, no chain. */
import { expect } from "chai";
import { JobStatus, foldEscrowEvents, statusAt, walletOf, type EscrowEvent } from "../../sdk/rules/ledger.ts";

const A = (n: number) => "0x" + n.toString(16).padStart(40, "0");
const [client, p1, p2, fee] = [A(1), A(2), A(3), A(4)];
const H = (n: number) => "0x" + n.toString(16).padStart(64, "0");

let block = 0;
const ev = (eventName: string, args: Record<string, unknown>): EscrowEvent => ({
  eventName,
  args,
  blockNumber: ++block,
  index: 0,
});

function history(): EscrowEvent[] {
  block = 0;
  return [
    ev("FeeRecipientSet", { feeRecipient: fee }),
    ev("JobCreated", {
      jobId: 1n,
      client,
      templateId: H(9),
      seed: H(8),
      totalSteps: 20n,
      checkpointInterval: 10n,
      maxPricePerStep: 1_000n,
      budget: 30_000n,
      disputeWindow: 60n,
    }),
    ev("ProviderAssigned", {
      jobId: 1n,
      provider: p1,
      epoch: 1n,
      pricePerStep: 900n,
      resumeStep: 0n,
      resumeHash: H(0),
      leaseExpiresAt: 100n,
    }),
    ev("CheckpointReported", { jobId: 1n, provider: p1, epoch: 1n, step: 10n, checkpointHash: H(10) }),
    ev("CheckpointAccepted", {
      jobId: 1n,
      provider: p1,
      epoch: 1n,
      step: 10n,
      checkpointHash: H(10),
      stepsCredited: 10n,
      amount: 9_000n,
    }),
    ev("ProviderUnassigned", { jobId: 1n, provider: p1, newEpoch: 2n, reason: 1n, by: A(7) }),
    ev("ProviderAssigned", {
      jobId: 1n,
      provider: p2,
      epoch: 3n,
      pricePerStep: 1_000n,
      resumeStep: 10n,
      resumeHash: H(10),
      leaseExpiresAt: 200n,
    }),
    ev("CheckpointReported", { jobId: 1n, provider: p2, epoch: 3n, step: 20n, checkpointHash: H(20) }),
    ev("CheckpointAccepted", {
      jobId: 1n,
      provider: p2,
      epoch: 3n,
      step: 20n,
      checkpointHash: H(20),
      stepsCredited: 10n,
      amount: 10_000n,
    }),
    ev("VerdictSubmitted", {
      jobId: 1n,
      modelHash: H(20),
      metric: 9_000n,
      passed: true,
      disputeDeadline: 1_060n,
      newEpoch: 4n,
    }),
    ev("DisputeOpened", { jobId: 1n, client, bond: 50n, arbiterDeadline: 260_200n }),
    ev("DisputeResolved", { jobId: 1n, arbiter: A(5), upheld: false }),
    ev("JobSettled", { jobId: 1n, refund: 11_000n, providersPaid: 19_000n, bondReturned: 0n, bondForfeited: 50n }),
    ev("EarningsReleased", { jobId: 1n, provider: p1, amount: 9_000n }),
    ev("Withdrawn", { account: p1, amount: 9_000n }),
  ];
}

describe("sdk/ledger: foldEscrowEvents (pure)", function () {
  it("foldEscrowEvents: rebuilds a job with a fail-over, a rejected dispute and payouts", function () {
    const l = foldEscrowEvents(history());
    const job = l.jobs.get(1n)!;
    expect(job.phase).to.equal(JobStatus.Settled);
    expect([job.epoch, job.acceptedStep, job.paid]).to.deep.equal([4n, 20, 19_000n]);
    expect(job.earnings.get(p2)).to.equal(10_000n);
    expect(job.earnings.get(p1)).to.equal(0n);
    expect(job.history.map((h) => h.event)[0]).to.equal("JobCreated");
    expect(l.withdrawable.get(client)).to.equal(11_000n);
    expect(l.withdrawable.get(fee)).to.equal(50n);
    expect(l.withdrawable.get(p1)).to.equal(0n);
    expect([l.totalLocked, l.totalBonds, l.totalWithdrawable]).to.deep.equal([10_000n, 0n, 11_050n]);
    expect([l.held, l.owes]).to.deep.equal([30_000n + 50n - 9_000n, 10_000n + 11_050n]);
    expect(walletOf(l, p2)).to.deep.equal({
      withdrawable: 0n,
      withdrawn: 0n,
      claimable: [{ jobId: 1n, amount: 10_000n }],
      pending: [],
    });
    expect(walletOf(l, p1).withdrawn).to.equal(9_000n);
  });

  it("foldEscrowEvents: the order of the input does not matter (sorted by block and log index)", function () {
    const events = history();
    const shuffled = [...events].reverse();
    expect(foldEscrowEvents(shuffled).owes).to.equal(foldEscrowEvents(events).owes);
    expect(foldEscrowEvents(shuffled).withdrawable).to.deep.equal(foldEscrowEvents(events).withdrawable);
  });

  it("foldEscrowEvents: an upheld dispute voids every provider's earnings and refunds budget and bond", function () {
    const events = history().slice(0, 11);
    events.push(ev("DisputeResolved", { jobId: 1n, arbiter: A(5), upheld: true }));
    events.push(
      ev("JobSettled", { jobId: 1n, refund: 30_000n, providersPaid: 0n, bondReturned: 50n, bondForfeited: 0n }),
    );
    const l = foldEscrowEvents(events);
    const job = l.jobs.get(1n)!;
    expect(job.paid).to.equal(0n);
    expect(job.earnings.size).to.equal(0);
    expect(l.withdrawable.get(client)).to.equal(30_050n);
    expect([l.totalLocked, l.totalBonds]).to.deep.equal([0n, 0n]);
  });

  it("foldEscrowEvents: throws when a job's events come without its JobCreated (books would be wrong)", function () {
    const events = history().filter((e) => e.eventName !== "JobCreated");
    expect(() => foldEscrowEvents(events)).to.throw(/before its JobCreated/);
  });

  it("statusAt: derives DisputeWindow/Settleable and Disputed/ArbiterTimedOut from the deadlines, inclusive", function () {
    const beforeDispute = foldEscrowEvents(history().slice(0, 10)).jobs.get(1n)!;
    expect(statusAt(beforeDispute, 1_060n)).to.equal(JobStatus.DisputeWindow);
    expect(statusAt(beforeDispute, 1_061n)).to.equal(JobStatus.Settleable);
    const disputed = foldEscrowEvents(history().slice(0, 11)).jobs.get(1n)!;
    expect(statusAt(disputed, 260_200n)).to.equal(JobStatus.Disputed);
    expect(statusAt(disputed, 260_201n)).to.equal(JobStatus.ArbiterTimedOut);
  });
});
