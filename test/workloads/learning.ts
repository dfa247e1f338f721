import type { AccuracyRules } from "../../workloads/types.ts";
import { expect } from "chai";
import { createTrainer, loadTemplate } from "../../workloads/index.ts";
import { SEED_A, trainTo } from "./helpers.ts";

describe("workloads: training learns", function () {
  it("mnist-mlp held-out accuracy rises from chance to above 80% within 300 steps", async function () {
    const t = loadTemplate("mnist-mlp");
    const tr = await createTrainer(t);
    try {
      const s0 = tr.initialState(SEED_A);
      const before = await tr.evaluate(s0);
      const { state } = await trainTo(tr, s0, SEED_A, 300);
      const after = await tr.evaluate(state);
      expect(before.accuracy).to.be.below(0.3);
      expect(after.accuracy).to.be.above(0.8);
      expect(after.loss).to.be.below(before.loss / 3);
    } finally {
      await tr.close();
    }
  });

  it("blobs-tiny reaches its template's target accuracy within 300 steps", async function () {
    const t = loadTemplate("blobs-tiny");
    const tr = await createTrainer(t);
    try {
      const { state } = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 300);
      expect((await tr.evaluate(state)).accuracy).to.be.at.least(
        (t.descriptor.evalRules as AccuracyRules).targetAccuracy,
      );
    } finally {
      await tr.close();
    }
  });
});
