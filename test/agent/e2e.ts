import { expect } from "chai";
import { checkHeartbeat } from "../../sdk/rules/heartbeat.ts";
import {
  createTrainer,
  decodeCheckpoint,
  replayCommittedStep,
  sampleSteps,
  type Trainer,
} from "../../workloads/index.ts";
import { BLOBS, localProtocol, staked, startAgent, until } from "./helpers.ts";

describe("agent: end to end on the local chain", function () {
  this.timeout(60_000);
  let p: Awaited<ReturnType<typeof localProtocol>>;
  let verifierTrainer: Trainer;
  before(async function () {
    p = await localProtocol();
    verifierTrainer = await createTrainer(BLOBS);
  });
  after(async () => verifierTrainer.close());

  it("registers, trains, reports, continues after acceptance and stops writing once unassigned (fenced)", async function () {
    const { escrow, registry, coordinator } = p;
    const jobId = await p.createJob(12, 4);
    const wallet = await p.fundedWallet();
    const agent = await startAgent(wallet, p.deployment);
    try {
      await until("registration and stake", () => staked(registry, wallet.address));
      expect((await registry.providerOf(wallet.address)).pricePerStep).to.equal(900n);
      await (await escrow.connect(coordinator).assign(jobId, wallet.address)).wait();

      // First checkpoint: reported at step 4, blob in the store, honest (sampled replay matches).
      await until("first report", async () => (await escrow.jobOf(jobId)).pendingStep === 4n);
      const first = await escrow.jobOf(jobId);
      const c = decodeCheckpoint(await agent.store.get(first.pendingHash));
      expect(c.step).to.equal(4);
      expect(c.stepHashes).to.have.length(4);
      for (const step of sampleSteps("0x" + "77".repeat(32), 0, 4, 2)) {
        expect((await replayCommittedStep(verifierTrainer, agent.store, c, step)).ok, `step ${step}`).to.equal(true);
      }
      await p.decide(jobId, true);

      // The agent continues from the accepted checkpoint: the next one links to it.
      await until("second report", async () => (await escrow.jobOf(jobId)).pendingStep === 8n);
      const second = decodeCheckpoint(await agent.store.get((await escrow.jobOf(jobId)).pendingHash));
      expect(second.prevCheckpointHash).to.equal(first.pendingHash);
      expect(second.startStep).to.equal(4);

      // The on-chain lease is extended by the agent's heartbeat(job, epoch) too, not only by reports.
      await until(
        "an on-chain heartbeat",
        async () => (await escrow.queryFilter(escrow.filters.LeaseExtended(jobId, wallet.address))).length > 0,
      );

      // The coordinator unassigns: epoch 1 -> 2. The agent notices and stops writing.
      const tx = await escrow.connect(coordinator).unassign(jobId);
      const unassignedAt = (await tx.wait())!.blockNumber;
      await until("fenced log", () => agent.records.find((r) => r.msg.startsWith("fenced")));
      await new Promise((r) => setTimeout(r, 400));
      const reports = await escrow.queryFilter(escrow.filters.CheckpointReported(jobId, wallet.address));
      expect(reports.map((e) => Number(e.args.step))).to.deep.equal([4, 8]);
      expect(reports.every((e) => e.blockNumber < unassignedAt)).to.equal(true);
      const leases = await escrow.queryFilter(escrow.filters.LeaseExtended(jobId, wallet.address), unassignedAt);
      expect(leases).to.have.length(0);
      // The agent's last report stays its own and decidable on its epoch (pay cannot be redirected).
      const after = await escrow.jobOf(jobId);
      expect([after.pendingStep, after.pendingProvider, after.pendingEpoch]).to.deep.equal([8n, wallet.address, 1n]);

      // Heartbeats: signed, for the job at epoch 1 while working, idle (job 0) once fenced.
      const { chainId } = await p.ethers.provider.getNetwork();
      const working = agent.beats.filter((b) => b.jobId === jobId.toString());
      expect(working.length).to.be.greaterThan(0);
      expect(working.every((b) => b.epoch === "1")).to.equal(true);
      const scope = { chainId: chainId.toString(), escrow: String(escrow.target) };
      expect(checkHeartbeat(working[0], scope, Date.now(), undefined)).to.deep.equal({ ok: true });
      // The beat names its deployment: the same beat does not count for another escrow on this chain.
      const other = { ...scope, escrow: wallet.address };
      expect(checkHeartbeat(working[0], other, Date.now(), undefined)).to.deep.include({ ok: false });
      await until("idle beat", () => agent.beats.slice(-1)[0]?.jobId === "0");
    } finally {
      const result = await agent.stop();
      if (process.env.AGENT_LOGS) for (const r of agent.records) console.log(JSON.stringify(r));
      expect(result.exitCode).to.equal(0);
      expect(result.outcomes.get(`${jobId}:1`)).to.equal("fenced");
    }
  });
});
