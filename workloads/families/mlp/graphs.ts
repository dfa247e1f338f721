// The four ONNX graphs of an MLP template. All training arithmetic (forward, loss, backward,
// gradient reduction, optimizer) happens inside these graphs, run by onnxruntime, and uses only
// portable ops (onnx/portableOps.ts): the same bits on every CPU family and device.
import { GraphBuilder, attrGraph, attrInt } from "../../onnx/builder.ts";
import {
  concat,
  contract,
  groupRows,
  logSumExp,
  softmaxParts,
  reciprocalOn,
  SOFTMAX_SUM_MIN,
  matmulRows,
  maxAxis,
  relu,
  reluGrad,
  scalar,
  slice,
  squeeze,
  sumAxis,
  transpose,
  unsqueeze,
} from "../../onnx/exact.ts";
import { intMatmul2d, intWeightGrad } from "../../onnx/integer.ts";
import { heldoutPerClass } from "../../metric.ts";
import type { ParamSpec, TemplateDescriptor, TemplateGraphs } from "../../types.ts";

export function paramSpecs(layers: number[]): ParamSpec[] {
  const out: ParamSpec[] = [];
  for (let l = 0; l + 1 < layers.length; l++) {
    out.push({ name: `w${l}`, dims: [layers[l], layers[l + 1]] });
    out.push({ name: `b${l}`, dims: [layers[l + 1]] });
  }
  return out;
}

export type Forward = { inputs: string[]; pre: string[]; logits: string };

/**
 * The MLP's layers over x: `affine(h, l)` is layer l's h·w + b, `activate` follows every layer but the last.
 * Keeps the layer inputs and pre-activations for backward.
 */
export function mlpForward(
  layersCount: number,
  x: string,
  affine: (h: string, l: number) => string,
  activate: (p: string) => string,
): Forward {
  const inputs: string[] = [];
  const pre: string[] = [];
  let h = x;
  for (let l = 0; l < layersCount; l++) {
    inputs.push(h);
    const p = affine(h, l);
    pre.push(p);
    h = l + 1 < layersCount ? activate(p) : p;
  }
  return { inputs, pre, logits: h };
}

/** h [...rows, features] → logits [...rows, classes], in portable ops. */
function forward(
  g: GraphBuilder,
  d: TemplateDescriptor,
  params: string[],
  x: string,
  rank: number,
  maxRows: number,
): Forward {
  const layers = d.layers;
  const affine = (h: string, l: number) =>
    g.op("Add", [product(g, d, h, rank, params[2 * l], layers[l], layers[l + 1], maxRows), params[2 * l + 1]]);
  return mlpForward(params.length / 2, x, affine, (p) => relu(g, p));
}

/**
 * h [...rows, K] · w [K, J] → [...rows, J]: exact integer products, or the float tree when the descriptor has no limbs.
 * `wT`: w is given as wᵀ [J, K] (the backward product by a layer's weight).
 */
function product(
  g: GraphBuilder,
  d: TemplateDescriptor,
  h: string,
  rank: number,
  w: string,
  K: number,
  J: number,
  maxRows: number,
  wT = false,
): string {
  const limbs = d.arithmetic?.limbs;
  if (!limbs) return matmulRows(g, h, rank, wT ? transpose(g, w, [1, 0]) : w, K, J, maxRows);
  // lean quantization: a's rows are the batch's (all as many), b's rows (wᵀ's) are J
  const keys = { a: "batch", b: `out:${J}` };
  if (rank === 2) return intMatmul2d(g, h, w, K, limbs, keys, wT);
  const rows = g.op("Reshape", [h, g.constInt64([-1, K])]);
  return g.op("Reshape", [intMatmul2d(g, rows, w, K, limbs, keys, wT), g.constInt64([-1, d.atomSize, J])]);
}

/** Per-row negative log-likelihood of one-hot labels y along the last axis (C classes). */
function softmaxNll(g: GraphBuilder, logits: string, y: string, rank: number, C: number): string {
  const { shifted, lse } = logSumExp(g, logits, rank, C);
  const logp = g.op("Sub", [shifted, lse]);
  return g.op("Neg", [squeeze(g, sumAxis(g, g.op("Mul", [y, logp]), C, rank - 1), [rank - 1])]);
}

/** A graph named for `d` and `what` whose first inputs are the parameters; F features in, C classes out. */
export function mlpGraph(d: TemplateDescriptor, what: string) {
  const specs = paramSpecs(d.layers);
  const g = new GraphBuilder(`${d.name}-${what}`);
  return { specs, g, params: paramInputs(g, specs), F: d.layers[0], C: d.layers[d.layers.length - 1] };
}

export function paramInputs(g: GraphBuilder, specs: ParamSpec[], prefix = ""): string[] {
  return specs.map((p) => g.input(prefix + p.name, p.dims));
}

/**
 * Σ_s h[a, s, i]·dp[a, s, o] per atom → [atoms, in, out]: a fixed tree over the atom's S rows.
 * Computed in blocks of `in` (a free axis: the blocks change memory, not arithmetic).
 */
function weightGrad(
  g: GraphBuilder,
  d: TemplateDescriptor,
  h: string,
  dp: string,
  nIn: number,
  nOut: number,
  maxRows: number,
) {
  const S = d.atomSize;
  const limbs = d.arithmetic?.limbs;
  if (limbs) return intWeightGrad(g, h, dp, S, limbs, { hWidth: nIn, dWidth: nOut });
  const hs = unsqueeze(g, transpose(g, h, [1, 0, 2]), [3]); // [S, atoms, in, 1]
  const ds = unsqueeze(g, transpose(g, dp, [1, 0, 2]), [2]); // [S, atoms, 1, out]
  const block = groupRows((maxRows / S) * nOut);
  const parts: string[] = [];
  for (let lo = 0; lo < nIn; lo += block) {
    const part = nIn <= block ? hs : slice(g, hs, 2, lo, Math.min(nIn, lo + block));
    parts.push(contract(g, part, ds, S, 1));
  }
  return concat(g, parts, 1);
}

/**
 * Gradient graph. Inputs: params, x [atoms, atomSize, F], y [atoms, atomSize, C] (one-hot).
 * Outputs: g_<param> [atoms, ...param dims] (each atom's share of the gradient of the global-batch
 * mean loss) and the reported loss's parts (outputLossParts).
 * Every output element is a fixed tree over its own atom's rows, so it does not depend on how many
 * atoms share the call; only portable ops are used (onnx/exact.ts).
 */
export function buildGradientGraph(d: TemplateDescriptor): Uint8Array {
  const { specs, g, params, F, C } = mlpGraph(d, "gradient");
  const S = d.atomSize;
  const x = g.input("x", ["atoms", S, F]);
  const y = g.input("y", ["atoms", S, C]);
  const fw = forward(g, d, params, x, 3, d.globalBatch);
  const head = lossHead(g, d, fw.logits, y, C);
  let dp = head.dLogits;
  const grads: string[] = new Array(params.length);
  for (let l = params.length / 2 - 1; l >= 0; l--) {
    const [nIn, nOut] = [d.layers[l], d.layers[l + 1]];
    grads[2 * l] = weightGrad(g, d, fw.inputs[l], dp, nIn, nOut, d.globalBatch);
    grads[2 * l + 1] = squeeze(g, sumAxis(g, transpose(g, dp, [1, 0, 2]), S, 0), [0]);
    if (l > 0) {
      const dh = product(g, d, dp, 3, params[2 * l], nOut, nIn, d.globalBatch, true); // dp · wᵀ
      dp = reluGrad(g, fw.pre[l - 1], dh);
    }
  }
  specs.forEach((p, i) => g.output(`g_${p.name}`, grads[i], ["atoms", ...p.dims]));
  outputLossParts(g, d, head, C);
  return g.encode();
}

/**
 * Softmax cross-entropy over logits [atoms, S, C]: the gradient of the global-batch mean loss with respect to the
 * logits, (softmax − y)/globalBatch, and the outputs the step's reported loss is made of (outputLossParts).
 */
export function lossHead(g: GraphBuilder, d: TemplateDescriptor, logits: string, y: string, C: number) {
  const { shifted, exps, sum } = softmaxParts(g, logits, 3, C);
  const softmax = g.op("Mul", [exps, reciprocalOn(g, sum, 0, SOFTMAX_SUM_MIN, C)]);
  const dLogits = g.op("Mul", [g.op("Sub", [softmax, y]), scalar(g, 1 / d.globalBatch)]);
  return { dLogits, shifted, sum };
}

/**
 * The reported loss's parts, per row: the shifted logits z − max z [atoms, S, C] and Σ e^(z − max z) [atoms, S, 1].
 * The trainer takes the log and the atoms' means in float64 (workloads/loss.ts): the loss is shown, never trained on
 * or verified, and a portable log in the graph was a fifth of a small model's nodes (each costs ≈ 1 µs).
 */
export function outputLossParts(g: GraphBuilder, d: TemplateDescriptor, head: ReturnType<typeof lossHead>, C: number) {
  g.output("loss_shifted", head.shifted, ["atoms", d.atomSize, C]);
  g.output("loss_exp_sum", head.sum, ["atoms", d.atomSize, 1]);
}

/**
 * Reduce graph: acc_<param> + g_<param>[0] + g_<param>[1] + ... strictly in atom order (ONNX Scan
 * runs its body once per atom, sequentially). Chaining calls over micro-batches therefore yields
 * the same float sums whatever the micro-batch size.
 */
export function buildReduceGraph(d: TemplateDescriptor, specs = paramSpecs(d.layers)): Uint8Array {
  const body = new GraphBuilder("reduce-body");
  const state = specs.map((p) => body.input(`s_${p.name}`, p.dims));
  const elems = specs.map((p) => body.input(`e_${p.name}`, p.dims));
  specs.forEach((p, i) => body.output(`o_${p.name}`, body.op("Add", [state[i], elems[i]]), p.dims));

  const g = new GraphBuilder(`${d.name}-reduce`);
  const acc = paramInputs(g, specs, "acc_");
  const grads = specs.map((p) => g.input(`g_${p.name}`, ["atoms", ...p.dims]));
  const outs = specs.map((p) => `sum_${p.name}`);
  const scanAttrs = [attrGraph("body", body.graph()), attrInt("num_scan_inputs", specs.length)];
  g.opMulti("Scan", [...acc, ...grads], scanAttrs, outs);
  specs.forEach((p, i) => g.output(outs[i], outs[i], p.dims));
  return g.encode();
}

/**
 * Update graph: SGD with momentum, m' = momentum·m + g (+ weightDecay·w for 2-D weights when the descriptor has
 * weightDecay: L2 regularisation, biases exempt), w' = w − lr·m'; or Lion when the descriptor names it (its weight
 * decay decoupled, 2-D weights only). lr is halved every lrHalvingSteps when set.
 */
export function buildUpdateGraph(d: TemplateDescriptor, specs = paramSpecs(d.layers)): Uint8Array {
  const g = new GraphBuilder(`${d.name}-update`);
  const w = paramInputs(g, specs, "w_");
  const m = paramInputs(g, specs, "m_");
  const gr = paramInputs(g, specs, "g_");
  // a schedule makes the step's rate an input (workloads/trainer.ts learningRate); otherwise it is a constant
  const lr = d.lrHalvingSteps ? g.input("lr", []) : g.constFloat([d.lr], []);
  const lion = d.optimizer?.kind === "lion" ? d.optimizer : undefined;
  const mu = lion ? "" : g.constFloat([d.momentum], []);
  const wd = d.weightDecay ? g.constFloat([d.weightDecay], []) : undefined;
  specs.forEach((p, i) => {
    const decay = wd && p.dims.length === 2 ? wd : undefined;
    const { w2, m2 } = lion
      ? lionStep(g, lion, w[i], m[i], gr[i], lr, decay)
      : sgdStep(g, w[i], m[i], gr[i], lr, mu, decay);
    g.output(`new_w_${p.name}`, w2, p.dims);
    g.output(`new_m_${p.name}`, m2, p.dims);
  });
  return g.encode();
}

/** m' = μ·m + g (+ decay·w); w' = w − lr·m'. */
function sgdStep(g: GraphBuilder, w: string, m: string, grad: string, lr: string, mu: string, decay?: string) {
  const gr = decay ? g.op("Add", [grad, g.op("Mul", [w, decay])]) : grad;
  const m2 = g.op("Add", [g.op("Mul", [m, mu]), gr]);
  return { w2: g.op("Sub", [w, g.op("Mul", [m2, lr])]), m2 };
}

/** Lion: w' = w − lr·(sign(β1·m + (1−β1)·g) + decay·w); m' = β2·m + (1−β2)·g. sign(0) = 0, by comparison. */
function lionStep(
  g: GraphBuilder,
  o: { beta1: number; beta2: number },
  w: string,
  m: string,
  grad: string,
  lr: string,
  decay?: string,
) {
  const mix = (beta: number) =>
    g.op("Add", [g.op("Mul", [m, scalar(g, beta)]), g.op("Mul", [grad, scalar(g, 1 - beta)])]);
  const c = mix(o.beta1);
  const sign = g.op("Where", [
    g.op("Greater", [c, scalar(g, 0)]),
    scalar(g, 1),
    g.op("Where", [g.op("Less", [c, scalar(g, 0)]), scalar(g, -1), scalar(g, 0)]),
  ]);
  const step = decay ? g.op("Add", [sign, g.op("Mul", [w, decay])]) : sign;
  return { w2: g.op("Sub", [w, g.op("Mul", [step, lr])]), m2: mix(o.beta2) };
}

/**
 * Evaluation graph: params, x [n, F], y [n, C] → loss (mean NLL) and accuracy (fraction of rows whose
 * label logit is the largest; exact ties count as correct). n is fixed: the held-out split's size.
 */
export function buildEvalGraph(d: TemplateDescriptor): Uint8Array {
  const { g, params, F, C } = mlpGraph(d, "evaluate");
  const n = heldoutPerClass(d.data) * C;
  const x = g.input("x", [n, F]);
  const y = g.input("y", [n, C]);
  evalOutputs(g, forward(g, d, params, x, 2, n).logits, y, n, C);
  return g.encode();
}

/**
 * The evaluation outputs over logits [n, C]: loss (mean NLL) and accuracy (fraction of rows whose label logit
 * is the largest; exact ties count as correct), as fixed trees.
 */
export function evalOutputs(g: GraphBuilder, logits: string, y: string, n: number, C: number): void {
  const mean = (t: string) => g.op("Mul", [squeeze(g, sumAxis(g, t, n, 0), [0]), scalar(g, Math.fround(1 / n))]);
  const labelLogit = sumAxis(g, g.op("Mul", [y, logits]), C, 1);
  const top = g.op("GreaterOrEqual", [labelLogit, maxAxis(g, logits, C, 1)]);
  const correct = squeeze(g, g.op("Where", [top, scalar(g, 1), scalar(g, 0)]), [1]);
  g.output("loss", mean(softmaxNll(g, logits, y, 2, C)), []);
  g.output("accuracy", mean(correct), []);
}

export function buildGraphs(d: TemplateDescriptor): TemplateGraphs {
  return graphsWith(d, buildGradientGraph, buildEvalGraph);
}

/** The four graphs of `d` with the given gradient and evaluation formulations (reduce and update are one). */
export function graphsWith(
  d: TemplateDescriptor,
  gradient: (d: TemplateDescriptor) => Uint8Array,
  evaluate: (d: TemplateDescriptor) => Uint8Array,
  specs: ParamSpec[] = paramSpecs(d.layers),
): TemplateGraphs {
  return {
    gradient: gradient(d),
    reduce: buildReduceGraph(d, specs),
    update: buildUpdateGraph(d, specs),
    evaluate: evaluate(d),
  };
}
