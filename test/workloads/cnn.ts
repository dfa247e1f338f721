// The CNN family: its hand-written backward pass against onnxruntime's own Conv/ConvTranspose
// kernels and against finite differences, its integer gradients against float ones, micro-batch invariance and
// learning on MNIST. (No chai closeTo: under the whole suite Hardhat's matchers take its operands for bigints.)
import { expect } from "chai";
import {
  buildTemplate,
  createTrainer,
  loadTemplate,
  stateHash,
  type TemplateDescriptor,
} from "../../workloads/index.ts";
import { buildCnnGradientGraph, cnnParamSpecs } from "../../workloads/families/cnn/graphs.ts";
import {
  blockRoundedFloatProducts,
  floatKernelProducts,
  integerProducts,
  type Products,
} from "../../workloads/families/cnn/products.ts";
import { atomLosses } from "../../workloads/loss.ts";
import { nonPortableOps } from "../../workloads/onnx/portableOps.ts";
import { createSession, f32, type Feeds } from "../../workloads/runtime.ts";
import { cosine, lcg, microBatchHashes, randomParams, SEED_A, trainTo } from "./helpers.ts";

/** A tiny CNN: 6×6×2 input, two stages (3 and 4 channels), a 4→3 head... sized so finite differences are cheap. */
const TINY: TemplateDescriptor = {
  name: "cnn-tiny-test",
  version: 1,
  family: "cnn",
  conv: { image: [8, 8, 2], channels: [3, 4] },
  layers: [16, 5, 3],
  globalBatch: 4,
  atomSize: 2,
  lr: 0.1,
  momentum: 0.9,
  evalRules: { maxRegression: 0.05, targetAccuracy: 0.5 },
  data: { kind: "blobs", classes: 3, features: 128, perClass: 8, heldoutPerClass: 2, spread: 1, trainCount: 16 },
  arithmetic: { limbs: 1 },
};

/** Random parameters and one batch (4 samples in 2 atoms) for TINY. */
function fixture() {
  const next = lcg(42);
  const params = randomParams(cnnParamSpecs(TINY), next);
  const x = Float32Array.from({ length: 4 * 128 }, () => next());
  const y = new Float32Array(4 * 3);
  [0, 2, 1, 0].forEach((c, i) => (y[i * 3 + c] = 1));
  return { params, x, y };
}

type Fixture = ReturnType<typeof fixture>;

async function gradients(p: Products, fx: Fixture) {
  const s = await createSession(buildCnnGradientGraph(TINY, p), "cpu");
  try {
    const feeds: Feeds = { x: f32(fx.x, [2, 2, 128]), y: f32(fx.y, [2, 2, 3]) };
    for (const t of fx.params) feeds[t.name] = f32(t.data, t.dims);
    const out = await s.run(feeds);
    const total = (name: string, size: number) => {
      const g = out[`g_${name}`].data as Float32Array; // [atoms, …]: the full gradient is the sum over atoms
      return Float64Array.from({ length: size }, (_, i) => g[i] + g[size + i]);
    };
    const loss = atomLosses(out, fx.y, 2).reduce((a, b) => a + b, 0) / 2;
    return { loss, grads: fx.params.map((t) => total(t.name, t.data.length)) };
  } finally {
    await s.release();
  }
}

const worstRelative = (a: Float64Array, b: Float64Array) => {
  const scale = Math.max(...Array.from(b, Math.abs), 1e-12);
  return Math.max(...Array.from(a, (v, i) => Math.abs(v - b[i]))) / scale;
};

describe("workloads: the CNN family", function () {
  it("its graphs pass the portable rule; the float-kernel formulation (Conv, ConvTranspose) does not", function () {
    const t = loadTemplate("mnist-cnn");
    for (const [kind, bytes] of Object.entries(t.graphs)) expect(nonPortableOps(bytes), kind).to.deep.equal([]);
    expect(nonPortableOps(buildCnnGradientGraph(TINY, floatKernelProducts(2)))).to.include.members([
      "Conv",
      "ConvTranspose",
      "MatMul",
    ]);
  });

  it("the im2col backward pass equals onnxruntime's Conv/ConvTranspose kernels' (float, every parameter)", async function () {
    const fx = fixture();
    const mine = await gradients(blockRoundedFloatProducts(), fx);
    const kernels = await gradients(floatKernelProducts(2), fx);
    expect(Math.abs(mine.loss - kernels.loss), "loss").to.be.below(1e-5);
    mine.grads.forEach((g, i) => expect(worstRelative(g, kernels.grads[i]), fx.params[i].name).to.be.below(1e-4));
  });

  it("the gradient equals finite differences of the loss (float kernels, a sample of coordinates per parameter)", async function () {
    const fx = fixture();
    const { grads } = await gradients(floatKernelProducts(2), fx);
    const eps = 1e-3;
    for (const [pi, t] of fx.params.entries()) {
      for (const i of [0, Math.floor(t.data.length / 2), t.data.length - 1]) {
        const keep = t.data[i];
        t.data[i] = keep + eps;
        const up = (await gradients(floatKernelProducts(2), fx)).loss;
        t.data[i] = keep - eps;
        const down = (await gradients(floatKernelProducts(2), fx)).loss;
        t.data[i] = keep;
        const numeric = (up - down) / (2 * eps);
        const gap = Math.abs(grads[pi][i] - numeric);
        expect(gap, `${t.name}[${i}]: ${grads[pi][i]} against ${numeric}`).to.be.below(2e-3 + 0.02 * Math.abs(numeric));
      }
    }
  });

  it("the integer products compute the block floating point model: as float kernels on the rounded operands", async function () {
    const fx = fixture();
    for (const limbs of [1, 2] as const) {
      const float = await gradients(blockRoundedFloatProducts(limbs), fx);
      const integer = await gradients(integerProducts(limbs), fx);
      expect(Math.abs(integer.loss - float.loss), `${limbs}: loss`).to.be.below(1e-4);
      integer.grads.forEach((g, i) =>
        expect(worstRelative(g, float.grads[i]), `${limbs}: ${fx.params[i].name}`).to.be.below(1e-3),
      );
    }
  });

  it("two limbs follow the float model's gradients closely; one limb's forward rounding moves pooling winners", async function () {
    const fx = fixture();
    const float = await gradients(blockRoundedFloatProducts(), fx);
    const two = await gradients(integerProducts(2), fx);
    two.grads.forEach((g, i) => expect(cosine(g, float.grads[i]), fx.params[i].name).to.be.above(0.9999));
    const one = await gradients(integerProducts(1), fx);
    one.grads.forEach((g, i) => expect(cosine(g, float.grads[i]), fx.params[i].name).to.be.above(0.9));
  });

  it("mnist-cnn: micro-batches of 1, 3 and 8 atoms give bitwise identical states", async function () {
    const t = loadTemplate("mnist-cnn");
    const hashes = await microBatchHashes(t, [8, 1, 3], 2);
    expect(hashes[1]).to.deep.equal(hashes[0]);
    expect(hashes[2]).to.deep.equal(hashes[0]);
  });

  it("mnist-cnn learns: held-out accuracy above 0.9 after 100 steps", async function () {
    this.timeout(120_000);
    const tr = await createTrainer(loadTemplate("mnist-cnn"));
    try {
      const { state } = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 100);
      expect(stateHash(state)).to.match(/^0x[0-9a-f]{64}$/);
      expect((await tr.evaluate(state)).accuracy).to.be.above(0.9);
    } finally {
      await tr.close();
    }
  });

  it("a cnn descriptor whose maps cannot be pooled, or whose head does not fit the last map, is refused", function () {
    expect(() => buildTemplate({ ...TINY, conv: { image: [6, 6, 2], channels: [3, 4] } })).to.throw(/cannot be pooled/);
    expect(() => buildTemplate({ ...TINY, layers: [15, 3] })).to.throw(/flattened 2×2 map: 16, got 15/);
    expect(() => buildTemplate({ ...TINY, arithmetic: undefined })).to.throw(/exact integer products/);
  });
});
