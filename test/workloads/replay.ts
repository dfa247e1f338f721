import { expect } from "chai";
import {
  blobHash,
  chainProblems,
  decodeCheckpoint,
  detectionProbability,
  encodeCheckpoint,
  FsCheckpointStore,
  loadTemplate,
  putState,
  replayCommittedStep,
  sampleSteps,
  stateHash,
  ZERO_HASH,
  type Checkpoint,
  type Trainer,
  type TrainingState,
} from "../../workloads/index.ts";
import { SEED_A, SEED_B, trainTo } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";
import { workSeed } from "../../workloads/index.ts";

/** The data order TEST_MAKER trains job SEED_A with (workloads/checkpoint.ts workSeed). */
const WORK_A = workSeed(SEED_A, TEST_MAKER);

describe("workloads: sampled replay by verifiers", function () {
  const t = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-replay-", t);
  let store: FsCheckpointStore;
  let tr: Trainer;
  before(async () => {
    store = new FsCheckpointStore(scratch.dir);
    tr = scratch.trainer;
  });

  /** Trains a 12-step segment, storing every state; `cheat` may replace the state after step 7. */
  async function segment(cheat?: (s: TrainingState) => Promise<TrainingState>): Promise<Checkpoint> {
    let s = tr.initialState(SEED_A);
    await putState(store, s);
    const start = stateHash(s);
    const hashes: string[] = [];
    for (let step = 1; step <= 12; step++) {
      s = (await tr.trainStep(s, WORK_A, step)).state;
      if (step === 7 && cheat) s = await cheat(s);
      hashes.push(await putState(store, s));
    }
    return {
      templateId: t.templateId,
      seed: SEED_A,
      step: 12,
      prevCheckpointHash: ZERO_HASH,
      maker: TEST_MAKER,
      profile: TEST_PROFILE,
      startStep: 0,
      startStateHash: start,
      segmentSteps: 1,
      stepHashes: hashes,
      state: s,
    };
  }

  it("every replayed step of an honest segment matches its committed hash", async function () {
    const c = decodeCheckpoint(encodeCheckpoint(await segment()));
    for (const step of sampleSteps(SEED_B, 0, 12, 4)) {
      const r = await replayCommittedStep(tr, store, c, step);
      expect(r.ok, `step ${step}`).to.equal(true);
    }
  });

  it("a step trained on the wrong data is refused when sampled", async function () {
    const c = await segment(async () => {
      const prev = await trainTo(tr, tr.initialState(SEED_A), WORK_A, 6);
      return (await tr.trainStep(prev.state, WORK_A, 7, { dataSeedOverride: SEED_B })).state;
    });
    expect((await replayCommittedStep(tr, store, c, 7)).ok).to.equal(false);
    expect((await replayCommittedStep(tr, store, c, 3)).ok).to.equal(true);
  });

  it("fabricated (perturbed) weights after a step are refused when that step is sampled", async function () {
    const c = await segment(async (s) => ({
      ...s,
      weights: s.weights.map((w) => ({ ...w, data: w.data.map((v, i) => v + ((i % 7) - 3) * 1e-3) })),
    }));
    expect((await replayCommittedStep(tr, store, c, 7)).ok).to.equal(false);
  });

  it("chain checks refuse an old checkpoint replayed and a segment that skips steps", async function () {
    const first = await segment();
    const firstHash = blobHash(encodeCheckpoint(first));
    expect(chainProblems(first)).to.deep.equal([]);
    const next = { ...first, prevCheckpointHash: firstHash, startStep: 12, startStateHash: stateHash(first.state) };
    const { state, hashes } = await trainTo(tr, first.state, SEED_A, 15);
    const good: Checkpoint = { ...next, step: 15, state, stepHashes: hashes };
    expect(chainProblems(good, first, firstHash)).to.deep.equal([]);
    expect(chainProblems(first, first, firstHash)).to.not.be.empty; // replayed old checkpoint
    const skipping: Checkpoint = { ...good, startStep: 13, stepHashes: hashes.slice(1) };
    expect(chainProblems(skipping, first, firstHash).join()).to.match(/starts at step 13/);
  });

  it("step sampling is deterministic per salt, distinct, in range and sorted", function () {
    const a = sampleSteps(SEED_B, 100, 200, 10);
    expect(sampleSteps(SEED_B, 100, 200, 10)).to.deep.equal(a);
    expect(new Set(a).size).to.equal(10);
    expect(a.every((s) => s > 100 && s <= 200)).to.equal(true);
    expect([...a].sort((x, y) => x - y)).to.deep.equal(a);
    expect(sampleSteps(SEED_A, 100, 200, 10)).to.not.deep.equal(a);
    expect(sampleSteps(SEED_A, 0, 3, 10)).to.deep.equal([1, 2, 3]);
  });

  it("detection probability of sampling k of n steps matches 1 - C(n-b,k)/C(n,k)", function () {
    // Not chai's closeTo: Hardhat's matchers take it over for bigints and reject fractions when suites run together.
    expect(Math.abs(detectionProbability(100, 10, 1) - 0.1)).to.be.below(1e-12);
    expect(Math.abs(detectionProbability(4, 2, 2) - (1 - 1 / 6))).to.be.below(1e-12);
    expect(detectionProbability(1000, 20, 100)).to.be.above(0.87);
    expect(detectionProbability(10, 5, 6)).to.equal(1);
    expect(detectionProbability(10, 5, 0)).to.equal(0);
  });
});
