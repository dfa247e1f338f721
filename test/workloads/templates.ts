import type { AccuracyRules } from "../../workloads/types.ts";
import { expect } from "chai";
import {
  batchIndices,
  buildTemplate,
  DESCRIPTORS,
  listTemplates,
  loadTemplate,
  microBatchForMemory,
  stepMemoryBytes,
  UnknownTemplateError,
} from "../../workloads/index.ts";
import { SEED_A, SEED_B } from "./helpers.ts";

describe("workloads: templates", function () {
  it("lists mnist-mlp (batch 64, atom 8) and blobs-tiny, with distinct bytes32 template ids", function () {
    const ts = listTemplates();
    expect(ts.map((t) => t.descriptor.name)).to.include.members(["mnist-mlp", "blobs-tiny"]);
    const mnist = loadTemplate("mnist-mlp");
    expect(mnist.descriptor.globalBatch).to.equal(64);
    expect(mnist.descriptor.atomSize).to.equal(8);
    for (const t of ts) expect(t.templateId).to.match(/^0x[0-9a-f]{64}$/);
    expect(new Set(ts.map((t) => t.templateId)).size).to.equal(ts.length);
  });

  it("rebuilding a descriptor gives the same id; changing any rule gives another id", function () {
    const d = DESCRIPTORS[0];
    expect(buildTemplate(structuredClone(d)).templateId).to.equal(loadTemplate(d.name).templateId);
    const changed = structuredClone(d);
    (changed.evalRules as AccuracyRules).targetAccuracy = 0.5;
    expect(buildTemplate(changed).templateId).to.not.equal(loadTemplate(d.name).templateId);
  });

  it("loads a template by its templateId in any hex case", function () {
    const t = loadTemplate("blobs-tiny");
    expect(loadTemplate(t.templateId.toUpperCase().replace("0X", "0x"))).to.equal(t);
  });

  it("an unknown template name or id throws UnknownTemplateError", function () {
    expect(() => loadTemplate("resnet-9000")).to.throw(UnknownTemplateError);
    expect(() => loadTemplate("0x" + "00".repeat(32))).to.throw(UnknownTemplateError);
  });

  it("a memory cap picks fewer atoms per micro-batch (capped profile); an impossible cap throws", function () {
    const t = loadTemplate("mnist-mlp");
    expect(microBatchForMemory(t, 1024)).to.equal(8);
    const small = microBatchForMemory(t, stepMemoryBytes(t, 2) / 2 ** 20);
    expect(small).to.equal(2);
    expect(() => microBatchForMemory(t, 0.5)).to.throw(RangeError);
  });
});

describe("workloads: deterministic data order", function () {
  const t = loadTemplate("mnist-mlp");
  const n = t.descriptor.data.trainCount;

  it("the same seed and step always give the same global batch of distinct training rows", function () {
    const a = batchIndices(t, SEED_A, 5);
    expect(a.length).to.equal(64);
    expect([...batchIndices(t, SEED_A, 5)]).to.deep.equal([...a]);
    expect(new Set(a).size).to.equal(64);
    for (const i of a) expect(i).to.be.within(0, n - 1);
  });

  it("the batch depends on the seed and on the step", function () {
    const a = [...batchIndices(t, SEED_A, 5)];
    expect([...batchIndices(t, SEED_B, 5)]).to.not.deep.equal(a);
    expect([...batchIndices(t, SEED_A, 6)]).to.not.deep.equal(a);
  });

  it("one epoch's steps never repeat a row, and the next epoch reshuffles", function () {
    const perEpoch = Math.floor(n / 64);
    const seen = new Set<number>();
    for (let s = 1; s <= perEpoch; s++) for (const i of batchIndices(t, SEED_A, s)) seen.add(i);
    expect(seen.size).to.equal(perEpoch * 64);
    expect([...batchIndices(t, SEED_A, perEpoch + 1)]).to.not.deep.equal([...batchIndices(t, SEED_A, 1)]);
  });

  it("rejects step 0 and malformed seeds", function () {
    expect(() => batchIndices(t, SEED_A, 0)).to.throw(RangeError);
    expect(() => batchIndices(t, "0x1234", 1)).to.throw(TypeError);
  });
});
