import { expect } from "chai";
import { rm } from "node:fs/promises";
import { putUpload } from "../../agent/blobs.ts";
import {
  applyStateFault,
  behaviourOf,
  faultyUpload,
  parseFault,
  wrongDataSeed,
  type Fault,
} from "../../agent/faults.ts";
import { honestUpload, type Segment, type SegmentStart } from "../../agent/segment.ts";
import { isAbandoned, trainSegment } from "../../agent/train.ts";
import {
  blobHash,
  chainProblems,
  checkNumbers,
  createTrainer,
  decodeCheckpoint,
  HashMismatchError,
  NonFiniteError,
  replayCommittedStep,
  stateHash,
  ZERO_HASH,
  type FsCheckpointStore,
  type Trainer,
} from "../../workloads/index.ts";
import { BLOBS, tmpStore } from "./helpers.ts";
import { TEST_MAKER, TEST_PROFILE } from "../verifier/helpers.ts";

const SEED = "0x" + "a1".repeat(32);

describe("agent: injected faults produce what they claim", function () {
  let tr: Trainer;
  let store: FsCheckpointStore;
  const start = (): SegmentStart => ({
    templateId: BLOBS.templateId,
    seed: SEED,
    prevCheckpointHash: ZERO_HASH,
    maker: TEST_MAKER,
    profile: TEST_PROFILE,
    start: tr.initialState(SEED),
  });
  async function segment(fault?: Fault, toStep = 6): Promise<Segment> {
    const seg = await trainSegment(tr, start(), toStep, behaviourOf(fault));
    if (isAbandoned(seg)) throw new Error("abandoned");
    return seg;
  }
  /** Stores the upload as the agent would and replays every claimed step as a verifier would. */
  async function replayAll(seg: Segment, fault?: Fault): Promise<boolean[]> {
    const up = faultyUpload(seg, fault);
    await putUpload(store, up);
    const c = decodeCheckpoint(up.checkpointBytes);
    const out: boolean[] = [];
    for (let s = c.startStep + 1; s <= c.step; s++) out.push((await replayCommittedStep(tr, store, c, s)).ok);
    return out;
  }
  let honest: Segment;

  before(async () => {
    tr = await createTrainer(BLOBS);
    store = await tmpStore();
    honest = await segment();
  });
  after(async () => {
    await tr.close();
    await rm(store.dir, { recursive: true, force: true });
  });

  it("honest work: the reported hash is the blob's, and every step replays", async function () {
    const up = faultyUpload(honest, undefined);
    expect(up.reportedHash).to.equal(blobHash(up.checkpointBytes));
    expect(up.faults).to.deep.equal([]);
    // Segment boundaries only (m = 2 at 6 steps: steps 2, 4 and 5; the start is the accepted state, 6 is embedded).
    expect(up.stateBlobs).to.have.length(3);
    expect(await replayAll(honest)).to.deep.equal([true, true, true, true, true, true]);
  });

  it("garbage-weights: the blob decodes, but its final weights are random and the last step does not replay", async function () {
    const fault = parseFault("garbage-weights");
    const up = faultyUpload(honest, fault);
    const c = decodeCheckpoint(up.checkpointBytes);
    expect(c.state.weights[0].data).to.not.deep.equal(honest.states[5].weights[0].data);
    expect(await replayAll(honest, fault)).to.deep.equal([true, true, true, true, true, false]);
    const acc = await tr.evaluate(c.state);
    expect(acc.accuracy).to.be.lessThan((await tr.evaluate(honest.states[5])).accuracy);
  });

  it("skip-steps: trains fewer steps than it claims; the fabricated steps fail replay", async function () {
    const fault = parseFault("skip-steps");
    const seg = await segment(fault);
    expect(seg.trainedSteps).to.equal(3);
    expect(seg.states).to.have.length(6);
    expect(decodeCheckpoint(faultyUpload(seg, fault).checkpointBytes).step).to.equal(6);
    expect(await replayAll(seg, fault)).to.deep.equal([true, true, true, false, false, false]);
  });

  it("wrong-data: trains every step on another data seed; no step replays from the job seed", async function () {
    const fault = parseFault("wrong-data");
    const seg = await segment(fault);
    expect(wrongDataSeed(SEED)).to.not.equal(SEED);
    expect(decodeCheckpoint(faultyUpload(seg, fault).checkpointBytes).seed).to.equal(SEED);
    expect(await replayAll(seg, fault)).to.deep.equal([false, false, false, false, false, false]);
  });

  it("nan: the final state holds a NaN: checkNumbers and decodeCheckpoint throw", function () {
    const fault = parseFault("nan");
    const seg = applyStateFault(fault, honest);
    expect(() => checkNumbers(seg.states[5])).to.throw(NonFiniteError);
    expect(() => decodeCheckpoint(faultyUpload(honest, fault).checkpointBytes)).to.throw(NonFiniteError);
  });

  it("hash-mismatch: the blob stored under the reported hash has another content hash", async function () {
    const up = faultyUpload(honest, parseFault("hash-mismatch"));
    expect(up.reportedHash).to.equal(honestUpload(honest).reportedHash);
    expect(blobHash(up.checkpointBytes)).to.not.equal(up.reportedHash);
    const fresh = await tmpStore(); // (a store that already holds the honest blob keeps it: blobs are never overwritten)
    await putUpload(fresh, up);
    expect(await fresh.has(up.reportedHash)).to.equal(true);
    const err = await fresh.get(up.reportedHash).then(
      () => undefined,
      (e) => e,
    );
    expect(err).to.be.instanceOf(HashMismatchError);
    await rm(fresh.dir, { recursive: true, force: true });
  });

  it("replay-old: reports the previous checkpoint's hash and blob again for a later step", async function () {
    const old = honestUpload(honest);
    const next = await trainSegment(
      tr,
      {
        templateId: BLOBS.templateId,
        seed: SEED,
        prevCheckpointHash: old.reportedHash,
        maker: TEST_MAKER,
        profile: TEST_PROFILE,
        start: honest.states[5],
      },
      10,
    );
    if (isAbandoned(next)) throw new Error("abandoned");
    const up = faultyUpload(next, parseFault("replay-old"), {
      old: { hash: old.reportedHash, bytes: old.checkpointBytes },
    });
    expect(up.step).to.equal(10);
    expect(up.reportedHash).to.equal(old.reportedHash);
    expect(up.checkpoint.step).to.equal(6);
    expect(chainProblems(decodeCheckpoint(up.checkpointBytes), old.checkpoint, old.reportedHash)).to.not.be.empty;
    // Without an old checkpoint (the job's first interval) there is nothing to replay: honest.
    expect(faultyUpload(honest, parseFault("replay-old")).reportedHash).to.equal(old.reportedHash);
  });

  it("die-at:N: dies right after step N, mid-interval, with nothing trained after it", async function () {
    const steps: number[] = [];
    let diedAt = 0;
    const err = await trainSegment(tr, start(), 6, behaviourOf(parseFault("die-at:3")), {
      afterStep: (s) => {
        steps.push(s);
      },
      die: (s) => {
        diedAt = s;
        throw new Error("killed");
      },
    }).then(
      () => undefined,
      (e) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect(diedAt).to.equal(3);
    expect(steps).to.deep.equal([1, 2, 3]);
  });

  it("faults leave the honest segment untouched (pure)", function () {
    const before = stateHash(honest.states[5]);
    for (const k of ["garbage-weights", "nan", "hash-mismatch"]) faultyUpload(honest, parseFault(k));
    expect(stateHash(honest.states[5])).to.equal(before);
  });
});
