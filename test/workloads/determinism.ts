import { expect } from "chai";
import {
  createTrainer,
  decodeCheckpoint,
  encodeCheckpoint,
  ExecutionProviderError,
  loadTemplate,
  replayStep,
  stateHash,
  StepOrderError,
  ZERO_HASH,
  type Trainer,
} from "../../workloads/index.ts";
import { SEED_A, SEED_B, trainTo } from "./helpers.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";

describe("workloads: deterministic training", function () {
  const mnist = loadTemplate("mnist-mlp");
  const trainers: Trainer[] = [];
  const trainer = async (microBatchAtoms?: number) => {
    const tr = await createTrainer(mnist, { microBatchAtoms });
    trainers.push(tr);
    return tr;
  };
  after(async () => Promise.all(trainers.map((t) => t.close())));

  it("micro-batches of 8, 16, 32 and 64 samples give bitwise identical mnist weights after 20 steps", async function () {
    const hashes: string[] = [];
    for (const atoms of [1, 2, 4, 8]) {
      // atomSize 8 → 8/16/32/64 samples per micro-batch
      const tr = await trainer(atoms);
      expect(tr.microBatchAtoms * mnist.descriptor.atomSize).to.equal(atoms * 8);
      const { state } = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 20);
      hashes.push(stateHash(state));
    }
    expect(new Set(hashes).size, hashes.join("\n")).to.equal(1);
  });

  it("an uneven micro-batch split (3 atoms) still gives the same state", async function () {
    const [a, b] = [await trainer(3), await trainer(8)];
    const ra = await trainTo(a, a.initialState(SEED_A), SEED_A, 5);
    const rb = await trainTo(b, b.initialState(SEED_A), SEED_A, 5);
    expect(ra.hashes).to.deep.equal(rb.hashes);
    expect(ra.loss).to.equal(rb.loss);
  });

  it("two runs with the same seed produce the same per-step hashes; another seed produces different ones", async function () {
    const tr = await trainer();
    const run1 = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 10);
    const run2 = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 10);
    const other = await trainTo(tr, tr.initialState(SEED_B), SEED_B, 10);
    expect(run2.hashes).to.deep.equal(run1.hashes);
    expect(stateHash(tr.initialState(SEED_B))).to.not.equal(stateHash(tr.initialState(SEED_A)));
    other.hashes.forEach((h, i) => expect(h).to.not.equal(run1.hashes[i]));
  });

  it("resuming from an encoded/decoded checkpoint at step 10 equals training 20 steps straight", async function () {
    const tr = await trainer();
    const s0 = tr.initialState(SEED_A);
    const straight = await trainTo(tr, s0, SEED_A, 20);
    const first = await trainTo(tr, s0, SEED_A, 10);
    const blob = encodeCheckpoint({
      templateId: mnist.templateId,
      seed: SEED_A,
      step: 10,
      prevCheckpointHash: ZERO_HASH,
      maker: TEST_MAKER,
      profile: TEST_PROFILE,
      startStep: 0,
      startStateHash: stateHash(s0),
      segmentSteps: 1,
      stepHashes: first.hashes,
      state: first.state,
    });
    const resumed = decodeCheckpoint(blob);
    const second = await trainTo(tr, resumed.state, resumed.seed, 20);
    expect(stateHash(second.state)).to.equal(stateHash(straight.state));
    expect([...first.hashes, ...second.hashes]).to.deep.equal(straight.hashes);
  });

  it("replayStep from the committed previous state reproduces trainStep's hash", async function () {
    const tr = await trainer();
    const verifier = await trainer(1); // a verifier may use any micro-batch size
    const { state: s6 } = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 6);
    const { state: s7 } = await tr.trainStep(s6, SEED_A, 7);
    expect(stateHash(await replayStep(verifier, s6, SEED_A, 7))).to.equal(stateHash(s7));
  });

  it("training on the wrong data (dataSeedOverride) changes the state hash", async function () {
    const tr = await trainer();
    const s0 = tr.initialState(SEED_A);
    const honest = await tr.trainStep(s0, SEED_A, 1);
    const wrong = await tr.trainStep(s0, SEED_A, 1, { dataSeedOverride: SEED_B });
    expect(stateHash(wrong.state)).to.not.equal(stateHash(honest.state));
  });

  it("a step that does not follow the state's step is rejected with StepOrderError", async function () {
    const tr = await trainer();
    const s0 = tr.initialState(SEED_A);
    let err: unknown;
    await tr.trainStep(s0, SEED_A, 2).catch((e) => (err = e));
    expect(err).to.be.instanceOf(StepOrderError);
  });

  it("requesting the cuda execution provider without CUDA fails with a clear ExecutionProviderError", async function () {
    let err: unknown;
    await createTrainer(loadTemplate("blobs-tiny"), { executionProvider: "cuda" }).catch((e) => (err = e));
    expect(err).to.be.instanceOf(ExecutionProviderError);
    expect((err as Error).message).to.match(/cuda.*not available/);
  });
});
