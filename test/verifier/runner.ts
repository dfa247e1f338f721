import { expect } from "chai";
import { mkdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { recoverSafeSigner } from "../../sdk/rules/verifierSignatures.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { blobHash, FsBackend, loadTemplate } from "../../workloads/index.ts";
import { blobsOf, guardBlobs } from "../../agent/blobs.ts";
import type { JobFacts } from "../../verifier/checks.ts";
import type { SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { JobStatus as STATUS, type RawJob as JobRecord } from "../../sdk/rules/job.ts";
import { runVerifier, Verifier, type BehaviourName as Behaviour, type EscrowReader } from "../../verifier/verifier.ts";
import type { SignatureBody } from "../../verifier/work.ts";
import { rawJob } from "../helpers/jobs.ts";
import { hardhatWallet, Provider, seedOf, TEST_MAKER } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";

const CHAIN_ID = 31337n;
const ESCROW = hardhatWallet(20).address;
const SAFE = hardhatWallet(21).address;

/** An in-memory escrow: jobs with a status, read the way the verifier reads the real one. */
class FakeChain implements EscrowReader {
  jobs: { status: number; job: JobRecord }[] = [];
  reads = 0;
  async jobCount() {
    this.reads++;
    return BigInt(this.jobs.length);
  }
  async jobOf(id: bigint) {
    return this.jobs[Number(id) - 1].job;
  }
  async statusOf(id: bigint) {
    return BigInt(this.jobs[Number(id) - 1].status);
  }
}

class Collector implements SignaturePoster {
  bodies: SignatureBody[] = [];
  down = false;
  async post(body: SignatureBody) {
    if (this.down) throw new Error("collector down");
    this.bodies.push(body);
  }
}

const ZERO = "0x" + "00".repeat(32);

describe("verifier runner: tick, re-send, restart, modes", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-verifier-runner-", template);
  let provider: Provider;

  before(() => {
    provider = new Provider(scratch.trainer, scratch.store);
  });

  function record(facts: JobFacts, over: Partial<JobRecord> = {}): JobRecord {
    return rawJob({
      epoch: 1n,
      templateId: facts.templateId,
      seed: facts.seed,
      totalSteps: 20n,
      acceptedStep: BigInt(facts.acceptedStep),
      acceptedHash: facts.acceptedHash,
      pendingStep: 0n,
      pendingHash: ZERO,
      provider: TEST_MAKER,
      ...over,
    });
  }

  /** A chain with one Running job whose checkpoint 10→20 of `kind` is pending. */
  async function pendingJob(seedIndex: number, kind: Parameters<Provider["produce"]>[2] = "honest") {
    const facts = await provider.acceptedJob(seedOf(seedIndex), 10);
    const { report } = await provider.produce(facts, 20, kind);
    const chain = new FakeChain();
    chain.jobs.push({
      status: STATUS.Running,
      job: record(facts, { pendingStep: BigInt(report.step), pendingHash: report.hash }),
    });
    return { chain, report, facts };
  }

  function verifier(
    chain: EscrowReader,
    opts: {
      behaviour?: Behaviour;
      dryRun?: boolean;
      file?: string;
      collector?: Collector;
      now?: () => number;
      lines?: string[];
    } = {},
  ) {
    const wallet = hardhatWallet(3);
    const collector = opts.collector ?? new Collector();
    const lines = opts.lines ?? [];
    const log = createLogger({ component: "verifier", write: (l) => lines.push(l) });
    const v = new Verifier(
      {
        chainId: CHAIN_ID,
        escrow: ESCROW,
        safe: SAFE,
        samples: 2,
        behaviour: opts.behaviour ?? "honest",
        dryRun: opts.dryRun ?? false,
        pollMs: 5,
        missingBlobGraceMs: 1_000,
      },
      {
        chain,
        signer: wallet,
        store: scratch.store,
        collector,
        decisions: new DecisionStore(wallet.address, opts.file),
        log,
        now: opts.now,
      },
    );
    return { v, collector, lines, wallet };
  }

  /**
   * The grace boundary (missingBlobGraceMs = 1,000 here): waiting (not abstaining) at 0 and 999 ms, a refusal
   * signed and posted at 1,000 ms.
   */
  async function expectRefusedAtGrace(chain: FakeChain) {
    let now = 0;
    const { v, collector } = verifier(chain, { now: () => now });
    expect(await v.tick()).to.include({ waiting: 1, posted: 0, abstaining: 0 });
    now = 999;
    expect(await v.tick()).to.include({ waiting: 1, posted: 0 });
    now = 1_000;
    expect(await v.tick()).to.include({ decided: 1, posted: 1 });
    expect(collector.bodies[0].message).to.include({ accept: false });
    await v.close();
  }

  it("decides a pending checkpoint once, signs it as a Safe owner, and logs one line with the decision's figures", async function () {
    const { chain, report } = await pendingJob(1);
    const { v, collector, lines, wallet } = verifier(chain);
    const s = await v.tick();
    expect(s).to.include({ items: 1, decided: 1, posted: 1, errors: 0 });
    const body = collector.bodies[0];
    expect(body.kind).to.equal("checkpoint");
    expect(body.message).to.deep.equal({ jobId: "1", epoch: "1", step: 20, checkpointHash: report.hash, accept: true });
    expect(body.signer).to.equal(wallet.address);
    // The SafeMessage definition itself is checked against protocol-kit in test/keepers/collector.ts.
    expect(recoverSafeSigner(CHAIN_ID, SAFE, body.digest, body.signature)).to.equal(wallet.address);
    const line = JSON.parse(lines.find((l) => l.includes("checkpoint decided"))!);
    expect(line).to.include({ job: "1", epoch: "1", step: 20, action: "accept", behaviour: "honest" });
    expect(line).to.have.keys(
      "t",
      "level",
      "component",
      "msg",
      "job",
      "epoch",
      "step",
      "hash",
      "action",
      "reasons",
      "notes",
      "accuracy",
      "loss",
      "baselineAccuracy",
      "replayedSteps",
      "intervalSteps",
      "fullReplay",
      "cpuMs",
      "trainingCpuMs",
      "computeRatio",
      "behaviour",
      "dryRun",
    );
    await v.close();
  });

  it("re-sends the same signature every tick while the decision is pending, without deciding again", async function () {
    const { chain } = await pendingJob(2);
    const { v, collector } = verifier(chain);
    await v.tick();
    const s = await v.tick();
    expect(s).to.include({ decided: 0, posted: 1 });
    expect(collector.bodies).to.have.length(2);
    expect(collector.bodies[1]).to.deep.equal(collector.bodies[0]);
    await v.close();
  });

  it("keeps the decision while the collector is down and sends it once the collector is back", async function () {
    const { chain } = await pendingJob(3);
    const collector = new Collector();
    collector.down = true;
    const { v } = verifier(chain, { collector });
    expect(await v.tick()).to.include({ decided: 1, posted: 0, errors: 1 });
    collector.down = false;
    expect(await v.tick()).to.include({ decided: 0, posted: 1, errors: 0 });
    await v.close();
  });

  it("stops sending once the decision is on chain, and ignores the report after the epoch moved on", async function () {
    const { chain, report, facts } = await pendingJob(4);
    const { v, collector } = verifier(chain);
    await v.tick();
    chain.jobs[0].job = record(facts, { epoch: 2n }); // refused elsewhere / fenced: epoch moved, nothing pending
    expect(await v.tick()).to.include({ items: 0, posted: 0 });
    chain.jobs[0].job = record(facts, { epoch: 2n, acceptedStep: 20n, acceptedHash: report.hash, totalSteps: 40n });
    expect(await v.tick()).to.include({ items: 0, posted: 0 });
    expect(collector.bodies).to.have.length(1);
    await v.close();
  });

  it("in dry-run decides and logs but posts nothing", async function () {
    const { chain } = await pendingJob(5, "garbage-weights");
    const { v, collector, lines } = verifier(chain, { dryRun: true });
    expect(await v.tick()).to.include({ decided: 1, posted: 0 });
    expect(collector.bodies).to.deep.equal([]);
    expect(JSON.parse(lines.find((l) => l.includes("checkpoint decided"))!)).to.include({
      action: "refuse",
      dryRun: true,
    });
    await v.close();
  });

  it("after a restart re-sends the decision from its file without verifying again", async function () {
    const { chain } = await pendingJob(6);
    const file = join(scratch.dir, "decisions-6.json");
    const first = verifier(chain, { file });
    await first.v.tick();
    await first.v.close();
    const restarted = verifier(chain, { file });
    expect(await restarted.v.tick()).to.include({ decided: 0, posted: 1 });
    expect(restarted.collector.bodies[0]).to.deep.equal(first.collector.bodies[0]);
    await restarted.v.close();
  });

  it("after a restart without its file re-derives the same decision and the same signature (salt from the key)", async function () {
    const { chain } = await pendingJob(7, "wrong-data");
    const a = verifier(chain);
    await a.v.tick();
    await a.v.close();
    const b = verifier(chain);
    expect(await b.v.tick()).to.include({ decided: 1 });
    expect(b.collector.bodies[0]).to.deep.equal(a.collector.bodies[0]);
    await b.v.close();
  });

  it("waits for a reported blob missing from the store, then refuses it after the grace period", async function () {
    const facts = await provider.acceptedJob(seedOf(8), 10);
    const chain = new FakeChain();
    chain.jobs.push({ status: STATUS.Running, job: record(facts, { pendingStep: 20n, pendingHash: seedOf(808) }) });
    await expectRefusedAtGrace(chain);
  });

  it("a reported name holding no plain blob (a directory) waits the same grace, then is refused", async function () {
    const facts = await provider.acceptedJob(seedOf(1912), 10);
    const { report } = await provider.produce(facts, 20, "honest");
    const path = (provider.store.backend as FsBackend).path(report.hash.slice(2));
    await unlink(path);
    await mkdir(path);
    const chain = new FakeChain();
    chain.jobs.push({
      status: STATUS.Running,
      job: record(facts, { pendingStep: 20n, pendingHash: report.hash }),
    });
    await expectRefusedAtGrace(chain);
  });

  it("a store writer who overwrites or removes an honest put after it landed makes no refusal: the verifier waits the grace while the maker puts it again", async function () {
    // Before: the overwritten checkpoint blob was refused at once (hash-mismatch) and a removed state blob too
    // (chain-gap) — an honest provider refused and fenced by anyone with write access to the store.
    for (const target of ["checkpoint blob", "state blob"] as const) {
      const facts = await provider.acceptedJob(seedOf(target === "checkpoint blob" ? 1913 : 1914), 10);
      const produced = await provider.produce(facts, 20, "honest");
      const { report } = produced;
      const upload = produced.upload!;
      const backend = provider.store.backend as FsBackend;
      if (target === "checkpoint blob") {
        await backend.write(report.hash.slice(2), new TextEncoder().encode("someone else's bytes"));
      } else {
        await unlink(backend.path(blobHash(upload.stateBlobs[0]).slice(2)));
      }
      const chain = new FakeChain();
      chain.jobs.push({ status: STATUS.Running, job: record(facts, { pendingStep: 20n, pendingHash: report.hash }) });
      let now = 0;
      const { v, collector } = verifier(chain, { now: () => now });
      expect(await v.tick(), target).to.include({ waiting: 1, posted: 0 });
      // The maker's agent checks its undecided report's blobs and puts the damaged one again.
      expect(await guardBlobs(provider.store, blobsOf(upload)), target).to.equal(1);
      expect(await guardBlobs(provider.store, blobsOf(upload)), "nothing left to repair").to.equal(0);
      now = 999;
      expect(await v.tick(), target).to.include({ decided: 1, posted: 1 });
      expect(collector.bodies[0].message, target).to.include({ accept: true });
      await v.close();
    }
  });

  it("an overwrite nobody repairs is the reporter's problem after the grace: refused at the grace, not before", async function () {
    const facts = await provider.acceptedJob(seedOf(1915), 10);
    const { report } = await provider.produce(facts, 20, "honest");
    await (provider.store.backend as FsBackend).write(report.hash.slice(2), new TextEncoder().encode("other bytes"));
    const chain = new FakeChain();
    chain.jobs.push({ status: STATUS.Running, job: record(facts, { pendingStep: 20n, pendingHash: report.hash }) });
    await expectRefusedAtGrace(chain);
  });

  it("an always-accept verifier signs accept for a faulty checkpoint, an always-refuse one refuse for an honest one", async function () {
    const faulty = await pendingJob(9, "garbage-weights");
    const yes = verifier(faulty.chain, { behaviour: "always-accept" });
    await yes.v.tick();
    expect(yes.collector.bodies[0].message).to.include({ accept: true });
    const honest = await pendingJob(10);
    const no = verifier(honest.chain, { behaviour: "always-refuse" });
    await no.v.tick();
    expect(no.collector.bodies[0].message).to.include({ accept: false });
    const line = JSON.parse(no.lines.find((l) => l.includes("checkpoint decided"))!);
    expect(line).to.include({ action: "refuse", behaviour: "always-refuse" });
  });

  it("signs a verdict for a job whose every step is accepted: metric in basis points, passed at target", async function () {
    const facts = await provider.acceptedJob(seedOf(11), 60);
    const chain = new FakeChain();
    chain.jobs.push({ status: STATUS.Running, job: record(facts, { totalSteps: 60n }) });
    const { v, collector } = verifier(chain);
    await v.tick();
    const body = collector.bodies[0];
    expect(body.kind).to.equal("verdict");
    expect(body.message).to.include({ jobId: "1", modelHash: facts.acceptedHash, passed: true });
    expect(Number((body.message as { metric: string }).metric)).to.be.within(9000, 10_000);
    await v.close();
  });

  it("does not sign for a job of a template it does not know, and keeps serving other jobs", async function () {
    const { chain } = await pendingJob(12);
    const unknown = record(
      { seed: seedOf(13), templateId: seedOf(14), acceptedStep: 0, acceptedHash: ZERO },
      { pendingStep: 10n, pendingHash: seedOf(15) },
    );
    chain.jobs.unshift({ status: STATUS.Running, job: unknown });
    const { v, collector, lines } = verifier(chain);
    expect(await v.tick()).to.include({ items: 2, decided: 1, errors: 1 });
    expect(collector.bodies).to.have.length(1);
    expect(JSON.parse(lines.find((l) => l.includes("cannot verify"))!)).to.include({ level: "warn", job: "1" });
    await v.close();
  });

  it("runs ticks until its signal aborts, logging the malicious mode loudly", async function () {
    const { chain } = await pendingJob(16);
    const { v, lines } = verifier(chain, { behaviour: "always-refuse" });
    const log = createLogger({ component: "verifier", write: (l) => lines.push(l) });
    const stop = new AbortController();
    const running = runVerifier(v, log, { signal: stop.signal });
    while (chain.reads < 3) await new Promise((r) => setTimeout(r, 2));
    stop.abort();
    await running;
    expect(lines.some((l) => JSON.parse(l).level === "warn" && l.includes("MALICIOUS"))).to.equal(true);
    expect(JSON.parse(lines[lines.length - 1]).msg).to.equal("verifier stopped");
    await v.close();
  });
});
