/**
 * Fault claims end to end on the simulated chain (Ignition deploy, a real 2-of-3 Safe), with three real verifiers
 * (onnxruntime replays) and the real verdict collector over HTTP; the provider's arithmetic profile is the one its
 * checkpoint commits: one verifier that catches a fabricated step is enough for a slash; a false claim holds
 * nothing for long and slashes no one; an unproven profile never slashes (nor is paid); the hold survives a restart.
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createCollector, serveCollector, type Collector } from "../../keepers/collector/tick.ts";
import type { JsonServer } from "../../keepers/http.ts";
import { honestUpload } from "../../agent/segment.ts";
import { newVerifyCache, verifyCheckpoint } from "../../verifier/checks.ts";
import { httpCollector, type SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { Verifier, type BehaviourName, type EscrowReader } from "../../verifier/verifier.ts";
import {
  checkMessage,
  checkpointKey,
  digestOf,
  faultMessage,
  sampleSalt,
  type CheckpointItem,
  type FaultBody,
} from "../../verifier/work.ts";
import { escrowDomain, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";
import {
  FsCheckpointStore,
  initialState,
  loadTemplate,
  localProfile,
  sampleSpans,
  type Trainer,
  type TrainingState,
  workSeed,
} from "../../workloads/index.ts";
import { deployProtocol, networkHelpers, type Protocol } from "../helpers/fixture.ts";
import { captureLogger, manualClock, testContext } from "../keepers/fixture.ts";
import { closeScratch, openScratch } from "../helpers/scratch.ts";
import { hardhatWallet, Provider, verifierWallets } from "./helpers.ts";

const template = loadTemplate("blobs-tiny");
const INTERVAL = 10;
const SAMPLES = 3;
const HOLD_MS = 60_000;
const UNPROVEN = "onnxruntime-1.30.0/cpu/x86_64-sse2"; // not in PROVEN_PROFILES: its mismatches are no evidence

async function deployClaims() {
  const p = await deployProtocol();
  await p.escrow.connect(p.owner).setTemplateApproval(template.templateId, true);
  await p.escrow.connect(p.client).createJob({
    templateId: template.templateId,
    totalSteps: 2 * INTERVAL,
    checkpointInterval: INTERVAL,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    disputeWindow: 3_600n,
  });
  const jobId = await p.escrow.jobCount();
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  return { ...p, jobId };
}
type Chain = Protocol & { jobId: bigint };

/** The collector behind an HTTP server; `restart` replaces both, from the same state file. */
class CollectorHost {
  collector!: Collector;
  server!: JsonServer;
  lines: Record<string, unknown>[] = [];
  private p: Chain;
  private stateFile: string;
  readonly clock: ReturnType<typeof manualClock>;

  private quorumWaitMs: number;

  constructor(p: Chain, dir: string, clock: ReturnType<typeof manualClock>, quorumWaitMs = 0) {
    this.p = p;
    this.stateFile = join(dir, "collector-state.json");
    this.clock = clock;
    this.quorumWaitMs = quorumWaitMs;
  }

  async start(): Promise<void> {
    const { ctx, lines } = await testContext(this.p, {
      signer: this.p.stranger,
      component: "collector",
      nowMs: this.clock.now,
    });
    this.lines = lines;
    this.collector = createCollector(
      ctx,
      { stateFile: this.stateFile, dryRun: false, claimHoldMs: HOLD_MS, quorumWaitMs: this.quorumWaitMs },
      { safeAddress: this.p.deployment.verifierSafe, escrowAddress: this.p.deployment.escrow },
    );
    await this.collector.restore();
    this.server = await serveCollector(this.collector, "127.0.0.1", 0, ctx.logger);
  }

  async stop(): Promise<void> {
    await this.server.close();
    await this.collector.idle();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** A poster for verifiers that always talks to the current server (`withClaims: false`: an old verifier). */
  poster(withClaims = true): SignaturePoster {
    return {
      post: (body) => httpCollector(this.server.url).post(body),
      claims: withClaims ? () => httpCollector(this.server.url).claims!() : undefined,
    };
  }

  async tick(): Promise<void> {
    await this.collector.tick();
    await this.collector.idle();
  }
}

describe("fault claims: one honest verifier is enough, a false claim costs nothing", function () {
  this.timeout(120_000);
  let dir: string;
  let trainer: Trainer;
  before(async () => ({ dir, trainer } = await openScratch("gpuchain-verifier-claims-", template)));
  after(() => closeScratch({ dir, trainer }));

  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  type World = Awaited<ReturnType<typeof world>>;

  /** The chain, a store, the collector on HTTP and provider1 committing `profile` in its checkpoints. */
  async function world(name: string, profile: string = localProfile(), quorumWaitMs = 0) {
    const p = await networkHelpers.loadFixture(deployClaims);
    const store = new FsCheckpointStore(join(dir, name));
    const clock = manualClock();
    const host = new CollectorHost(p, mkdtempSync(join(tmpdir(), "gpuchain-claims-collector-")), clock, quorumWaitMs);
    await host.start();
    cleanups.push(() => host.stop());
    return { p, store, clock, host, provider: new Provider(trainer, store, p.provider1.address, profile) };
  }

  function verifiers(w: World, behaviours: BehaviourName[], withClaims = [true, true, true]) {
    const logs: Record<string, unknown>[][] = [];
    const vs = verifierWallets().map((wallet, i) => {
      const { logger, lines } = captureLogger(`verifier${i + 1}`);
      logs.push(lines);
      return new Verifier(
        {
          chainId: w.p.chainId,
          escrow: w.p.deployment.escrow,
          safe: w.p.deployment.verifierSafe,
          samples: SAMPLES,
          behaviour: behaviours[i],
          dryRun: false,
          pollMs: 10,
          missingBlobGraceMs: 0,
        },
        {
          chain: w.p.escrow as unknown as EscrowReader,
          signer: wallet,
          store: w.store,
          collector: w.host.poster(withClaims[i]),
          decisions: new DecisionStore(wallet.address),
          log: logger,
        },
      );
    });
    cleanups.push(async () => {
      for (const v of vs) await v.close();
    });
    return { vs, logs };
  }

  /** The checkpoint item a verifier plans for the pending report (for salts and direct checks). */
  async function pendingItem(w: World, step: number, hash: string): Promise<CheckpointItem> {
    const j = await w.p.escrow.jobOf(w.p.jobId);
    return {
      kind: "checkpoint",
      key: checkpointKey(w.p.jobId, j.epoch, step, hash),
      jobId: w.p.jobId,
      epoch: j.epoch,
      step,
      hash,
      templateId: j.templateId,
      seed: j.seed,
      acceptedStep: Number(j.acceptedStep),
      acceptedHash: j.acceptedHash,
      provider: w.p.provider1.address,
    };
  }

  /** Which verifiers' sampled spans replay `step` of the report. */
  function samplers(w: World, item: CheckpointItem, segmentSteps: number, step: number): number[] {
    return verifierWallets().flatMap((wallet, i) => {
      const salt = sampleSalt(wallet.privateKey, w.p.chainId, w.p.deployment.escrow, item);
      const spans = sampleSpans(salt, item.acceptedStep, item.step, segmentSteps, SAMPLES);
      return spans.some((s) => s.from < step && step <= s.to) ? [i] : [];
    });
  }

  /**
   * Trains the first interval honestly except one fabricated step (perturbed weights, the later steps honest from
   * it), choosing the step so that exactly one verifier's secret sample replays it; stores and reports it.
   */
  async function fabricatedForOne(w: World) {
    const j = await w.p.escrow.jobOf(w.p.jobId);
    const start = initialState(template, j.seed);
    for (let bad = 2; bad < INTERVAL; bad++) {
      const states: TrainingState[] = [];
      let s = start;
      for (let step = 1; step <= INTERVAL; step++) {
        s = (await trainer.trainStep(s, workSeed(j.seed, w.provider.maker), step)).state;
        if (step === bad)
          s = { ...s, weights: s.weights.map((t) => ({ ...t, data: t.data.map((v, i) => v + ((i % 7) - 3) * 1e-3) })) };
        states.push(s);
      }
      const upload = honestUpload({
        templateId: template.templateId,
        seed: j.seed,
        prevCheckpointHash: j.acceptedHash,
        start,
        maker: w.provider.maker,
        profile: w.provider.profile,
        states,
        trainedSteps: states.length,
        loss: 0,
      });
      const item = await pendingItem(w, INTERVAL, upload.reportedHash);
      const who = samplers(w, item, upload.checkpoint.segmentSteps, bad);
      if (who.length !== 1) continue;
      await w.provider.put(upload);
      await w.p.escrow.connect(w.p.provider1).reportCheckpoint(w.p.jobId, j.epoch, INTERVAL, upload.reportedHash);
      return { bad, finder: who[0], item };
    }
    throw new Error("test setup: no step is sampled by exactly one verifier");
  }

  async function honestReport(w: World) {
    const j = await w.p.escrow.jobOf(w.p.jobId);
    const facts = { seed: j.seed, templateId: j.templateId, acceptedStep: 0, acceptedHash: j.acceptedHash };
    const { report } = await w.provider.produce(facts, INTERVAL, "honest");
    await w.p.escrow.connect(w.p.provider1).reportCheckpoint(w.p.jobId, j.epoch, report.step, report.hash);
    return pendingItem(w, report.step, report.hash);
  }

  const slashes = (w: World) => w.p.escrow.queryFilter(w.p.escrow.filters.ProviderSlashed());
  const msgs = (lines: Record<string, unknown>[]) => lines.map((l) => l.msg);

  it("a fabricated step caught by exactly ONE of three verifiers is refused by the quorum with a slash", async function () {
    const w = await world("one-finder");
    const { bad, finder, item } = await fabricatedForOne(w);
    // Before fault claims (one catch suffices): the two others' own checks accept, and they outvote the finder.
    for (const i of [0, 1, 2].filter((i) => i !== finder)) {
      const wallet = verifierWallets()[i];
      const v = await verifyCheckpoint({
        template,
        trainer,
        store: w.store,
        cache: newVerifyCache(),
        job: item,
        report: { step: item.step, hash: item.hash, provider: item.provider },
        sampleSalt: sampleSalt(wallet.privateKey, w.p.chainId, w.p.deployment.escrow, item),
        samples: SAMPLES,
      });
      expect(v.accept, `verifier${i + 1} alone`).to.equal(true);
    }
    const stakeBefore = (await w.p.registry.stakeOf(w.p.provider1.address)).deposited;
    const lock = await w.p.registry.lockOf(w.p.provider1.address, w.p.jobId);
    const { vs, logs } = verifiers(w, ["honest", "honest", "honest"]);
    // The finder first (it publishes the claim), then the others re-check it before signing anything.
    const order = [finder, ...[0, 1, 2].filter((i) => i !== finder)];
    for (const i of order) await vs[i].tick();
    await w.host.tick();

    const [ev] = await slashes(w);
    expect(ev, "ProviderSlashed").to.not.equal(undefined);
    const finderAddress = verifierWallets()[finder].address;
    expect([ev.args.jobId, ev.args.provider, ev.args.faultStep, ev.args.finder]).to.deep.equal([
      w.p.jobId,
      w.p.provider1.address,
      BigInt(bad),
      finderAddress,
    ]);
    expect(ev.args.slashed).to.equal(lock);
    expect((await w.p.registry.stakeOf(w.p.provider1.address)).deposited).to.equal(stakeBefore - lock);
    expect(await w.p.escrow.owed(w.p.client.address)).to.be.at.least(ev.args.toClient);
    expect(ev.args.toClient).to.be.greaterThan(0n);
    expect(await w.p.escrow.owed(finderAddress)).to.equal(ev.args.toFinder);
    expect(await w.p.escrow.isFenced(w.p.jobId, w.p.provider1.address)).to.equal(true);
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedStep).to.equal(0n);
    expect(msgs(logs[finder])).to.include("fault claim: replay mismatch on a proven profile");
    for (const i of order.slice(1))
      expect(msgs(logs[i])).to.include("fault claim reproduced: signing its fault refusal");
    // Exactly once: the refusal is on chain, every later tick is harmless.
    for (const v of vs) await v.tick();
    await w.host.tick();
    expect(await slashes(w)).to.have.length(1);
  });

  it("a verifier that already signed accept re-checks a claim that arrives later and signs the fault refusal too", async function () {
    const w = await world("late-claim");
    const { bad, finder } = await fabricatedForOne(w);
    const { vs, logs } = verifiers(w, ["honest", "honest", "honest"]);
    const [early] = [0, 1, 2].filter((i) => i !== finder);
    await vs[early].tick(); // no claim yet: its own sample missed the step, it signs accept (1 of 3)
    expect(logs[early].find((l) => l.msg === "checkpoint decided")?.action).to.equal("accept");
    await vs[finder].tick(); // the claim
    await vs[early].tick(); // re-checks it: reproduced, so it signs the fault refusal (2 of 3)
    await w.host.tick();
    const [ev] = await slashes(w);
    expect([ev?.args.faultStep, ev?.args.finder]).to.deep.equal([BigInt(bad), verifierWallets()[finder].address]);
  });

  it("the finder is the slowest: the 2-of-3 accept waits for its word (--quorum-wait-ms), then the claim slashes", async function () {
    for (const waitMs of [0, 15_000]) {
      const w = await world(`slow-finder-${waitMs}`, localProfile(), waitMs);
      const { bad, finder, item } = await fabricatedForOne(w);
      const { vs } = verifiers(w, ["honest", "honest", "honest"]);
      const others = [0, 1, 2].filter((i) => i !== finder);
      for (const i of others) await vs[i].tick(); // two accepts: the threshold, before any claim
      await w.host.tick();
      const pending = (await w.p.escrow.jobOf(w.p.jobId)).pendingHash;
      if (waitMs === 0) {
        // Without the wait (the finding): the accept lands and the fabricated step is paid for.
        expect(pending, "accepted at once").to.not.equal(item.hash);
        expect(await slashes(w)).to.have.length(0);
        continue;
      }
      expect(pending, "waiting for the third verifier").to.equal(item.hash);
      w.clock.advance(waitMs - 1);
      await w.host.tick();
      expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash); // t − 1: still waiting
      await vs[finder].tick(); // the claim: now the hold on a claim takes over
      w.clock.advance(1);
      await w.host.tick();
      expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash);
      for (const i of others) await vs[i].tick(); // they re-check it and sign the fault refusal
      await w.host.tick();
      const [ev] = await slashes(w);
      expect([ev?.args.faultStep, ev?.args.finder]).to.deep.equal([BigInt(bad), verifierWallets()[finder].address]);
    }
  });

  it("an owner that stays silent delays the accept by the wait and no longer: t − 1 held, t sent", async function () {
    const w = await world("silent-owner", localProfile(), 15_000);
    const item = await honestReport(w);
    const { vs } = verifiers(w, ["honest", "honest", "honest"]);
    await vs[0].tick();
    await vs[1].tick();
    await w.host.tick();
    w.clock.advance(15_000 - 1);
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash);
    w.clock.advance(1);
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedHash).to.equal(item.hash);
  });

  it("a false claim from a malicious verifier is ignored: the honest checkpoint is accepted, nothing slashed", async function () {
    const w = await world("false-claim");
    const item = await honestReport(w);
    const { vs, logs } = verifiers(w, ["false-claim", "honest", "honest"]);
    for (const v of vs) await v.tick();
    await w.host.tick();
    const j = await w.p.escrow.jobOf(w.p.jobId);
    expect([j.acceptedStep, j.acceptedHash]).to.deep.equal([BigInt(item.step), item.hash]);
    expect(await slashes(w)).to.have.length(0);
    expect(await w.p.escrow.earningsOf(w.p.jobId, w.p.provider1.address)).to.be.greaterThan(0n);
    for (const lines of logs.slice(1)) {
      const line = lines.find((l) => l.msg === "fault claim not reproduced; ignored");
      expect(line?.why).to.match(/replays to the committed hash/);
    }
    expect(msgs(w.host.lines)).to.include("fault claim not reproduced");
  });

  it("a checkpoint committing an unproven profile never slashes: a plain refusal (a newcomer forfeits only its hold's lock)", async function () {
    const w = await world("unproven", UNPROVEN);
    const j = await w.p.escrow.jobOf(w.p.jobId);
    const facts = { seed: j.seed, templateId: j.templateId, acceptedStep: 0, acceptedHash: j.acceptedHash };
    const { report } = await w.provider.produce(facts, INTERVAL, "garbage-weights"); // every verifier replays it
    await w.p.escrow.connect(w.p.provider1).reportCheckpoint(w.p.jobId, j.epoch, report.step, report.hash);
    const stake = await w.p.registry.stakeOf(w.p.provider1.address);
    const lock = await w.p.registry.lockOf(w.p.provider1.address, w.p.jobId);
    const { vs, logs } = verifiers(w, ["honest", "honest", "honest"]);
    for (const v of vs) await v.tick();
    await w.host.tick();
    expect(await slashes(w)).to.have.length(0);
    expect(await w.p.escrow.isFenced(w.p.jobId, w.p.provider1.address)).to.equal(true); // refused all the same
    // Not a slash: provider1 is on probation (nothing accepted yet), so the plain refusal costs exactly its lock.
    expect(await w.p.escrow.isProven(w.p.provider1.address)).to.equal(false);
    expect((await w.p.registry.stakeOf(w.p.provider1.address)).deposited).to.equal(stake.deposited - lock);
    for (const lines of logs) {
      const line = lines.find((l) => l.msg === "checkpoint decided");
      expect(line?.action).to.equal("refuse");
      expect(String(line?.reasons)).to.include(`unproven-profile: arithmetic profile ${UNPROVEN}`);
    }
  });

  it("a claim on an unproven profile is not confirmed by the others: no slash, and the checkpoint is not paid", async function () {
    const w = await world("unproven-claim", UNPROVEN);
    const item = await honestReport(w);
    const { vs, logs } = verifiers(w, ["false-claim", "honest", "honest"]);
    for (const v of vs) await v.tick();
    await w.host.tick();
    expect(await slashes(w)).to.have.length(0);
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedHash).to.not.equal(item.hash);
    expect(await w.p.escrow.isFenced(w.p.jobId, w.p.provider1.address)).to.equal(true);
    expect(logs[1].find((l) => l.msg === "fault claim not reproduced; ignored")?.why).to.include(UNPROVEN);
  });

  it("a verifier gets one claim per checkpoint (409 for a second), and a check must be signed by an owner", async function () {
    const w = await world("limits");
    const item = await honestReport(w);
    const { vs } = verifiers(w, ["false-claim", "honest", "honest"]);
    await vs[0].tick();
    const [claim] = (w.host.collector.listClaims().body as { claims: FaultBody[] }).claims;
    const [v1] = verifierWallets();
    const domain = escrowDomain(w.p.chainId, w.p.deployment.escrow);
    const sign = (digest: string, wallet = v1) =>
      signAsSafeOwner(wallet, w.p.chainId, w.p.deployment.verifierSafe, digest);
    const second = { ...claim.message, fault: { ...claim.message.fault, step: 3 } };
    const digest = digestOf(domain, { kind: "fault", typed: faultMessage(second) });
    const r = await w.host.collector.submitClaim({ ...claim, message: second, digest, signature: await sign(digest) });
    expect(r.status).to.equal(409);
    const outsider = hardhatWallet(11);
    const { message, typed } = checkMessage(item, claim.digest);
    const checkDigest = digestOf(domain, { kind: "check", typed });
    const check = { kind: "check", message, digest: checkDigest, signer: outsider.address };
    const bad = await w.host.collector.submitClaim({ ...check, signature: await sign(checkDigest, outsider) });
    expect([bad.status, (bad.body as { reason: string }).reason]).to.deep.equal([
      400,
      `${outsider.address} is not an owner of the verifier Safe`,
    ]);
    const forged = await w.host.collector.submitClaim({ ...check, signature: await sign(checkDigest) });
    expect(forged.status).to.equal(400); // v1's signature under the outsider's name
  });

  it("the collector never submits accept while a claim is unchecked, and does once the others answered", async function () {
    const w = await world("hold");
    const item = await honestReport(w);
    // verifier3 has no claims view: it signs accept without answering the claim, so the accept has 2 of 3.
    const { vs } = verifiers(w, ["false-claim", "honest", "honest"], [true, true, false]);
    await vs[0].tick();
    await vs[1].tick();
    await vs[2].tick();
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash); // held: verifier3 has not answered
    expect(msgs(w.host.lines)).to.include("held: a fault claim on this checkpoint");
    // verifier3 learns to read claims (a restart of it, with the same key): it answers, and the accept goes.
    const [, , v3] = verifiers(w, ["false-claim", "honest", "honest"]).vs;
    await v3.tick();
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedHash).to.equal(item.hash);
    expect(await slashes(w)).to.have.length(0);
  });

  it("an unanswered claim holds the accept for the bound and no longer: t−1 held, t sent", async function () {
    const w = await world("hold-bound");
    const item = await honestReport(w);
    const { vs } = verifiers(w, ["false-claim", "honest", "honest"], [true, true, false]);
    for (const v of vs) await v.tick();
    w.host.clock.advance(HOLD_MS - 1);
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash);
    w.host.clock.advance(1);
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedHash).to.equal(item.hash);
  });

  it("restarted mid-claim, the collector still holds the accept (the claim is in its state file)", async function () {
    const w = await world("restart-hold");
    const item = await honestReport(w);
    const { vs } = verifiers(w, ["false-claim", "honest", "honest"], [true, true, false]);
    for (const v of vs) await v.tick();
    await w.host.restart(); // the accept's two signatures and the claim come back from the file; answers do not
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash);
    // Before the hold, the restored 2-of-3 accept would have been sent at once; now it waits for the answers.
    const [, v2, v3] = verifiers(w, ["false-claim", "honest", "honest"]).vs;
    await v2.tick();
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).pendingHash).to.equal(item.hash); // verifier3 still unanswered
    await v3.tick();
    await w.host.tick();
    expect((await w.p.escrow.jobOf(w.p.jobId)).acceptedHash).to.equal(item.hash);
  });

  it("restarted between the claim and its confirmations, the collector lists the claim again and slashes", async function () {
    const w = await world("restart");
    const { bad, finder } = await fabricatedForOne(w);
    const { vs } = verifiers(w, ["honest", "honest", "honest"]);
    const others = [0, 1, 2].filter((i) => i !== finder);
    await vs[finder].tick(); // the claim
    await w.host.restart(); // answers are in memory only; the claim (a pooled signature) is in the state file
    const [claim] = ((await w.host.collector.listClaims()).body as { claims: unknown[] }).claims;
    expect(claim, "claim listed after the restart").to.not.equal(undefined);
    for (const i of others) await vs[i].tick();
    await w.host.tick();
    const [ev] = await slashes(w);
    expect([ev?.args.faultStep, ev?.args.finder]).to.deep.equal([BigInt(bad), verifierWallets()[finder].address]);
  });
});
