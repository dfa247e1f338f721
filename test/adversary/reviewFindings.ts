/**
 * Security review of the anti-cheating defences: segments, checkpoint v3 (maker + profile committed, the data order
 * drawn from the job's seed and the maker), verifier checks and claims, the economics model. One test per attack,
 * each asserting the attack fails (findings 1–3 were open holes of the first design, a maker-bound hash of the
 * unpublished states, and failed before the data order was bound to the maker), plus honest controls.
 * Real parts throughout: the real trainer (blobs-tiny), the real store, verifyCheckpoint, recheckClaim.
 */
import { expect } from "chai";
import {
  blobHash,
  committedAt,
  decodeCheckpoint,
  defaultSegmentSteps,
  encodeCheckpoint,
  getState,
  initialState,
  loadTemplate,
  putState,
  replayStep,
  stateHash,
  storedSteps,
  workSeed,
  type Checkpoint,
  type TrainingState,
} from "../../workloads/index.ts";
import type { JobFacts, Report } from "../../verifier/checks.ts";
import { recheckClaim } from "../../verifier/claims.ts";
import { DEPLOYMENT, randomSalt, simulateInterval } from "../../verifier/economics.ts";
import type { CheckpointItem, FaultRefusalJson } from "../../verifier/work.ts";
import { segmentTarget } from "../../agent/decide.ts";
import { honestUpload } from "../../agent/segment.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { afterAccept, checkerFor, firstJob, Provider, seedOf, TEST_PROFILE } from "../verifier/helpers.ts";

const ALICE = "0x" + "a1".repeat(20); // the honest maker
const BOB = "0x" + "b0".repeat(20); // honest, takes the job over after alice
const MALLORY = "0x" + "3e".repeat(20); // the thief: next assignee, finds alice's trained-ahead blobs in the store

describe("adversary: review of the anti-cheating defences", function () {
  this.timeout(120_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-review-", template);

  const verify = (job: JobFacts, report: Report, salt: string) =>
    checkerFor(scratch.trainer, scratch.store)(job, report, salt);

  /** Every verdict of `salts` random verifiers on `report`: how many accepted, and the codes of the others. */
  async function verdicts(job: JobFacts, report: Report, salts: number, seed: number) {
    const rand = mulberry32(seed);
    let accepted = 0;
    const codes = new Set<string>();
    for (let i = 0; i < salts; i++) {
      const v = await verify(job, report, randomSalt(rand));
      if (v.accept) accepted++;
      else v.codes.forEach((c) => codes.add(c));
    }
    return { accepted, codes: [...codes] };
  }

  /**
   * The cheapest re-signing of another maker's checkpoint: every published state is free (its blob is in the store,
   * or it is embedded); only the unpublished states are computed, each from the nearest published (or
   * just-computed) state before it, on the thief's own data order. Returns the re-signed checkpoint, stored, and
   * the steps actually trained.
   */
  async function resign(job: JobFacts, c: Checkpoint, thief: string) {
    let trained = 0;
    const plain: string[] = [];
    const published = new Set([...storedSteps(c.startStep, c.step, c.segmentSteps), c.step]);
    let carried: TrainingState | undefined; // the state after step − 1, if the thief computed it
    for (let step = c.startStep + 1; step <= c.step; step++) {
      if (published.has(step)) {
        plain.push(committedAt(c, step)); // published: the committed hash is the plain one
        carried = undefined;
        continue;
      }
      let prev = carried;
      if (!prev) {
        prev =
          step - 1 === c.startStep
            ? job.acceptedStep === 0
              ? initialState(template, job.seed)
              : decodeCheckpoint(await scratch.store.get(job.acceptedHash)).state
            : await getState(scratch.store, committedAt(c, step - 1));
      }
      carried = await replayStep(scratch.trainer, prev, workSeed(c.seed, thief), step);
      trained++;
      plain.push(stateHash(carried));
    }
    const bytes = encodeCheckpoint({ ...c, maker: thief, stepHashes: plain });
    const hash = await scratch.store.put(bytes);
    expect(hash).to.equal(blobHash(bytes));
    return { report: { step: c.step, hash, provider: thief } as Report, trained };
  }

  // ------------------------------------------------------------------------------------------------- findings

  describe("FINDING 1 (medium, P2, fixed): re-signing a stolen checkpoint from its published states is refused", function () {
    for (const n of [20, 100]) {
      it(`interval ${n} (m = ${defaultSegmentSteps(n)}): mallory re-signs alice's trained-ahead checkpoint after training only its unpublished steps, and every verifier refuses it`, async function () {
        const job = firstJob(template, seedOf(19_000 + n));
        const alice = new Provider(scratch.trainer, scratch.store, ALICE);
        const { report: alices } = await alice.produce(job, n, "honest");
        const c = decodeCheckpoint(await scratch.store.get(alices.hash));
        const { report: stolen, trained } = await resign(job, c, MALLORY);
        const v = await verdicts(job, stolen, 6, n);
        // With a maker-bound hash of the unpublished states (the first design) this was accepted: mallory trained
        // 9 of 20 (79 of 100) steps and was paid for all. On her own data order alice's published states do not
        // follow from hers: the always-replayed last step refutes it.
        expect(
          { accepted: v.accepted, trainedOfN: `${trained}/${n}` },
          `mallory trained ${trained} of ${n} steps; ${v.accepted}/6 verifiers accepted her report`,
        ).to.deep.equal({ accepted: 0, trainedOfN: `${trained}/${n}` });
      });
    }
  });

  describe("FINDING 2 (medium, P2, fixed): checkpoints of ≤ 2 steps hide nothing, and the agent makes them; a copy is refused", function () {
    it("the agent's own segment sizes: the takeover segment at interval 20 and a 2-step remainder are m = 1", function () {
      // Evidence only (passes): the agent's first segment after a takeover at interval 20 is 2 steps, and a job
      // whose totalSteps leaves a remainder of 1–2 ends with such a checkpoint; defaultSegmentSteps(≤ 2) = 1.
      expect(segmentTarget(20, 20, 1000, true) - 20).to.equal(2);
      expect(segmentTarget(100, 20, 102, false) - 100).to.equal(2);
      expect(defaultSegmentSteps(2)).to.equal(1);
    });

    it("alice's 2-step checkpoint, copied with only the maker field changed (no training), is refused by every verifier", async function () {
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const job = afterAccept(
        firstJob(template, seedOf(19_002)),
        (await alice.produce(firstJob(template, seedOf(19_002)), 20, "honest")).report,
      );
      const { report: alices } = await alice.produce(job, 22, "honest");
      const c = decodeCheckpoint(await scratch.store.get(alices.hash));
      expect(c.segmentSteps).to.equal(1);
      const { report: stolen, trained } = await resign(job, c, MALLORY);
      expect(trained).to.equal(0);
      expect(decodeCheckpoint(await scratch.store.get(stolen.hash)).stepHashes).to.deep.equal(c.stepHashes);
      const v = await verdicts(job, stolen, 6, 22);
      // Under the first design it was accepted with probability 1 (nothing was hidden); now its steps replay on
      // mallory's own data order.
      expect(v.codes).to.deep.equal(["replay-mismatch"]);
      expect(v.accepted, `${v.accepted}/6 verifiers accepted mallory's zero-work copy`).to.equal(0);
    });
  });

  describe("FINDING 3 (low, defence in depth, fixed): a zero-step checkpoint is refused by the verifier", function () {
    it("a checkpoint with no steps (step = accepted step) is refused as wrong-step", async function () {
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const first = firstJob(template, seedOf(19_003));
      const job = afterAccept(first, (await alice.produce(first, 10, "honest")).report);
      const prev = decodeCheckpoint(await scratch.store.get(job.acceptedHash));
      const empty: Checkpoint = {
        ...prev,
        prevCheckpointHash: job.acceptedHash,
        startStep: job.acceptedStep,
        startStateHash: stateHash(prev.state),
        segmentSteps: 1,
        stepHashes: [],
        step: job.acceptedStep,
      };
      const hash = await scratch.store.put(encodeCheckpoint(empty));
      const v = await verify(job, { step: job.acceptedStep, hash, provider: ALICE }, seedOf(1));
      // The escrow reverts a report at step ≤ acceptedStep (JobEscrowInvalidStep), so this is not reachable on
      // chain today; the verifier alone would sign "accept" for zero work with zero steps replayed.
      expect(
        { accept: v.accept, replayed: v.metrics.replayedSteps },
        "verifier accepted a 0-step checkpoint",
      ).to.deep.equal({ accept: false, replayed: 0 });
      expect(v.codes).to.include("wrong-step");
    });
  });

  // ------------------------------------------------------------------------------ attacks correctly defeated

  describe("defeated: attacks that fail against the current code (passing)", function () {
    it("failover control: bob resumes from alice's accepted checkpoint (another maker) and is accepted", async function () {
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const bob = new Provider(scratch.trainer, scratch.store, BOB);
      const first = firstJob(template, seedOf(19_004));
      const job = afterAccept(first, (await alice.produce(first, 20, "honest")).report);
      const { report } = await bob.produce(job, 40, "honest");
      const v = await verdicts(job, report, 3, 40);
      expect(v.accepted, v.codes.join(",")).to.equal(3);
      // The resumed 2-step takeover segment too.
      const { report: short } = await bob.produce(job, 22, "honest");
      expect((await verdicts(job, short, 2, 41)).accepted).to.equal(2);
    });

    it("maker case: a checksummed / upper-case reporter address matches the lower-case committed maker", async function () {
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const job = firstJob(template, seedOf(19_005));
      const { report } = await alice.produce(job, 10, "honest");
      const v = await verify(job, { ...report, provider: "0x" + ALICE.slice(2).toUpperCase() }, seedOf(2));
      expect(v.accept, v.reasons.join("; ")).to.equal(true);
    });

    it("profile field: an upper-cased proven profile, an empty one and a padded one are refused as unproven-profile", async function () {
      const job = firstJob(template, seedOf(19_006));
      for (const [i, profile] of [TEST_PROFILE.toUpperCase(), "", ` ${TEST_PROFILE}`].entries()) {
        const p = new Provider(scratch.trainer, scratch.store, ALICE, profile);
        const { report } = await p.produce(job, 5 + i, "honest");
        const v = await verify(job, report, seedOf(3));
        expect(v.codes, profile).to.deep.equal(["unproven-profile"]);
      }
    });

    it("m = 1 on an interval where the default is larger is refused (the length is fixed), and no chosen m pays", async function () {
      // The segment length is fixed by the interval (workloads/segments.ts minSegmentSteps): a shorter one would thin
      // every verifier's sample. The Monte Carlo lets the provider choose m: every strategy still has EV < 0.
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const job = firstJob(template, seedOf(19_009));
      const seg = await alice.train(await alice.startOf(job), 100);
      const short = await alice.put(honestUpload(seg, 1));
      expect((await verify(job, short, seedOf(4))).codes).to.deep.equal(["bad-segments"]);
      for (const r of simulateInterval(100, 300, mulberry32(77), DEPLOYMENT)) {
        expect(r.evOneColluding, `${r.strategy} f=${r.fabricated} m=${r.segmentSteps}`).to.be.below(0);
        expect(r.ev).to.be.below(0);
      }
    });

    it("a copy re-signed with another maker, its step hashes unchanged, at interval 20 is a replay-mismatch fault", async function () {
      const job = firstJob(template, seedOf(19_007));
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const { report } = await alice.produce(job, 20, "honest");
      const c = decodeCheckpoint(await scratch.store.get(report.hash));
      const bytes = encodeCheckpoint({ ...c, maker: MALLORY });
      const stolen = { step: 20, hash: await scratch.store.put(bytes), provider: MALLORY };
      const v = await verdicts(job, stolen, 4, 7);
      expect(v.accepted).to.equal(0);
      expect(v.codes).to.deep.equal(["replay-mismatch"]);
    });

    it("a false claim on an honest checkpoint, with the committed input or a made-up one, is not reproduced", async function () {
      const job = firstJob(template, seedOf(19_008));
      const alice = new Provider(scratch.trainer, scratch.store, ALICE);
      const { report } = await alice.produce(job, 20, "honest");
      const c = decodeCheckpoint(await scratch.store.get(report.hash));
      // Step 4's input is the state after step 3: not stored (m = 2).
      const step = 4;
      expect(storedSteps(0, 20, c.segmentSteps)).to.not.include(step - 1);
      let s: TrainingState = initialState(template, job.seed);
      for (let i = 1; i < step; i++) s = await replayStep(scratch.trainer, s, workSeed(job.seed, ALICE), i);
      await putState(scratch.store, s); // a malicious finder publishes the true input state
      const item: CheckpointItem = {
        kind: "checkpoint",
        key: "k",
        jobId: 1n,
        epoch: 1n,
        step: 20,
        hash: report.hash,
        templateId: job.templateId,
        seed: job.seed,
        acceptedStep: 0,
        acceptedHash: job.acceptedHash,
        provider: ALICE,
      };
      const claim = (inputHash: string): FaultRefusalJson => ({
        jobId: "1",
        epoch: "1",
        step: 20,
        checkpointHash: report.hash,
        fault: {
          step,
          inputHash,
          committedHash: committedAt(c, step),
          replayedHash: blobHash(new TextEncoder().encode("made up")),
          finder: MALLORY,
        },
      });
      expect(stateHash(s)).to.equal(committedAt(c, step - 1));
      for (const input of [committedAt(c, step - 1), blobHash(new TextEncoder().encode("another input"))]) {
        const r = await recheckClaim({
          template,
          trainer: scratch.trainer,
          store: scratch.store,
          item,
          claim: claim(input),
          verifierProfile: TEST_PROFILE,
        });
        expect(r.reproduced, r.why).to.equal(false);
      }
    });
  });
});
