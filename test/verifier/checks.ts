import type { AccuracyRules } from "../../workloads/types.ts";
import { expect } from "chai";
import {
  buildTemplate,
  createTrainer,
  FsCheckpointStore,
  loadTemplate,
  type Template,
  type Trainer,
} from "../../workloads/index.ts";
import {
  CannotVerifyError,
  newVerifyCache,
  stepsToReplay,
  toBasisPoints,
  verifyCheckpoint,
  verifyFinal,
  type JobFacts,
  type ReasonCode,
  type Report,
} from "../../verifier/checks.ts";
import { afterAccept, firstJob, Provider, seedOf, TEST_MAKER, type Case } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";

const SALT = seedOf(1);

describe("verifier checks: one checkpoint, one verifier", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-verifier-checks-", template);
  let store: FsCheckpointStore;
  let provider: Provider;
  /** Job after an honest first checkpoint (steps 1..10) was accepted. */
  let job: JobFacts;

  const verify = (j: JobFacts, report: Report, samples = 3, t: Template = template, tr: Trainer = scratch.trainer) =>
    verifyCheckpoint({
      template: t,
      trainer: tr,
      store,
      job: j,
      report,
      sampleSalt: SALT,
      samples,
      cache: newVerifyCache(),
    });

  before(async function () {
    store = new FsCheckpointStore(scratch.dir);
    provider = new Provider(scratch.trainer, store);
    job = await provider.acceptedJob(seedOf(7), 10);
  });

  it("accepts an honest first checkpoint, replaying the sampled steps plus the last one, and measures its cost", async function () {
    const first = firstJob(template, seedOf(8));
    const { report } = await provider.produce(first, 10, "honest");
    const v = await verify(first, report, 3);
    expect(v.accept, v.reasons.join("; ")).to.equal(true);
    expect(v.codes).to.deep.equal([]);
    expect(v.metrics.replayedSteps).to.equal(stepsToReplay(SALT, 0, 10, 3).length);
    expect(v.metrics.intervalSteps).to.equal(10);
    expect(v.metrics.accuracy).to.be.a("number").and.above(v.metrics.baselineAccuracy!);
    expect(v.metrics.cpuMs).to.be.above(0);
    // (no closeTo: hardhat's chai matchers turn its arguments into bigints)
    expect(Math.abs(v.metrics.trainingCpuMsEstimate! - 10 * v.metrics.stepCpuMs!)).to.be.below(1e-9);
  });

  it("accepts an honest checkpoint that continues the accepted one", async function () {
    const { report } = await provider.produce(job, 20, "honest");
    const v = await verify(job, report);
    expect(v.accept, v.reasons.join("; ")).to.equal(true);
  });

  const refusals: [Case, ReasonCode][] = [
    ["garbage-weights", "replay-mismatch"],
    ["skip-steps", "replay-mismatch"],
    ["wrong-data", "replay-mismatch"],
    ["nan", "non-finite"],
    ["hash-mismatch", "hash-mismatch"],
    ["replay-old", "wrong-link"],
    ["wrong-template", "wrong-template"],
    ["wrong-seed", "wrong-seed"],
    ["broken-chain", "chain-gap"],
    ["forked-start", "chain-start"],
    ["not-a-checkpoint", "undecodable"],
  ];
  for (const [i, [kind, code]] of refusals.entries()) {
    it(`refuses a ${kind} checkpoint with reason ${code}`, async function () {
      const fresh = await provider.acceptedJob(seedOf(100 + i), 10);
      const { report } = await provider.produce(fresh, 20, kind);
      const v = await verify(fresh, report);
      expect(v.accept).to.equal(false);
      expect(v.codes).to.include(code);
      expect(v.reasons).to.have.length(v.codes.length);
    });
  }

  it("refuses an old checkpoint replayed at a new step as wrong step, link and start", async function () {
    const { report } = await provider.produce(job, 20, "replay-old");
    expect(report.hash).to.equal(job.acceptedHash);
    const v = await verify(job, report);
    expect(v.codes).to.include.members(["wrong-step", "wrong-link", "wrong-start"]);
  });

  it("refuses a fabricated or wrong-data middle step when that step is replayed (every step sampled)", async function () {
    for (const kind of ["fabricated-step", "wrong-data-step"] as const) {
      const { report } = await provider.produce(job, 20, kind);
      const v = await verify(job, report, 10);
      expect(v.accept, kind).to.equal(false);
      expect(v.codes, kind).to.deep.equal(["replay-mismatch"]);
    }
  });

  it("refuses a reported hash with no blob in the store as blob-missing", async function () {
    const v = await verify(job, { step: 20, hash: seedOf(31337), provider: TEST_MAKER });
    expect(v.codes).to.deep.equal(["blob-missing"]);
  });

  it("cannot verify (throws, signs nothing) when the accepted checkpoint itself is missing from the store", async function () {
    const lost = { ...job, acceptedHash: seedOf(404) };
    let err: unknown;
    try {
      await verify(lost, { step: 20, hash: seedOf(405), provider: TEST_MAKER });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(CannotVerifyError);
  });

  it("samples different steps for different salts, the same for the same salt, and always the last step", function () {
    const a = stepsToReplay(seedOf(1), 100, 200, 5);
    expect(stepsToReplay(seedOf(1), 100, 200, 5)).to.deep.equal(a);
    expect(stepsToReplay(seedOf(2), 100, 200, 5)).to.not.deep.equal(a);
    expect(a).to.include(200);
    expect(stepsToReplay(seedOf(3), 0, 3, 10)).to.deep.equal([1, 2, 3]);
  });

  describe("evaluation rule", function () {
    // A template whose rule every checkpoint breaks (accuracy must rise by 100 points): every check escalates.
    const strict = buildTemplate({ ...template.descriptor, evalRules: { maxRegression: -1, targetAccuracy: 0.9 } });
    let strictTrainer: Trainer;
    let strictProvider: Provider;
    let strictJob: JobFacts;
    before(async function () {
      strictTrainer = await createTrainer(strict);
      strictProvider = new Provider(strictTrainer, store);
      strictJob = await strictProvider.acceptedJob(seedOf(11), 10);
    });
    after(() => strictTrainer.close());

    it("accepts an honest checkpoint that breaks the rule once a full replay reproduces every step", async function () {
      const { report } = await strictProvider.produce(strictJob, 20, "honest");
      const v = await verify(strictJob, report, 0, strict, strictTrainer);
      expect(v.accept, v.reasons.join("; ")).to.equal(true);
      expect(v.metrics.fullReplay).to.equal(true);
      // the sampled steps first, then all 10 in order from the accepted state
      expect(v.metrics.replayedSteps).to.equal(stepsToReplay(SALT, 10, 20, 0).length + 10);
      expect(v.metrics.notes).to.have.length(1);
    });

    it("refuses a fabricated middle step that sampling missed, through the escalated full replay", async function () {
      const { report, middleStep } = await strictProvider.produce(strictJob, 20, "fabricated-step");
      expect(stepsToReplay(SALT, 10, 20, 0)).to.not.include(middleStep);
      const v = await verify(strictJob, report, 0, strict, strictTrainer);
      expect(v.accept).to.equal(false);
      expect(v.codes).to.deep.equal(["replay-mismatch", "regression"]);
      expect(v.metrics.fullReplay).to.equal(true);
    });

    it("refuses garbage weights by replaying the last step, before any evaluation", async function () {
      // samples = 0 still replays the last step, so garbage is caught by replay before evaluation.
      const { report } = await strictProvider.produce(strictJob, 20, "garbage-weights");
      const v = await verify(strictJob, report, 0, strict, strictTrainer);
      expect(v.codes).to.deep.equal(["replay-mismatch"]);
      expect(v.metrics.fullReplay).to.equal(false);
    });
  });

  describe("final verdict", function () {
    it("passes a final model that reaches the target, with the metric in basis points", async function () {
      const { report } = await provider.produce(job, 20, "honest");
      const final = { ...afterAccept(job, report), totalSteps: 20 };
      const v = await verifyFinal({ template, trainer: scratch.trainer, store, job: final });
      expect(v.modelHash).to.equal(report.hash);
      expect(v.accuracy).to.be.at.least((template.descriptor.evalRules as AccuracyRules).targetAccuracy);
      expect(v.metric).to.equal(toBasisPoints(v.accuracy!));
      expect(v.passed).to.equal(true);
    });

    it("fails a final model below the target accuracy", async function () {
      const unreachable = buildTemplate({
        ...template.descriptor,
        evalRules: { maxRegression: 0.05, targetAccuracy: 1.01 },
      });
      const tr = await createTrainer(unreachable);
      try {
        const p = new Provider(tr, store);
        const first = firstJob(unreachable, seedOf(12));
        const { report } = await p.produce(first, 10, "honest");
        const v = await verifyFinal({
          template: unreachable,
          trainer: tr,
          store,
          job: { ...afterAccept(first, report), totalSteps: 10 },
        });
        expect(v.passed).to.equal(false);
        expect(Number(v.metric)).to.be.within(1, 10_000);
      } finally {
        await tr.close();
      }
    });

    it("rounds float32 accuracies to the same basis points (0.9 as float32 is 9000)", function () {
      expect(toBasisPoints(Math.fround(0.9))).to.equal(9000n);
      expect(toBasisPoints(Math.fround(0.913))).to.equal(9130n);
    });
  });
});
