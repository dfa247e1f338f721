// The transformer family: a decoder-only character model (graphs.ts) trained on next-symbol prediction.
import { attrInt, attrInts } from "../../onnx/builder.ts";
import { intProductFolded, intProductRows, quantizeUnitRows } from "../../onnx/integer.ts";
import { assertPortable } from "../../onnx/portableOps.ts";
import type { ModelFamily, TemplateDescriptor } from "../../types.ts";
import {
  buildEvalGraph,
  buildSampleGraph,
  buildTransformerGraphs,
  shapeOf,
  transformerParams,
  type Products,
} from "./graphs.ts";

/** Exact integer products on 8-bit (or two-limb) block floating point rows. */
export const integerProducts = (limbs: 1 | 2): Products => ({
  rows: (g, a, aDims, b, bDims, layout) => intProductRows(g, a, aDims, b, bDims, limbs, layout),
  foldedT: (g, a, aDims, f, b, bDims) => intProductFolded(g, a, aDims, f, b, bDims, limbs),
  unitRows: limbs === 1 ? (g, t, dims, nanOf) => quantizeUnitRows(g, t, dims, nanOf) : undefined,
  sharedMagnitudes: true,
  onesColumn: limbs === 1,
});

const swapLastTwo = (rank: number) => [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2];

/** Ordinary float MatMul: not portable; for the verifiers' escalation rule and gradient checks. */
export const floatProducts: Products = {
  rows(g, a, aDims, b, bDims, layout = {}) {
    const left = layout.aKM ? g.op("Transpose", [a], [attrInts("perm", swapLastTwo(aDims.length))]) : a;
    const right = layout.bKN ? b : g.op("Transpose", [b], [attrInts("perm", swapLastTwo(bDims.length))]);
    return g.op("MatMul", [left, right]);
  },
  foldedT(g, a, aDims, f, b, bDims) {
    return floatProducts.rows(g, f ? g.op("Mul", [a, f]) : a, aDims, b, bDims, { aKM: true, bKN: true });
  },
};

/** Ordinary float kernels throughout (MatMul, ReduceSum, ReduceMax, Exp): the bench's comparison formulation. */
export const floatKernels: Products = {
  ...floatProducts,
  kernels: {
    sum: (g, t, axis) => g.op("ReduceSum", [t, g.constInt64([axis])], [attrInt("keepdims", 1)]),
    max: (g, t, axis) => g.op("ReduceMax", [t], [attrInts("axes", [axis]), attrInt("keepdims", 1)]),
    exp: (g, t) => g.op("Exp", [t]),
  },
};

function validate(d: TemplateDescriptor): void {
  const t = d.transformer;
  if (!t) throw new Error("a transformer template needs transformer {context, width, heads, blocks, hidden}");
  const whole = [t.context, t.width, t.heads, t.blocks, t.hidden];
  if (whole.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`bad transformer sizes ${JSON.stringify(t)}`);
  if (t.width % t.heads) throw new Error(`width ${t.width} is not a multiple of ${t.heads} heads`);
  if (d.layers.length !== 2 || d.layers[0] !== t.width)
    throw new Error(`a transformer's layers are its head [width, vocabulary], got ${JSON.stringify(d.layers)}`);
  if (d.data.kind !== "text" || d.data.context !== t.context)
    throw new Error("a transformer trains on text windows of its own context length");
  if (!d.arithmetic?.limbs) throw new Error("a transformer template needs exact integer products (arithmetic.limbs)");
}

/** Multiply-adds per token of one forward pass: the dense products and the attention's two T×T products. */
function forwardMacsPerToken(d: TemplateDescriptor): number {
  const { T, D, F, V, blocks } = shapeOf(d);
  return blocks * (3 * D * D + D * D + 2 * D * F + T * D) + D * V;
}

export const transformer: ModelFamily = {
  kind: "transformer",
  validate,
  params: transformerParams,
  graphs: (d) => buildTransformerGraphs(d, integerProducts(d.arithmetic!.limbs)),
  floatEvalGraph: (d) => buildEvalGraph(d, floatProducts, "rule-evaluate"),
  sampleGraph: (d) => {
    const bytes = buildSampleGraph(d, integerProducts(d.arithmetic!.limbs));
    assertPortable(`${d.name} sample graph`, bytes);
    return bytes;
  },
  macsPerStep: (d) => 3 * d.globalBatch * shapeOf(d).T * forwardMacsPerToken(d),
  // per token: the residual stream and its norms (≈ 8·D), q, k, v and their gradients (6·D), the MLP's hidden
  // activations (4·F), logits and softmax (3·V); per position pair the attention's scores, probabilities, grads
  activationFloatsPerSample(d) {
    const { T, D, F, V, H, blocks } = shapeOf(d);
    return T * (blocks * (14 * D + 4 * F + 4 * H * T) + 3 * V);
  },
  classes: (d) => d.layers[1],
};
