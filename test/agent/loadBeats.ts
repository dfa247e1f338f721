// A newly assigned agent beats for its job while the job's trainer loads (bench/soak.ts: an agent that beat only
// once loaded outlasted the coordinator's first-beat grace at high load), and the data set load lets beats through.
import { expect } from "chai";
import { loadDataset, loadDatasetAsync } from "../../workloads/data.ts";
import { createTrainer, loadTemplate, type Template } from "../../workloads/index.ts";
import type { SignedHeartbeat } from "../../sdk/rules/heartbeat.ts";
import { assignedAgent, localProtocol, until } from "./helpers.ts";

describe("agent: heartbeats while the trainer loads", function () {
  this.timeout(120_000);

  it("beats for the assigned job before its trainer is ready, then trains it", async function () {
    const p = await localProtocol();
    const jobId = await p.createJob(8, 4);
    let beats: SignedHeartbeat[] = [];
    const forJob = () => beats.some((b) => b.jobId === jobId.toString());
    // The trainer becomes ready only after a beat for the job went out: an agent that beats once loaded waits forever.
    const trainerFactory = async (t: Template, o?: Parameters<typeof createTrainer>[1]) => {
      await until("a heartbeat for the job while its trainer loads", forJob, 20_000);
      return createTrainer(t, o);
    };
    const { agent } = await assignedAgent(p, jobId, { deps: { trainerFactory } });
    beats = agent.beats;
    try {
      await until("a report", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n, 60_000);
      const first = agent.beats.find((b) => b.jobId === jobId.toString())!;
      expect(first.step).to.equal(0);
      expect(first.epoch).to.equal("1");
    } finally {
      await agent.stop();
    }
  });

  it("the MNIST data set loads a digit file per turn of the event loop, into the same bytes", async function () {
    const spec = loadTemplate("mnist-mlp").descriptor.data;
    let turns = 0;
    let loading = true;
    const turn = () => {
      turns++;
      if (loading) setImmediate(turn);
    };
    setImmediate(turn);
    const ds = await loadDatasetAsync(spec, false);
    loading = false;
    expect(turns).to.be.at.least(10);
    const sync = loadDataset(spec);
    expect(ds.trainCount).to.equal(sync.trainCount);
    expect(Buffer.from(ds.trainX.buffer).equals(Buffer.from(sync.trainX.buffer))).to.equal(true);
    expect(Buffer.from(ds.trainY.buffer).equals(Buffer.from(sync.trainY.buffer))).to.equal(true);
    expect(Buffer.from(ds.heldoutX.buffer).equals(Buffer.from(sync.heldoutX.buffer))).to.equal(true);
    expect(Buffer.from(ds.heldoutY.buffer).equals(Buffer.from(sync.heldoutY.buffer))).to.equal(true);
  });
});
