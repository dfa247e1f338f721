import { expect } from "chai";
import { readdir } from "node:fs/promises";
import { createServer } from "node:net";
import { JsonRpcProvider, Network, Wallet } from "ethers";
import { connectRpc } from "../../agent/cli.ts";
import { parseFault } from "../../agent/faults.ts";
import { decodeCheckpoint, loadTemplate } from "../../workloads/index.ts";
import { assignedAgent, captureLogger, CPU_DEVICE, localProtocol, staked, startAgent, until } from "./helpers.ts";

/** A localhost port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

const ADDR = "0x" + "00".repeat(19) + "01";
const FAKE_DEPLOYMENT = { escrow: ADDR, registry: ADDR, usdc: ADDR, verifierSafe: ADDR } as Parameters<
  typeof startAgent
>[1];

describe("agent: RPC outage", function () {
  this.timeout(30_000);
  it("retries with backoff and logs 'chain unreachable' instead of crashing; stops cleanly", async function () {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const network = Network.from(31337n);
    const provider = new JsonRpcProvider(url, network, { staticNetwork: network });
    const agent = await startAgent(new Wallet(Wallet.createRandom().privateKey, provider), FAKE_DEPLOYMENT);
    const outage = () => agent.records.filter((r) => r.msg === "chain unreachable");
    await until("three retries", () => outage().length >= 3);
    const delays = outage().map((r) => r.retryInMs as number);
    expect(delays[1]).to.be.greaterThan(delays[0]);
    expect(outage()[0].level).to.equal("warn");
    const result = await agent.stop();
    expect(result.exitCode).to.equal(0);
    provider.destroy();
  });

  it("the CLI's RPC connection waits for the chain the same way", async function () {
    const { logger, records } = captureLogger();
    const controller = new AbortController();
    const connecting = connectRpc(`http://127.0.0.1:${await closedPort()}`, logger, controller.signal);
    await until("a retry", () => records.find((r) => r.msg === "chain unreachable"));
    controller.abort();
    expect(
      await connecting.then(
        () => "connected",
        () => "gave up",
      ),
    ).to.equal("gave up");
  });
});

describe("agent: on the local chain, faults and restarts", function () {
  this.timeout(60_000);
  let p: Awaited<ReturnType<typeof localProtocol>>;
  before(async () => {
    p = await localProtocol();
  });

  it("dry run decides without sending; waits for gas money ('fund <address>'), then registers; later starts send nothing, an update, a reactivation", async function () {
    const wallet = new Wallet(Wallet.createRandom().privateKey, p.ethers.provider as never);
    const once = { config: { once: true } };
    const dry = await startAgent(wallet, p.deployment, { config: { dryRun: true } });
    expect((await dry.done).exitCode).to.equal(0);
    expect(dry.records.find((r) => r.msg === "dry run: would send")?.calls).to.deep.equal(["register"]);
    expect(await p.registry.isActive(wallet.address)).to.equal(false);
    const poor = await startAgent(wallet, p.deployment, once);
    const ask = await until("funding request", () =>
      poor.records.find((r) => r.msg === `fund ${wallet.address} with ETH for gas`),
    );
    expect(ask.level).to.equal("warn");
    await (await p.owner.sendTransaction({ to: wallet.address, value: 10n ** 18n })).wait();
    expect((await poor.done).exitCode).to.equal(0);
    expect(poor.records.some((r) => r.msg === "registry register sent")).to.equal(true);

    const sent = (a: { records: { msg: string }[] }) =>
      a.records.filter((r) => r.msg.startsWith("registry ")).map((r) => r.msg);
    const same = await startAgent(wallet, p.deployment, once);
    await same.done;
    expect(sent(same)).to.deep.equal([]);
    const cheaper = await startAgent(wallet, p.deployment, { config: { once: true, pricePerStep: 800n } });
    await cheaper.done;
    expect(sent(cheaper)).to.deep.equal(["registry update sent"]);
    expect((await p.registry.providerOf(wallet.address)).pricePerStep).to.equal(800n);
    await (await p.registry.connect(wallet).deactivate()).wait();
    const back = await startAgent(wallet, p.deployment, { config: { once: true, pricePerStep: 800n } });
    await back.done;
    expect(sent(back)).to.deep.equal(["registry reactivate sent"]);
    expect(await p.registry.isActive(wallet.address)).to.equal(true);
  });

  it("declines a job with an unknown template (clear error, no crash, no job heartbeats) and keeps serving", async function () {
    const bogus = p.ethers.id("gpuchain/template/not-installed");
    await (await p.escrow.connect(p.owner).setTemplateApproval(bogus, true)).wait();
    const jobId = await p.createJob(8, 4, bogus);
    const wallet = await p.fundedWallet();
    const agent = await startAgent(wallet, p.deployment);
    try {
      await until("registration and stake", () => staked(p.registry, wallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
      const declined = await until("decline", () => agent.records.find((r) => r.msg.startsWith("declining job")));
      expect(declined).to.include({ level: "error", templateId: bogus, job: jobId.toString() });
      const next = await p.createJob(4, 4);
      await (await p.escrow.connect(p.coordinator).assign(next, wallet.address)).wait();
      await until("the next job's report", async () => (await p.escrow.jobOf(next)).pendingStep === 4n);
      expect(agent.beats.some((b) => b.jobId === jobId.toString())).to.equal(false);
    } finally {
      const result = await agent.stop();
      expect(result.exitCode).to.equal(0);
      expect(result.outcomes.get(`${jobId}:1`)).to.equal("declined");
    }
  });

  it("declines a job whose step does not fit the capped device memory", async function () {
    const jobId = await p.createJob(8, 4, loadTemplate("mnist-mlp").templateId);
    const wallet = await p.fundedWallet();
    const tiny = { ...CPU_DEVICE, memoryMiB: 1, capped: true };
    const agent = await startAgent(wallet, p.deployment, { config: { device: tiny } });
    try {
      await until("registration and stake", () => staked(p.registry, wallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
      const declined = await until("decline", () => agent.records.find((r) => r.msg.startsWith("declining job")));
      expect(declined).to.include({ level: "error", job: jobId.toString() });
    } finally {
      expect((await agent.stop()).outcomes.get(`${jobId}:1`)).to.equal("declined");
    }
  });

  it("write-after-fence: keeps writing at the old epoch; the chain rejects every write and the agent logs it", async function () {
    const jobId = await p.createJob(12, 4);
    const wallet = await p.fundedWallet();
    const agent = await startAgent(wallet, p.deployment, { fault: parseFault("write-after-fence") });
    try {
      await until("registration and stake", () => staked(p.registry, wallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
      await until("report", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      await (await p.escrow.connect(p.coordinator).unassign(jobId)).wait();
      const rejected = () => agent.records.filter((r) => r.msg === "write after fence rejected by the chain");
      await until("rejections", () => rejected().length >= 6, 10_000);
      expect(new Set(rejected().map((r) => r.what))).to.deep.equal(new Set(["reportCheckpoint", "heartbeat"]));
      expect(rejected().every((r) => String(r.reason).startsWith("JobEscrowStaleEpoch"))).to.equal(true);
      expect(agent.records.some((r) => String(r.msg).includes("ACCEPTED"))).to.equal(false);
      const reports = await p.escrow.queryFilter(p.escrow.filters.CheckpointReported(jobId, wallet.address));
      expect(reports.map((e) => Number(e.args.step))).to.deep.equal([4]);
      expect(agent.records[0].badges as string[]).to.include("Injected fault");
    } finally {
      await agent.stop();
    }
  });

  it("die-at:N kills the agent mid-interval: nothing is reported past the last interval", async function () {
    const jobId = await p.createJob(12, 4);
    const wallet = await p.fundedWallet();
    let diedAt = 0;
    const agent = await startAgent(wallet, p.deployment, {
      fault: parseFault("die-at:6"),
      deps: {
        die: (s) => {
          diedAt = s;
        },
      },
    });
    await until("registration and stake", () => staked(p.registry, wallet.address));
    await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
    const result = await agent.done;
    expect(result.exitCode).to.equal(137);
    expect(diedAt).to.equal(6);
    const reports = await p.escrow.queryFilter(p.escrow.filters.CheckpointReported(jobId, wallet.address));
    expect(reports.map((e) => Number(e.args.step))).to.deep.equal([4]);
  });

  it("a restarted agent rebuilds from the chain and resumes from the last accepted checkpoint", async function () {
    const jobId = await p.createJob(12, 4);
    const { wallet, agent: first } = await assignedAgent(p, jobId);
    await until("report 4", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
    await p.decide(jobId, true);
    await until("report 8", async () => (await p.escrow.jobOf(jobId)).pendingStep === 8n);
    expect((await first.stop()).exitCode).to.equal(0);
    const accepted4 = (await p.escrow.jobOf(jobId)).acceptedHash;
    // The pending checkpoint at 8 is discarded by the unassign; the job comes back to the same provider (epoch 3).
    await (await p.escrow.connect(p.coordinator).unassign(jobId)).wait();
    await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();

    const second = await startAgent(wallet, p.deployment, { store: first.store, config: { once: true } });
    for (const step of [8n, 12n]) {
      await until(`report ${step}`, async () => (await p.escrow.jobOf(jobId)).pendingStep === step);
      if (step === 8n) {
        const c = decodeCheckpoint(await second.store.get((await p.escrow.jobOf(jobId)).pendingHash));
        expect(c.startStep).to.equal(4);
        expect(c.prevCheckpointHash).to.equal(accepted4);
      }
      await p.decide(jobId, true);
    }
    const result = await second.done;
    expect(result.exitCode).to.equal(0);
    expect(result.outcomes.get(`${jobId}:3`)).to.equal("done");
    expect(second.records.some((r) => r.msg === "registered offer unchanged; nothing sent")).to.equal(true);
    expect((await p.escrow.jobOf(jobId)).acceptedStep).to.equal(12n);
  });

  it("stopping mid-segment abandons the step: exit 0, nothing reported, no partial files", async function () {
    const jobId = await p.createJob(4000, 2000);
    const { agent } = await assignedAgent(p, jobId);
    await until("training", () => agent.beats.some((b) => b.jobId === jobId.toString() && b.step > 0));
    const result = await agent.stop();
    expect(result.exitCode).to.equal(0);
    expect(result.outcomes.get(`${jobId}:1`)).to.equal("stopped");
    expect((await p.escrow.jobOf(jobId)).pendingStep).to.equal(0n);
    const files = await readdir(agent.store.dir).catch(() => [] as string[]);
    expect(files.filter((f) => f.endsWith(".tmp"))).to.deep.equal([]);
  });
});
