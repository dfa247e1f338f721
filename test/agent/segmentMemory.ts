// The agent keeps only a hash of each state it will not upload (agent/segment.ts hashedOnly: holding an
// interval's states whole cost the trainer a quarter of its speed): the upload and the reported hash are the same
// bytes as with every state kept whole, and the states it dropped are really gone from the segment.
import { expect } from "chai";
import { hashedOnly, honestUpload, noteState, type Segment } from "../../agent/segment.ts";
import { isAbandoned, trainSegment, type TrainHooks } from "../../agent/train.ts";
import {
  blobHash,
  createTrainer,
  defaultSegmentSteps,
  encodeState,
  loadTemplate,
  stateHash,
  storedSteps,
  ZERO_HASH,
  type Trainer,
} from "../../workloads/index.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";

const SEED = "0x" + "b2".repeat(32);
const STEPS = 40;

describe("agent: a segment keeps only the states it uploads", function () {
  let tr: Trainer;
  before(async () => (tr = await createTrainer(loadTemplate("blobs-tiny"))));
  after(() => tr.close());

  async function train(hooks: TrainHooks): Promise<Segment> {
    const start = {
      templateId: tr.template.templateId,
      seed: SEED,
      prevCheckpointHash: ZERO_HASH,
      maker: TEST_MAKER,
      profile: TEST_PROFILE,
      start: tr.initialState(SEED),
    };
    const seg = await trainSegment(tr, start, STEPS, undefined, hooks);
    if (isAbandoned(seg)) throw new Error("abandoned");
    return seg;
  }

  it("gives the same upload as keeping every state whole; the others keep no tensor", async function () {
    const boundaries = new Set(storedSteps(0, STEPS, defaultSegmentSteps(STEPS)));
    const slim = await train({
      afterStep: (step, _loss, state) => void noteState(state, boundaries.has(step)),
      retire: hashedOnly,
    });
    const whole = await train({});
    const [a, b] = [honestUpload(slim), honestUpload(whole)];
    expect(a.reportedHash).to.equal(b.reportedHash);
    expect(Buffer.from(a.checkpointBytes).equals(Buffer.from(b.checkpointBytes))).to.equal(true);
    expect(a.stateBlobs.map(blobHash)).to.deep.equal(b.stateBlobs.map(blobHash));
    const dropped = slim.states.filter((s) => s.weights.length === 0).map((s) => s.step);
    const kept = slim.states.filter((s) => s.weights.length > 0).map((s) => s.step);
    // Whole: the boundaries (their bytes go up) and the last state (the next segment's start); only their hashes else.
    expect(kept).to.deep.equal([...new Set([...boundaries, STEPS])].filter((s) => s > 0).sort((x, y) => x - y));
    // m = 2 at 40 steps: every other state is a boundary, so 19 of the 40 keep only their hash.
    expect(dropped.length)
      .to.equal(STEPS - kept.length)
      .and.be.at.least(STEPS / 2 - 1);
  });

  it("hashes a state in place exactly as its blob hashes", async function () {
    const seg = await train({});
    for (const s of [seg.start, ...seg.states]) expect(stateHash(s)).to.equal(blobHash(encodeState(s)));
  });
});
