// The graphs of a decoder-only character transformer: learned token and position embeddings, pre-norm blocks of
// causal multi-head self-attention and a ReLU MLP, a final layer norm and a linear head. Layer norm has no gain
// or bias. Forward and backward are written out by hand in portable ops; every product goes through `Products`
// (exact integer products in the template, float MatMul for the verifiers' rule and for gradient checks).
import { GraphBuilder, attrInt } from "../../onnx/builder.ts";
import {
  concat,
  EXP_WEIGHTS_FLOOR,
  EXP_WEIGHTS_PRESCALE,
  nanCheck,
  expSquared,
  expWeights,
  inverseSqrt,
  reciprocal,
  SHIFT_MARGIN,
  logFromOne,
  maxAxis,
  scalar,
  slice,
  softmaxShift,
  split,
  squeeze,
  sumAxis,
  sumLast,
  transpose,
} from "../../onnx/exact.ts";
import type { Layout } from "../../onnx/integer.ts";
import { DT } from "../../onnx/schema.ts";
import type { ParamSpec, TemplateDescriptor, TemplateGraphs } from "../../types.ts";
import { graphsWith, paramInputs } from "../mlp/graphs.ts";

export type Shape = { T: number; D: number; H: number; blocks: number; F: number; V: number };

export function shapeOf(d: TemplateDescriptor): Shape {
  const t = d.transformer!;
  return { T: t.context, D: t.width, H: t.heads, blocks: t.blocks, F: t.hidden, V: d.layers[1] };
}

/**
 * Residual branches start near zero (their output projections at 0.05 of the He scale), the query/key/value
 * projection at 0.3 (attention starts near uniform) and the head at 0.1 (the first loss is near ln V): measured on
 * Moby-Dick, held-out loss 2.11 after 300 steps against 2.29 with He-scale projections (docs/WORKLOADS.md).
 */
export function transformerParams(d: TemplateDescriptor): ParamSpec[] {
  const { T, D, F, V, blocks } = shapeOf(d);
  const out: ParamSpec[] = [
    { name: "wte", dims: [V, D] },
    { name: "wpe", dims: [T, D] },
  ];
  for (let i = 0; i < blocks; i++) {
    out.push(
      { name: `b${i}_qkv`, dims: [D, 3 * D], initScale: 0.3 },
      { name: `b${i}_proj`, dims: [D, D], initScale: 0.05 },
      { name: `b${i}_fc`, dims: [D, F] },
      { name: `b${i}_fc_b`, dims: [F] },
      { name: `b${i}_out`, dims: [F, D], initScale: 0.05 },
      { name: `b${i}_out_b`, dims: [D] },
    );
  }
  out.push({ name: "head", dims: [D, V], initScale: 0.1 }, { name: "head_b", dims: [V] });
  return out;
}

/**
 * How a graph multiplies: a [..., M, K] · b [..., N, K] → [..., M, N] (dims known as given, the first may be −1);
 * `layout` says when a is given as [..., K, M] or b as [..., K, N] instead (no transpose needed by the caller).
 */
export type Products = {
  rows(g: GraphBuilder, a: string, aDims: number[], b: string, bDims: number[], layout?: Layout): string;
  /**
   * (a ⊙ f)ᵀ · b → [..., M, N] for a [..., K, M] that a forward product quantized along M (rows), f [..., K, 1]
   * optional, b [..., K, N]: portable, a's row blocks are reused and its scales folded into b (onnx/integer.ts
   * intProductFolded), so the T×T operand of an attention gradient is quantized once.
   */
  foldedT(g: GraphBuilder, a: string, aDims: number[], f: string | undefined, b: string, bDims: number[]): string;
  /**
   * Integer products only: t's rows hold values in [0, 1] (the attention weights), quantized with the fixed block
   * scale 1/128 (onnx/integer.ts quantizeUnitRows) instead of one from their row maxima; returns the rounded weights
   * (what products of them multiply), NaN in every row where `nanOf` holds a NaN or ±∞.
   */
  unitRows?(g: GraphBuilder, t: string, dims: number[], nanOf: string): string;
  /**
   * The products quantize an operand's blocks from one |x| per tensor (onnx/integer.ts magnitudes), so a gradient
   * that is both a weight gradient's operand (per atom, [A, N, n]) and a back product's is given to both in that
   * per-atom view: one Abs for the two. Exact integer sums: the same bits in either view.
   */
  sharedMagnitudes?: boolean;
  /**
   * rows() takes layout.aOnes (a [..., K, M] with a column of ones appended, not materialised: onnx/integer.ts
   * withOnesColumn): the layers' weight and bias gradients without a float Concat of h and the ones.
   */
  onesColumn?: boolean;
  /**
   * Kernels in place of the portable sums, maxima and exp over an axis (kept with length 1): only the bench's float
   * formulation sets them (ReduceSum, ReduceMax, Exp), to price what the portable spelling costs.
   */
  kernels?: {
    sum(g: GraphBuilder, t: string, axis: number): string;
    max(g: GraphBuilder, t: string, axis: number): string;
    exp(g: GraphBuilder, t: string): string;
  };
};

/** Σ over the last axis (length n) of a rank-`rank` tensor, kept with length 1. */
const sumOverLast = (c: Ctx, t: string, n: number, rank: number) =>
  c.prod.kernels ? c.prod.kernels.sum(c.g, t, rank - 1) : sumLast(c.g, t, n, rank);

const LN_EPS = 1e-5;
/** A score that no softmax weight can come from (its exp is then replaced by an exact 0). */
const MASKED = -1e30;

type Ctx = { g: GraphBuilder; d: TemplateDescriptor; s: Shape; p: Record<string, string>; prod: Products };

/** y, and 1/σ (σ = √(var + ε)), which the backward pass multiplies by. */
type Norm = { y: string; invSigma: string };

/** The mean over the last axis (length D) of [R, D]: the sum times fl(1/D) (no Div: exact.ts `reciprocal`). */
const meanLast = (c: Ctx, t: string, D: number) =>
  c.g.op("Mul", [sumOverLast(c, t, D, 2), scalar(c.g, Math.fround(1 / D))]);

/**
 * Layer norm over the last axis (length D) of [R, D], no gain or bias: (x − mean)·(var + ε)^−½. The inverse square
 * root is exact.ts `inverseSqrt` (no Sqrt, no Div: a GPU rounds those its own way); the float formulation's is
 * 1/Sqrt, as ordinary kernels compute it.
 */
function layerNorm(c: Ctx, x: string): Norm {
  const { g } = c;
  const D = c.s.D;
  const xc = g.op("Sub", [x, meanLast(c, x, D)]);
  const variance = g.op("Add", [meanLast(c, g.op("Mul", [xc, xc]), D), scalar(g, LN_EPS)]);
  const invSigma = c.prod.kernels ? g.op("Div", [scalar(g, 1), g.op("Sqrt", [variance])]) : inverseSqrt(g, variance, 2);
  return { y: g.op("Mul", [xc, invSigma]), invSigma };
}

/** dx of layer norm from dy: (dy − mean(dy) − ŷ·mean(dy·ŷ))/σ. */
function layerNormBack(c: Ctx, n: Norm, dy: string): string {
  const { g } = c;
  const D = c.s.D;
  const centred = g.op("Sub", [dy, meanLast(c, dy, D)]);
  const along = g.op("Mul", [n.y, meanLast(c, g.op("Mul", [dy, n.y]), D)]);
  return g.op("Mul", [g.op("Sub", [centred, along]), n.invSigma]);
}

/** x [R, K] · w [K, J] → [R, J]. */
function dense(c: Ctx, x: string, w: string, K: number, J: number): string {
  return c.prod.rows(c.g, x, [-1, K], w, [K, J], { bKN: true });
}

/** dy [R, J] · wᵀ → [R, K] for w [K, J]. */
function denseBack(c: Ctx, dy: string, w: string, K: number, J: number): string {
  return c.prod.rows(c.g, dy, [-1, J], w, [K, J]);
}

/** [R, D] → [B, H, T, dh] and back. */
const toHeads = (c: Ctx, t: string) => {
  const { T, H, D } = c.s;
  return transpose(c.g, c.g.op("Reshape", [t, c.g.constInt64([-1, T, H, D / H])]), [0, 2, 1, 3]);
};
const fromHeads = (c: Ctx, t: string) =>
  c.g.op("Reshape", [transpose(c.g, t, [0, 2, 1, 3]), c.g.constInt64([-1, c.s.D])]);

/** The softmax weights are exps ⊙ invDen (the float formulation: exps are the weights, no invDen). */
type Attention = { qs: string; ks: string; v: string; exps: string; invDen?: string; heads: string; out: string };

/**
 * Causal self-attention of a [R, D] given qkv weights: heads' outputs merged back to [R, D]. The portable
 * formulation scales q by 1/√dh before the product (dh-wide rows, not T-wide scores), masks by adding 0 or −10³⁰,
 * shifts by the row's ReduceMax (softmaxShift), exps by expWeights, rounds them to 8-bit q(e) in steps of 1/128
 * (exactly 0 at masked keys and below e^−8), and gets the softmax denominator from the product itself: V gets a row
 * of ones, so the integer product returns Σ_j q(e_j)·v_j and Σ_j q(e_j) (exact int32 sums of the same 8-bit weights)
 * and the output is their quotient — weights that sum to 1 up to one rounding, no sum tree over the keys. Backward
 * differentiates q(e)/Σq(e) as if the rounding were the identity, at the rounded weights the forward used, the
 * division by the (dh-wide) denominators folded into the products' dh-wide sides: no T×T tensor of probabilities.
 */
function attention(c: Ctx, a: string, wqkv: string): Attention {
  const { g } = c;
  const { T, D, H } = c.s;
  const dh = D / H;
  const [q, k, v] = split(g, dense(c, a, wqkv, D, 3 * D), 1, [D, D, D]).map((t) => toHeads(c, t));
  const scale = scalar(g, 1 / Math.sqrt(dh));
  const kernels = c.prod.kernels;
  if (kernels) {
    const scores = g.op("Mul", [c.prod.rows(g, q, [-1, H, T, dh], k, [-1, H, T, dh]), scale]);
    const causal = causalMask(g, T);
    const masked = g.op("Where", [causal, scores, scalar(g, MASKED)]);
    const shifted = g.op("Sub", [masked, kernels.max(g, masked, 3)]);
    const exps = g.op("Where", [causal, kernels.exp(g, shifted), scalar(g, 0)]);
    const probs = g.op("Div", [exps, kernels.sum(g, exps, 3)]);
    const heads = c.prod.rows(g, probs, [-1, H, T, T], v, [-1, H, T, dh], { bKN: true });
    const [qs, ks] = [g.op("Mul", [q, scale]), g.op("Mul", [k, scale])];
    return { qs, ks, v, exps: probs, heads, out: fromHeads(c, heads) };
  }
  // the scores, their mask and shift in expWeights' units (x·EXP_WEIGHTS_PRESCALE): its scaling rides on q's (dh-wide)
  const pre = EXP_WEIGHTS_PRESCALE;
  const qPre = g.op("Mul", [q, scalar(g, Math.fround(pre / Math.sqrt(dh)))]);
  const masked = g.op("Add", [c.prod.rows(g, qPre, [-1, H, T, dh], k, [-1, H, T, dh]), causalBias(g, T, pre)]);
  const shifted = softmaxShift(g, masked, 3, 4, Math.fround(SHIFT_MARGIN * pre));
  // e^x clipped at e^−8: rounded to 1/128 (unitRows) that is 0, masked keys included; else 0 by a selection
  const raw = expWeights(g, shifted);
  const weightDims = [-1, H, T, T];
  const exps = c.prod.unitRows ? c.prod.unitRows(g, raw, weightDims, shifted) : exactZeros(g, shifted, raw);
  const qs = g.op("Mul", [q, scale]);
  const vOnes = concat(g, [v, onesLike(g, v, 3)], 3); // [B, H, T, dh + 1]
  const both = c.prod.rows(g, exps, weightDims, vOnes, [-1, H, T, dh + 1], { bKN: true });
  const [num, den] = split(g, both, 3, [dh, 1]);
  // den in [126/128, T]: the row's largest weight is e^−0.01 (softmaxShift), quantized to 126 or 127 of 128
  const invDen = reciprocal(g, den, 4, [-1, Math.floor(Math.log2(T)) + 1]);
  const heads = g.op("Mul", [num, invDen]);
  return { qs, ks: g.op("Mul", [k, scale]), v, exps, invDen, heads, out: fromHeads(c, heads) };
}

/**
 * The clipped exps `raw` of `shifted` [..., T] with exact zeros below the floor (products without quantizeUnitRows:
 * two limbs), plus each row's nanCheck of `shifted` (the clip may have kept or dropped a NaN: the row is NaN either
 * way).
 */
function exactZeros(g: GraphBuilder, shifted: string, raw: string): string {
  const zeroed = g.op("Where", [g.op("Less", [shifted, scalar(g, EXP_WEIGHTS_FLOOR)]), scalar(g, 0), raw]);
  return g.op("Add", [zeroed, nanCheck(g, shifted, -1, true)]);
}

/** Ones shaped like t's first slice along `axis` (data movement: an Expand of the constant 1 to that shape). */
function onesLike(g: GraphBuilder, t: string, axis: number): string {
  return g.op("Expand", [scalar(g, 1), g.op("Shape", [slice(g, t, axis, 0, 1)])]);
}

/** [T, T]: 0 where query i may attend to key j ≤ i, MASKED·scale elsewhere (added to the scores). */
function causalBias(g: GraphBuilder, T: number, scale = 1): string {
  const key = `causal-bias:${T}:${scale}`;
  let name = g.shared.get(key);
  if (!name) {
    const masked = Math.fround(MASKED) * scale;
    const bias = Array.from({ length: T * T }, (_, n) => (n % T <= Math.floor(n / T) ? 0 : masked));
    g.shared.set(key, (name = g.constFloat(bias, [T, T])));
  }
  return name;
}

/** [T, T] booleans: query i may attend to key j ≤ i. */
function causalMask(g: GraphBuilder, T: number): string {
  const key = `causal:${T}`;
  let name = g.shared.get(key);
  if (!name) {
    const lower = Array.from({ length: T * T }, (_, n) => (n % T <= Math.floor(n / T) ? 1 : 0));
    g.shared.set(key, (name = g.constInt(lower, [T, T], DT.BOOL)));
  }
  return name;
}

/** dqkv [R, 3D] from the gradient of the merged heads' output. */
function attentionBack(c: Ctx, at: Attention, dOut: string): string {
  const { g } = c;
  const { T, D, H } = c.s;
  const dh = D / H;
  const heads = [-1, H, T, dh];
  const square = [-1, H, T, T];
  const dO = toHeads(c, dOut);
  const dP = c.prod.rows(g, dO, heads, at.v, heads);
  // probsᵀ·dO from the exps' own forward blocks, 1/den folded into dO (never a column quantization of a T×T tensor)
  const dV = c.prod.foldedT(g, at.exps, square, at.invDen, dO, heads);
  // Σ_j dP_ij·p_ij = dO_i·Σ_j p_ij·v_j = dO_i·out_i: a sum over dh, not over the T keys
  const inner = c.prod.kernels
    ? c.prod.kernels.sum(g, g.op("Mul", [dP, at.exps]), 3)
    : sumLast(g, g.op("Mul", [dO, at.heads]), dh, 4);
  // dS = e ⊙ (dP − inner) ⊙ invDen, invDen (per query row) applied on the dh-wide sides of dS's two products;
  // scores = (q/√dh)·k: that scale rides on the dh-wide operands too, not on the T×T gradient
  const dS = g.op("Mul", [at.exps, g.op("Sub", [dP, inner])]);
  const dQ = c.prod.rows(g, dS, square, at.ks, heads, { bKN: true });
  const dK = c.prod.foldedT(g, dS, square, at.invDen, at.qs, heads); // dS's blocks from dQ
  const dQn = at.invDen ? g.op("Mul", [dQ, at.invDen]) : dQ;
  return concat(
    g,
    [dQn, dK, dV].map((t) => fromHeads(c, t)),
    1,
  );
}

/**
 * The softmax over the last axis (V) of logits [R, V], with the shifted logits and the denominator it is made of. The
 * portable formulation shifts by ReduceMax and exps by expSquared; the denominator (in [e^−0.01, V]) is a fixed Add
 * tree. The float formulation uses ReduceMax, Exp and ReduceSum kernels.
 */
function headSoftmax(c: Ctx, logits: string): { shifted: string; sum: string; softmax: string } {
  const { g } = c;
  const V = c.s.V;
  const k = c.prod.kernels;
  const shifted = k ? g.op("Sub", [logits, k.max(g, logits, 1)]) : softmaxShift(g, logits, 1, 2);
  const exps = k ? k.exp(g, shifted) : expSquared(g, shifted);
  const sum = k ? k.sum(g, exps, 1) : sumLast(g, exps, V, 2);
  const inv = k ? g.op("Div", [scalar(g, 1), sum]) : reciprocal(g, sum, 2, [-1, Math.floor(Math.log2(V)) + 1]);
  return { shifted, sum, softmax: g.op("Mul", [exps, inv]) };
}

/** Per-row negative log-likelihood of one-hot labels y [R, V] (the log: logFromOne's series, or a Log kernel). */
function headNll(c: Ctx, h: { shifted: string; sum: string }, y: string): string {
  const { g } = c;
  const V = c.s.V;
  const log = c.prod.kernels ? g.op("Log", [h.sum]) : logFromOne(g, h.sum, Math.ceil(Math.log2(V)), 2);
  const logp = g.op("Sub", [h.shifted, log]);
  return g.op("Neg", [squeeze(g, sumOverLast(c, g.op("Mul", [y, logp]), V, 2), [1])]);
}

type Block = { ln1: Norm; att: Attention; ln2: Norm; pre: string; mask: string; act: string };
type Forward = { onehot?: string; blocks: Block[]; final: Norm; logits: string };

/** ids [B, T] (symbol numbers as floats) → logits [B·T, V] and what backward needs. */
function forward(c: Ctx, ids: string): Forward {
  const { g, p } = c;
  const { D, F, V } = c.s;
  const index = g.op("Cast", [g.op("Floor", [ids])], [attrInt("to", DT.INT64)]);
  const embedded = g.op("Add", [g.op("Gather", [p.wte, index]), p.wpe]); // [B, T, D]
  let h = g.op("Reshape", [embedded, g.constInt64([-1, D])]);
  const blocks: Block[] = [];
  for (let i = 0; i < c.s.blocks; i++) {
    const ln1 = layerNorm(c, h);
    const att = attention(c, ln1.y, p[`b${i}_qkv`]);
    h = g.op("Add", [h, dense(c, att.out, p[`b${i}_proj`], D, D)]);
    const ln2 = layerNorm(c, h);
    const pre = g.op("Add", [dense(c, ln2.y, p[`b${i}_fc`], D, F), p[`b${i}_fc_b`]]);
    // ReLU as pre·[pre > 0] (−0 for negative pre: the same limbs as +0), the mask kept for backward
    const mask = c.prod.kernels ? "" : g.op("Cast", [g.op("Greater", [pre, scalar(g, 0)])], [attrInt("to", DT.FLOAT)]);
    const act = c.prod.kernels ? g.op("Relu", [pre]) : g.op("Mul", [pre, mask]);
    h = g.op("Add", [h, g.op("Add", [dense(c, act, p[`b${i}_out`], F, D), p[`b${i}_out_b`]])]);
    blocks.push({ ln1, att, ln2, pre, mask, act });
  }
  const final = layerNorm(c, h);
  const logits = g.op("Add", [dense(c, final.y, p.head, D, V), p.head_b]);
  return { blocks, final, logits };
}

/** A graph named for `d` and `what` whose first inputs are the parameters. */
function transformerGraph(d: TemplateDescriptor, what: string, prod: Products): Ctx {
  const g = new GraphBuilder(`${d.name}-${what}`);
  const specs = transformerParams(d);
  const names = paramInputs(g, specs);
  const p = Object.fromEntries(specs.map((s, i) => [s.name, names[i]]));
  return { g, d, s: shapeOf(d), p, prod };
}

/**
 * Gradient graph. Inputs: params, x [atoms, S, T] (symbols), y [atoms, S, T, V] (one-hot next symbols).
 * Outputs: g_<param> [atoms, ...dims], each atom's share of the gradient of the mean loss over the global batch's
 * tokens, and the reported loss's parts per token (loss_shifted, loss_exp_sum). Every product that sums over tokens sums
 * only its own atom's rows, so outputs do not depend on how many atoms share a call.
 */
export function buildGradientGraph(d: TemplateDescriptor, prod: Products): Uint8Array {
  const c = transformerGraph(d, "gradient", prod);
  const { g, p } = c;
  const { T, D, F, V } = c.s;
  const S = d.atomSize;
  const N = S * T; // an atom's rows
  const x = g.input("x", ["atoms", S, T]);
  const y = g.input("y", ["atoms", S, T, V]);
  const fw = forward(c, g.op("Reshape", [x, g.constInt64([-1, T])]));
  const labels = g.op("Reshape", [y, g.constInt64([-1, V])]);
  const head = headSoftmax(c, fw.logits);
  /** t [R, n] as [atoms, N, n], one Reshape per tensor (the same name for every product that reads it). */
  const perAtom = (t: string, n: number) => {
    const key = `perAtom:${t}:${n}`;
    let name = g.shared.get(key);
    if (!name) g.shared.set(key, (name = g.op("Reshape", [t, g.constInt64([-1, N, n])])));
    return name;
  };
  /** dy [R, J] · wᵀ → [R, K]; with sharedMagnitudes dy in its per-atom view (the one its weight gradient reads). */
  const back = (dy: string, w: string, K: number, J: number) =>
    c.prod.sharedMagnitudes
      ? g.op("Reshape", [c.prod.rows(g, perAtom(dy, J), [-1, N, J], w, [K, J]), g.constInt64([-1, K])])
      : denseBack(c, dy, w, K, J);
  const dLogits = g.op("Mul", [g.op("Sub", [head.softmax, labels]), scalar(g, 1 / (d.globalBatch * T))]);

  const grads: Record<string, string> = {};
  /** Σ over an atom's rows of h[r, i]·dy[r, o] → [atoms, I, O]. */
  const weightGrad = (h: string, I: number, dy: string, O: number) =>
    c.prod.rows(g, perAtom(h, I), [-1, N, I], perAtom(dy, O), [-1, N, O], { aKM: true, bKN: true });
  /**
   * The weight gradient and the bias gradient Σ_r dy[r, o] of one layer. Portable: one product, h given a column of
   * ones (its block is exactly 64 × 1/64), so the bias gradient is the exact int32 sum of dy's own 8-bit values,
   * as the weight gradient's are, and no sum tree over the atom's rows. Float: a ReduceSum.
   */
  const layerGrads = (name: string, h: string, I: number, dy: string, O: number) => {
    if (c.prod.kernels) {
      grads[name] = weightGrad(h, I, dy, O);
      grads[`${name}_b`] = squeeze(g, c.prod.kernels.sum(g, perAtom(dy, O), 1), [1]);
      return;
    }
    const both = c.prod.onesColumn
      ? c.prod.rows(g, perAtom(h, I), [-1, N, I], perAtom(dy, O), [-1, N, O], { aKM: true, bKN: true, aOnes: true })
      : c.prod.rows(
          g,
          concat(g, [perAtom(h, I), onesLike(g, perAtom(h, I), 2)], 2), // [A, N, I + 1]
          [-1, N, I + 1],
          perAtom(dy, O),
          [-1, N, O],
          { aKM: true, bKN: true },
        );
    const [w, bias] = split(g, both, 1, [I, 1]);
    [grads[name], grads[`${name}_b`]] = [w, squeeze(g, bias, [1])];
  };

  layerGrads("head", fw.final.y, D, dLogits, V);
  let dh = layerNormBack(c, fw.final, back(dLogits, p.head, D, V));
  for (let i = c.s.blocks - 1; i >= 0; i--) {
    const b = fw.blocks[i];
    layerGrads(`b${i}_out`, b.act, F, dh, D);
    const dAct = back(dh, p[`b${i}_out`], F, D);
    const dPre = b.mask
      ? g.op("Mul", [dAct, b.mask])
      : g.op("Where", [g.op("Greater", [b.pre, scalar(g, 0)]), dAct, scalar(g, 0)]);
    layerGrads(`b${i}_fc`, b.ln2.y, D, dPre, F);
    dh = g.op("Add", [dh, layerNormBack(c, b.ln2, back(dPre, p[`b${i}_fc`], D, F))]);
    grads[`b${i}_proj`] = weightGrad(b.att.out, D, dh, D);
    const dqkv = attentionBack(c, b.att, back(dh, p[`b${i}_proj`], D, D));
    grads[`b${i}_qkv`] = weightGrad(b.ln1.y, D, dqkv, 3 * D);
    dh = g.op("Add", [dh, layerNormBack(c, b.ln1, back(dqkv, p[`b${i}_qkv`], D, 3 * D))]);
  }
  // positions: Σ over the atom's samples; tokens: Σ over the atom's rows of onehot(symbol)ᵀ·dh
  const bySample = g.op("Reshape", [dh, g.constInt64([-1, S, T * D])]);
  grads.wpe = g.op("Reshape", [squeeze(g, sumAxis(g, bySample, S, 1), [1]), g.constInt64([-1, T, D])]);
  grads.wte = weightGrad(oneHot(g, g.op("Reshape", [x, g.constInt64([-1])]), V), V, dh, D);

  for (const s of transformerParams(d)) g.output(`g_${s.name}`, grads[s.name], ["atoms", ...s.dims]);
  // the reported loss's parts per token (workloads/loss.ts takes the log and each atom's mean, in float64)
  g.output("loss_shifted", g.op("Reshape", [head.shifted, g.constInt64([-1, N, V])]), ["atoms", N, V]);
  g.output("loss_exp_sum", g.op("Reshape", [head.sum, g.constInt64([-1, N, 1])]), ["atoms", N, 1]);
  return g.encode();
}

/** ids [R] (whole numbers as floats) → one-hot [R, V] (exact 0 and 1). */
function oneHot(g: GraphBuilder, ids: string, V: number): string {
  const symbols = g.constFloat(
    Array.from({ length: V }, (_, i) => i),
    [V],
  );
  const hit = g.op("Equal", [g.op("Unsqueeze", [ids, g.constInt64([1])]), symbols]);
  return g.op("Cast", [hit], [attrInt("to", DT.FLOAT)]); // a Where would cost about four times as much
}

/**
 * Evaluation graph: params, x [n, T], y [n, T, V] → loss (mean nats per symbol over all n·T predictions),
 * accuracy (fraction whose next symbol has the largest logit; exact ties count as correct) and window_loss [n]
 * (each window's mean loss: the verifiers' rule compares checkpoints window by window).
 */
export function buildEvalGraph(d: TemplateDescriptor, prod: Products, what = "evaluate"): Uint8Array {
  const c = transformerGraph(d, what, prod);
  const { g } = c;
  const { T, V } = c.s;
  const n = d.data.kind === "text" ? d.data.heldoutWindows : 0;
  const x = g.input("x", [n, T]);
  const y = g.input("y", [n, T, V]);
  const logits = forward(c, x).logits;
  const labels = g.op("Reshape", [y, g.constInt64([-1, V])]);
  const nll = g.op("Reshape", [headNll(c, headSoftmax(c, logits), labels), g.constInt64([n, T])]);
  const perT = scalar(g, Math.fround(1 / T));
  const windowLoss = g.op("Mul", [squeeze(g, sumAxis(g, nll, T, 1), [1]), perT]);
  const labelLogit = sumAxis(g, g.op("Mul", [labels, logits]), V, 1);
  const top = g.op("GreaterOrEqual", [labelLogit, maxAxis(g, logits, V, 1)]);
  const correct = g.op("Reshape", [g.op("Where", [top, scalar(g, 1), scalar(g, 0)]), g.constInt64([n, T])]);
  const mean = (t: string) => g.op("Mul", [squeeze(g, sumAxis(g, t, n, 0), [0]), scalar(g, Math.fround(1 / n))]);
  g.output("loss", mean(windowLoss), []);
  g.output("accuracy", mean(g.op("Mul", [squeeze(g, sumAxis(g, correct, T, 1), [1]), perT])), []);
  g.output("window_loss", windowLoss, [n]);
  return g.encode();
}

export const buildTransformerGraphs = (d: TemplateDescriptor, prod: Products): TemplateGraphs =>
  graphsWith(
    d,
    (x) => buildGradientGraph(x, prod),
    (x) => buildEvalGraph(x, prod),
    transformerParams(d),
  );

/**
 * Greedy next symbol: params, ids [1, T] (symbols; positions after `at` are ignored, attention being causal), at []
 * (a position, as a float) → next [] (the symbol with the largest logit at `at`, the lowest on a tie): exact
 * comparisons over the template's own portable forward, so every verifier and viewer gets the same text.
 */
export function buildSampleGraph(d: TemplateDescriptor, prod: Products): Uint8Array {
  const c = transformerGraph(d, "sample", prod);
  const { g } = c;
  const { T, V } = c.s;
  const ids = g.input("ids", [1, T]);
  const at = g.input("at", []);
  const logits = forward(c, ids).logits; // [T, V]
  const row = g.op("Gather", [logits, g.op("Cast", [g.op("Floor", [at])], [attrInt("to", DT.INT64)])]); // [V]
  const top = g.op("Equal", [row, maxAxis(g, row, V, 0)]);
  const symbols = g.constFloat(
    Array.from({ length: V }, (_, i) => i),
    [V],
  );
  const candidates = g.op("Neg", [g.op("Where", [top, symbols, scalar(g, V)])]);
  g.output("next", g.op("Neg", [squeeze(g, maxAxis(g, candidates, V, 0), [0])]), []);
  return g.encode();
}
