/** The verifier's segment rules: the fixed segment length (t−1, t, t+1), and a bad step caught by its segment's replay. */
import { expect } from "chai";
import { honestUpload } from "../../agent/segment.ts";
import { FsCheckpointStore, loadTemplate, maxSegmentSteps, segmentSpans } from "../../workloads/index.ts";
import { minSegmentSteps, POOL_SEGMENTS_MAX } from "../../workloads/segments.ts";
import { newVerifyCache, verifyCheckpoint } from "../../verifier/checks.ts";
import { firstJob, Provider, seedOf } from "./helpers.ts";
import { useScratch } from "../helpers/scratch.ts";

describe("verifier: segment commitments", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-verifier-segments-", template);
  let provider: Provider;
  before(() => {
    provider = new Provider(scratch.trainer, new FsCheckpointStore(scratch.dir));
  });

  async function withSegments(seed: number, m: number) {
    const job = firstJob(template, seedOf(seed));
    const seg = await provider.train(await provider.startOf(job), 60);
    const report = await provider.put(honestUpload(seg, m));
    return verifyCheckpoint({
      template,
      trainer: scratch.trainer,
      store: provider.store,
      job,
      report,
      sampleSalt: seedOf(5),
      samples: 6,
      cache: newVerifyCache(),
    });
  }

  it("accepts segments of exactly the template default (t) and refuses shorter (t−1, 1) and longer (t+1) ones as bad-segments", async function () {
    const m = maxSegmentSteps(60);
    expect([m, minSegmentSteps(60)]).to.deep.equal([3, 3]);
    const v = await withSegments(40 + m, m);
    expect(v.accept, `m=${m}: ${v.reasons.join("; ")}`).to.equal(true);
    for (const other of [1, m - 1, m + 1]) {
      const w = await withSegments(50 + other, other);
      expect(w.codes, `m=${other}`).to.deep.equal(["bad-segments"]);
      expect(w.metrics.replayedSteps, "refused before any replay").to.equal(0);
    }
  });

  it("the fixed length leaves at most 20 pool segments at every interval from 1 to 5,000 (each sampled with p ≥ 1/20)", function () {
    let most = 0;
    for (let n = 1; n <= 5000; n++) most = Math.max(most, segmentSpans(0, n, minSegmentSteps(n)).length - 1);
    expect(most).to.equal(POOL_SEGMENTS_MAX);
  });

  it("a replayed segment checks every step in it, not only its end", async function () {
    // Every segment sampled (budget ≥ the interval): the one bad middle step must be refused by replay.
    const job = await provider.acceptedJob(seedOf(60), 20);
    const { report } = await provider.produce(job, 40, "fabricated-step");
    const v = await verifyCheckpoint({
      template,
      trainer: scratch.trainer,
      store: provider.store,
      job,
      report,
      sampleSalt: seedOf(6),
      samples: 40,
      cache: newVerifyCache(),
    });
    expect(v.codes).to.include("replay-mismatch");
  });
});
