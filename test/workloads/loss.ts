// The reported training loss: taken in float64 from the gradient graph's loss parts (workloads/loss.ts).
import { expect } from "chai";
import { buildGraphs as legacyGraphs } from "../../bench/legacyGraphs.ts";
import { createTrainer, loadTemplate, type Template } from "../../workloads/index.ts";
import { atomLosses } from "../../workloads/loss.ts";
import { SEED_A } from "./helpers.ts";

async function firstStepLoss(t: Template, microBatchAtoms?: number): Promise<number> {
  const tr = await createTrainer(t, { microBatchAtoms });
  try {
    return (await tr.trainStep(tr.initialState(SEED_A), SEED_A, 1)).loss;
  } finally {
    await tr.close();
  }
}

describe("workloads: the reported training loss", function () {
  this.timeout(60_000);

  it("equals the loss of onnxruntime's LogSoftmax kernel on the same step within 10⁻⁴ (blobs-tiny: float products)", async function () {
    const t = loadTemplate("blobs-tiny");
    const mine = await firstStepLoss(t);
    const kernel = await firstStepLoss({ ...t, graphs: legacyGraphs(t.descriptor) });
    expect(mine).to.be.greaterThan(0.1);
    // the portable softmax's exp is within 4·10⁻⁵ (EXP_LOSS), the kernel's within an ulp or so
    expect(Math.abs(mine - kernel) / kernel).to.be.below(1e-4);
  });

  it("is the same number whatever the micro-batch (atoms are averaged in order)", async function () {
    const t = loadTemplate("mnist-mlp");
    expect(await firstStepLoss(t, 1)).to.equal(await firstStepLoss(t));
  });

  it("picks each row's label logit and averages each atom's rows", function () {
    // two atoms of two rows, three classes; row r's loss is ln Σ − shifted[label]
    const shifted = Float32Array.of(0, -1, -2, -3, 0, -1, -0.5, -0.25, 0, 0, -4, -4);
    const sums = Float32Array.from({ length: 4 }, (_, r) =>
      [0, 1, 2].reduce((s, c) => s + Math.exp(shifted[r * 3 + c]), 0),
    );
    const y = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1);
    const loss = atomLosses({ loss_shifted: { data: shifted }, loss_exp_sum: { data: sums } }, y, 2);
    const row = (r: number, label: number) => Math.log(sums[r]) - shifted[r * 3 + label];
    // not chai's closeTo: under the whole suite Hardhat's matchers take its operands for bigints
    expect(Math.abs(loss[0] - (row(0, 0) + row(1, 2)) / 2)).to.be.below(1e-12);
    expect(Math.abs(loss[1] - (row(2, 1) + row(3, 2)) / 2)).to.be.below(1e-12);
  });

  it("refuses outputs that do not fit the atoms or the labels", function () {
    const out = { loss_shifted: { data: new Float32Array(12) }, loss_exp_sum: { data: new Float32Array(4) } };
    expect(() => atomLosses(out, new Float32Array(12), 3)).to.throw(RangeError, /do not fit 3 atoms/);
    expect(() => atomLosses(out, new Float32Array(10), 2)).to.throw(RangeError, /10 labels/);
  });
});
