/**
 * The provider agent (agent/agent.ts, agent/work.ts) across reorganisations on a real anvil node: the
 * protocol deployed through Ignition, the agent in-process with its real trainer (blobs-tiny), decisions signed by
 * two of the verifier Safe's owners.
 * - A report it made, removed by a reorganisation of depth 1, 2 or 3 (its transaction is no longer on chain): it
 *   reports the same checkpoint again and keeps the segments trained on it (before: it took the report for refused,
 *   dropped that work and trained it again).
 * - An acceptance removed together with the report built on it: the checkpoint is pending again, and once accepted
 *   again the agent reports the next one, trained on that surviving accepted hash, without retraining.
 * - The final acceptance and the final report removed after the agent had finished the job: it takes the job up
 *   again and reports the final checkpoint again (before: it skipped a job it had finished at that epoch for good).
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { readLogs } from "../../sdk/node/logRange.ts";
import { anvilProtocol, mine, type AnvilProtocol } from "../helpers/anvilChain.ts";
import { startAgent, staked, until, type RunningAgent } from "./helpers.ts";

describe("agent: across reorganisations (anvil)", function () {
  this.timeout(240_000);
  let p: AnvilProtocol;

  before(async function () {
    p = await anvilProtocol("agent-reorg");
  });
  after(async () => p?.stop());

  const escrow = () => p.as(TEST_KEYS.client).escrow;
  const job = (jobId: bigint) => escrow().jobOf(jobId);
  const msgs = (a: RunningAgent, msg: string) => a.records.filter((r) => r.msg.startsWith(msg));
  const stored = (a: RunningAgent) => msgs(a, "checkpoint stored").map((r) => Number(r.step));

  /** A job of `steps` steps (interval 4) assigned to a new agent (registered and staked by itself). */
  async function agentOn(steps: number): Promise<{ jobId: bigint; agent: RunningAgent }> {
    const jobId = await p.createJob(steps, 4);
    const wallet = new Wallet(Wallet.createRandom().privateKey, p.chain);
    await p.chain.send("anvil_setBalance", [wallet.address, "0x56BC75E2D63100000"]);
    const agent = await startAgent(wallet, p.deployment, { config: { stepLog: true } });
    const { registry } = p.as(TEST_KEYS.client);
    await until("registration and stake", () => staked(registry, wallet.address));
    await (await p.as(TEST_KEYS.coordinator).escrow.assign(jobId, wallet.address)).wait();
    return { jobId, agent };
  }

  /** The block of the job's last CheckpointReported for `step` on the chain as it is now. */
  async function reportBlock(jobId: bigint, step: number): Promise<number> {
    const e = escrow();
    const topics = [e.interface.getEvent("CheckpointReported")!.topicHash, "0x" + jobId.toString(16).padStart(64, "0")];
    const logs = await readLogs(p.chain, { address: p.deployment.escrow, topics }, 0, await p.chain.getBlockNumber());
    const at = logs.filter((l) => Number(e.interface.parseLog(l)!.args.step) === step).at(-1);
    if (!at) throw new Error(`no report of step ${step}`);
    return at.blockNumber;
  }

  const pendingAt = (jobId: bigint, step: number) => async () => Number((await job(jobId)).pendingStep) === step;

  /** Accepts each pending checkpoint up to `last`, waiting for the agent to report it. */
  async function acceptUpTo(jobId: bigint, agent: RunningAgent, from: number, last: number) {
    for (let step = from; step <= last; step += 4) {
      await until(`report ${step}`, pendingAt(jobId, step));
      await p.decide(jobId, true);
      await until(`noticed ${step}`, () => msgs(agent, "checkpoint accepted").find((r) => r.step === step));
    }
  }

  for (const depth of [1, 2, 3]) {
    it(`a report removed by a reorg of depth ${depth}: reported again as it is, the work trained on it kept`, async function () {
      const { jobId, agent } = await agentOn(16);
      try {
        await until("report 4", pendingAt(jobId, 4));
        const { pendingHash } = await job(jobId);
        await until("segments trained ahead on it", () => stored(agent).includes(12));
        const reported = await reportBlock(jobId, 4);
        await mine(p.chain, reported + depth - 1 - (await p.chain.getBlockNumber()));
        expect(await p.reorgFrom(reported)).to.equal(depth);
        expect((await job(jobId)).pendingStep, "the report is gone").to.equal(0n);

        await until("reported again", pendingAt(jobId, 4));
        expect((await job(jobId)).pendingHash).to.equal(pendingHash);
        await acceptUpTo(jobId, agent, 4, 16);
        const record = await until("training record", () => msgs(agent, "training record")[0]);
        expect(msgs(agent, "dropping segments trained ahead"), "nothing dropped").to.deep.equal([]);
        expect(record, "every step trained once").to.include({ finished: true, dropped: 0, trainedSteps: 16 });
        expect(msgs(agent, "report removed by a chain reorganisation")).to.have.length(1);
      } finally {
        await agent.stop();
      }
    });
  }

  it("an acceptance removed with the report built on it: pending again, then the next report on the surviving hash", async function () {
    const { jobId, agent } = await agentOn(12);
    try {
      await until("report 4", pendingAt(jobId, 4));
      const acceptedAt = await p.decide(jobId, true);
      const accepted = (await job(jobId)).acceptedHash;
      await until("report 8", pendingAt(jobId, 8));
      const eight = (await job(jobId)).pendingHash;
      await p.reorgFrom(acceptedAt);
      const now = await job(jobId);
      expect([now.acceptedStep, now.pendingStep], "4 pending again, 8 gone").to.deep.equal([0n, 4n]);
      await p.decide(jobId, true);
      expect((await job(jobId)).acceptedHash, "the same checkpoint accepted again").to.equal(accepted);
      await until("report 8 again", pendingAt(jobId, 8));
      expect((await job(jobId)).pendingHash, "the same segment, on the surviving accepted hash").to.equal(eight);
      await acceptUpTo(jobId, agent, 8, 12);
      const record = await until("training record", () => msgs(agent, "training record")[0]);
      expect(record, "nothing trained twice").to.include({ finished: true, dropped: 0, trainedSteps: 12 });
      expect(msgs(agent, "report removed by a chain reorganisation")).to.have.length(1);
    } finally {
      await agent.stop();
    }
  });

  it("the final acceptance and report removed after the job was finished: taken up again, the final report made again", async function () {
    const { jobId, agent } = await agentOn(8);
    try {
      await acceptUpTo(jobId, agent, 4, 8);
      await until("job complete", () => msgs(agent, "job complete").length > 0);
      const final = (await job(jobId)).acceptedHash;
      await p.reorgFrom(await reportBlock(jobId, 8));
      const now = await job(jobId);
      expect([now.acceptedStep, now.pendingStep]).to.deep.equal([4n, 0n]);

      await until("the final report again", pendingAt(jobId, 8), 20_000);
      expect((await job(jobId)).pendingHash).to.equal(final);
      await p.decide(jobId, true);
      await until("complete again", () => msgs(agent, "job complete").length > 1);
    } finally {
      await agent.stop();
    }
  });
});
