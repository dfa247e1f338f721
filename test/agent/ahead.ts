// The provider never waits on the protocol. The agent trains ahead while a checkpoint is pending (a
// bounded queue of finished segments), reports the next one as soon as the chain takes it, and when the checkpoint
// under its queued work is refused, drops that work and retrains from the accepted checkpoint.
import { expect } from "chai";
import { MAX_AHEAD } from "../../agent/decide.ts";
import { decodeCheckpoint, ZERO_HASH } from "../../workloads/index.ts";
import {
  assignedAgent,
  localProtocol,
  startAgent,
  staked,
  until,
  type LocalProtocol,
  type RunningAgent,
} from "./helpers.ts";

const stored = (a: RunningAgent) => a.records.filter((r) => r.msg === "checkpoint stored").map((r) => Number(r.step));
const trained = (a: RunningAgent) =>
  Math.max(0, ...a.records.filter((r) => r.msg === "trained").map((r) => Number(r.step)));
const dump = (a: RunningAgent) => {
  if (process.env.AGENT_LOGS) for (const r of a.records) if (r.msg !== "trained") console.log(JSON.stringify(r));
};

describe("agent: training ahead of the chain", function () {
  this.timeout(60_000);
  let p: LocalProtocol;
  before(async function () {
    p = await localProtocol();
  });

  it("queues at most MAX_AHEAD segments while its checkpoint is pending and reports the next once it is accepted", async function () {
    const jobId = await p.createJob(20, 4);
    const { agent } = await assignedAgent(p, jobId, { config: { stepLog: true } });
    try {
      await until("report 4", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      // Undecided: the agent trains on (8, 12) and then waits with the queue full, not beyond.
      await until("queue full", () => stored(agent).length === 1 + MAX_AHEAD);
      await new Promise((r) => setTimeout(r, 500));
      expect(stored(agent)).to.deep.equal([4, 8, 12]);
      expect(trained(agent)).to.equal(12);
      expect((await p.escrow.jobOf(jobId)).pendingStep).to.equal(4n);
      for (const step of [4n, 8n, 12n, 16n, 20n]) {
        await until(`report ${step}`, async () => (await p.escrow.jobOf(jobId)).pendingStep === step);
        const job = await p.escrow.jobOf(jobId);
        const c = decodeCheckpoint(await agent.store.get(job.pendingHash));
        const prev = job.acceptedStep === 0n ? ZERO_HASH : job.acceptedHash;
        expect([c.startStep, c.prevCheckpointHash]).to.deep.equal([Number(step) - 4, prev]);
        await p.decide(jobId, true);
        await until(`noticed ${step}`, () =>
          agent.records.find((r) => r.msg === "checkpoint accepted" && r.step === Number(step)),
        );
      }
      const record = await until("training record", () => agent.records.find((r) => r.msg === "training record"));
      expect(record).to.include({ finished: true, dropped: 0, trainedSteps: 20, segments: 5 });
    } finally {
      await agent.stop();
      dump(agent);
    }
  });

  it("a refusal of the checkpoint under the queued work drops it and retrains from the accepted checkpoint", async function () {
    const jobId = await p.createJob(20, 4);
    // alice reports 4 and goes away; her checkpoint stays decidable on her epoch.
    const { agent: alice } = await assignedAgent(p, jobId);
    await until("alice's report 4", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
    await alice.stop();
    await (await p.escrow.connect(p.coordinator).unassign(jobId)).wait();
    const bobWallet = await p.fundedWallet();
    const bob = await startAgent(bobWallet, p.deployment, { store: alice.store, config: { stepLog: true } });
    try {
      await until("bob staked", () => staked(p.registry, bobWallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, bobWallet.address)).wait();
      // bob builds on alice's undecided 4: 8 and 12 trained ahead and queued.
      await until("bob's queue full", () => stored(bob).length === MAX_AHEAD);
      expect(stored(bob)).to.deep.equal([8, 12]);
      await p.decide(jobId, false); // alice's 4 refused: bob's 8 and 12 were built on it
      await until("drop", () => bob.records.find((r) => r.msg.startsWith("dropping segments trained ahead")));
      await until("bob's report 4", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      const job = await p.escrow.jobOf(jobId);
      expect(job.pendingProvider).to.equal(bobWallet.address);
      const c = decodeCheckpoint(await bob.store.get(job.pendingHash));
      expect([c.startStep, c.step]).to.deep.equal([0, 4]);
      await p.decide(jobId, true);
      await until("bob's report 8", async () => (await p.escrow.jobOf(jobId)).pendingStep === 8n);
      const eight = decodeCheckpoint(await bob.store.get((await p.escrow.jobOf(jobId)).pendingHash));
      expect(eight.prevCheckpointHash).to.equal((await p.escrow.jobOf(jobId)).acceptedHash);
      const reports = await p.escrow.queryFilter(p.escrow.filters.CheckpointReported(jobId, bobWallet.address));
      expect(reports.map((e) => Number(e.args.step))).to.deep.equal([4, 8]);
    } finally {
      await bob.stop();
      dump(bob);
    }
  });
});
