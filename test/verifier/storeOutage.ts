/**
 * The store's bad news is never a refusal. Honest checkpoints sit in a real s3rver; the verifier reads them
 * through a fault-injecting HTTP proxy (real 503s, requests never answered, connection resets, bodies cut off
 * under a full Content-Length) and a backend wrapper that fails with EMFILE. While the store cannot be read the
 * verifier signs nothing (StoreOutageError, "abstaining" past the bound); once it can, it accepts. A checkpoint
 * that is wrong is still refused with its reason.
 */
import { expect } from "chai";
import { createLogger } from "../../sdk/run/log.ts";
import { BlobStore, loadTemplate, S3Backend, type Trainer } from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import {
  newVerifyCache,
  StoreOutageError,
  verifyCheckpoint,
  type JobFacts,
  type Report,
} from "../../verifier/checks.ts";
import type { SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { Verifier, type EscrowReader } from "../../verifier/verifier.ts";
import type { SignatureBody } from "../../verifier/work.ts";
import { JobStatus as STATUS, type RawJob as JobRecord } from "../../sdk/rules/job.ts";
import { FaultyBackend, startFaultProxy, type FaultProxy, type HttpFault } from "../workloads/storeFaults.ts";
import { rawJob } from "../helpers/jobs.ts";
import { hardhatWallet, Provider, seedOf, TEST_MAKER } from "./helpers.ts";
import { closeScratch, openScratch } from "../helpers/scratch.ts";

const RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20, opTimeoutMs: 1_000 };
const ZERO = "0x" + "00".repeat(32);

class OneJobChain implements EscrowReader {
  job: JobRecord;
  constructor(job: JobRecord) {
    this.job = job;
  }
  async jobCount() {
    return 1n;
  }
  async jobOf() {
    return this.job;
  }
  async statusOf() {
    return BigInt(STATUS.Running);
  }
}

class Collector implements SignaturePoster {
  bodies: SignatureBody[] = [];
  async post(body: SignatureBody) {
    this.bodies.push(body);
  }
}

describe("verifier: store outages are never refusals", function () {
  const template = loadTemplate("blobs-tiny");
  let dir: string;
  let s3: EmbeddedS3;
  let proxy: FaultProxy;
  let trainer: Trainer;
  let provider: Provider;
  let faulty: FaultyBackend;
  let readerStore: BlobStore;
  const backends: S3Backend[] = [];

  before(async function () {
    ({ dir, trainer } = await openScratch("gpuchain-verifier-outage-", template));
    s3 = await startEmbeddedS3({ dir });
    proxy = await startFaultProxy(s3.endpoint);
    const loc = { bucket: s3.bucket, prefix: "outage" };
    const opts = { region: "us-east-1", credentials: S3RVER_CREDENTIALS, requestTimeoutMs: 300 };
    const direct = new S3Backend(loc, { ...opts, endpoint: s3.endpoint });
    const viaProxy = new S3Backend(loc, { ...opts, endpoint: proxy.endpoint });
    backends.push(direct, viaProxy);
    faulty = new FaultyBackend(viaProxy);
    readerStore = new BlobStore(faulty, { retry: RETRY });
    provider = new Provider(trainer, new BlobStore(direct));
  });
  after(async function () {
    for (const b of backends) b.close();
    await proxy?.close();
    await s3?.close();
    await closeScratch({ dir, trainer });
  });
  afterEach(() => (proxy.clear(), faulty.clear()));

  const verify = (job: JobFacts, report: Report) =>
    verifyCheckpoint({
      template,
      trainer,
      store: readerStore,
      job,
      report,
      sampleSalt: seedOf(1),
      samples: 3,
      cache: newVerifyCache(),
    });
  async function honestPending(seed: number) {
    const job = await provider.acceptedJob(seedOf(seed), 10);
    const { report } = await provider.produce(job, 20, "honest");
    return { job, report };
  }
  async function outcome(p: Promise<unknown>): Promise<unknown> {
    try {
      return await p;
    } catch (e) {
      return e;
    }
  }
  const inject = (f: HttpFault | "emfile", times: number, ops?: ("read" | "exists")[]) =>
    f === "emfile" ? faulty.inject("emfile", times, ops) : proxy.inject(f, times);

  for (const fault of ["503", "hang", "reset", "truncate", "emfile"] as const) {
    it(`${fault}: a lasting one is StoreOutageError (nothing to sign), a passing one still accepts`, async function () {
      const { job, report } = await honestPending(100 + fault.length);
      inject(fault, 1000);
      const got = await outcome(verify(job, report));
      expect(got, String(got)).to.be.instanceOf(StoreOutageError);
      proxy.clear();
      faulty.clear();
      inject(fault, 2);
      const v = await verify(job, report);
      expect(v.accept, v.reasons.join("; ")).to.equal(true);
    });
  }

  it("a failing existence check of the committed states is an outage, not a chain-gap", async function () {
    const { job, report } = await honestPending(120);
    faulty.inject("emfile", 1000, ["exists"]);
    const got = await outcome(verify(job, report));
    expect(got, String(got)).to.be.instanceOf(StoreOutageError);
    expect(String(got)).to.match(/state after step \d+/);
  });

  it("a wrong checkpoint is still refused with its reason while the store answers", async function () {
    const job = await provider.acceptedJob(seedOf(121), 10);
    const { report } = await provider.produce(job, 20, "skip-steps");
    const v = await verify(job, report);
    expect(v.accept).to.equal(false);
    expect(v.codes).to.not.include("chain-gap");
    expect(v.codes.length).to.be.above(0);
  });

  it("the runner signs nothing during an outage, says it abstains past the bound, and accepts once readable", async function () {
    const { job, report } = await honestPending(122);
    const chain = new OneJobChain(
      rawJob({
        epoch: 1n,
        templateId: job.templateId,
        seed: job.seed,
        totalSteps: 30n,
        acceptedStep: BigInt(job.acceptedStep),
        acceptedHash: job.acceptedHash,
        pendingStep: BigInt(report.step),
        pendingHash: report.hash,
        provider: TEST_MAKER,
      }),
    );
    let now = 1_000_000;
    const lines: string[] = [];
    const wallet = hardhatWallet(3);
    const collector = new Collector();
    const v = new Verifier(
      {
        chainId: 31337n,
        escrow: hardhatWallet(20).address,
        safe: hardhatWallet(21).address,
        samples: 2,
        behaviour: "honest",
        dryRun: false,
        pollMs: 5,
        missingBlobGraceMs: 1_000,
        abstainAfterMs: 10_000,
      },
      {
        chain,
        signer: wallet,
        store: readerStore,
        collector,
        decisions: new DecisionStore(wallet.address),
        log: createLogger({ component: "verifier", write: (l) => lines.push(l) }),
        now: () => now,
      },
    );
    proxy.inject("503", 100_000);
    const first = await v.tick();
    expect(first).to.include({ decided: 0, posted: 0, errors: 1, abstaining: 0 });
    now += 9_999;
    expect(await v.tick()).to.include({ posted: 0, abstaining: 0 });
    now += 1;
    expect(await v.tick()).to.include({ posted: 0, abstaining: 1 });
    const msgs = lines.map((l) => JSON.parse(l) as { msg: string; level: string });
    expect(msgs.filter((m) => m.msg.startsWith("store unreachable")).length).to.equal(2);
    expect(msgs.filter((m) => m.msg.startsWith("abstaining")).map((m) => m.level)).to.deep.equal(["error"]);
    expect(collector.bodies).to.have.length(0);
    proxy.clear();
    expect(await v.tick()).to.include({ decided: 1, posted: 1, abstaining: 0 });
    expect(collector.bodies[0].message).to.include({ accept: true, checkpointHash: report.hash });
    await v.close();
  });

  it("a missing reported blob is still blob-missing (an answer from the store, not an outage)", async function () {
    const { job } = await honestPending(123);
    const v = await verify(job, { step: 20, hash: ZERO.replace(/0$/, "1"), provider: TEST_MAKER });
    expect(v.codes).to.deep.equal(["blob-missing"]);
  });
});
