/** The verifier's segment rules: segment length bound (t, t+1), and a bad step caught by its segment's replay. */
import { expect } from "chai";
import { honestUpload } from "../../agent/segment.ts";
import { FsCheckpointStore, loadTemplate, maxSegmentSteps } from "../../workloads/index.ts";
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

  it("accepts segments up to the template default (t−1, t) and refuses longer ones (t+1) as bad-segments", async function () {
    const max = maxSegmentSteps(60);
    expect(max).to.equal(3);
    for (const m of [max - 1, max]) {
      const v = await withSegments(40 + m, m);
      expect(v.accept, `m=${m}: ${v.reasons.join("; ")}`).to.equal(true);
    }
    const v = await withSegments(50, max + 1);
    expect(v.codes).to.deep.equal(["bad-segments"]);
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
