// The MLP family: dense layers with ReLU between them, softmax cross-entropy at the end.
import { attrInt, attrInts } from "../../onnx/builder.ts";
import { blockRoundRows } from "../../onnx/integer.ts";
import { DT } from "../../onnx/schema.ts";
import type { ModelFamily, TemplateDescriptor } from "../../types.ts";
import { buildGraphs, mlpForward, mlpGraph, paramSpecs } from "./graphs.ts";

/**
 * params, x [n, F], y [n, C] (one-hot) → loss (mean NLL) and accuracy (fraction whose label logit is the max), on
 * float MatMul kernels. With integer products the operands are first rounded to their block floating point
 * values, so that the float kernels score the same model (only the sums' rounding differs).
 */
function floatEvalGraph(d: TemplateDescriptor): Uint8Array {
  const { g, params, F, C } = mlpGraph(d, "rule-evaluate");
  const x = g.input("x", ["n", F]);
  const y = g.input("y", ["n", C]);
  const limbs = d.arithmetic?.limbs;
  const t2 = (v: string) => g.op("Transpose", [v], [attrInts("perm", [1, 0])]);
  const rows = (h: string) => (limbs ? blockRoundRows(g, h, limbs) : h);
  const cols = (w: string) => (limbs ? t2(blockRoundRows(g, t2(w), limbs)) : w);
  const affine = (h: string, l: number) =>
    g.op("Add", [g.op("MatMul", [rows(h), cols(params[2 * l])]), params[2 * l + 1]]);
  const fw = mlpForward(params.length / 2, x, affine, (p) => g.op("Relu", [p]));
  const logp = g.op("LogSoftmax", [fw.logits], [attrInt("axis", -1)]);
  const sumLast = (v: string) => g.op("ReduceSum", [v, g.constInt64([-1])], [attrInt("keepdims", 0)]);
  const nll = g.op("Neg", [sumLast(g.op("Mul", [y, logp]))]);
  const labelLogit = sumLast(g.op("Mul", [y, fw.logits]));
  const top = g.op("ReduceMax", [fw.logits], [attrInts("axes", [-1]), attrInt("keepdims", 0)]);
  const correct = g.op("Cast", [g.op("GreaterOrEqual", [labelLogit, top])], [attrInt("to", DT.FLOAT)]);
  g.output("loss", g.op("ReduceMean", [nll], [attrInt("keepdims", 0)]), []);
  g.output("accuracy", g.op("ReduceMean", [correct], [attrInt("keepdims", 0)]), []);
  return g.encode();
}

export const mlp: ModelFamily = {
  kind: "mlp",
  validate(d) {
    if (d.layers.length < 2 || d.layers.some((n) => !Number.isInteger(n) || n < 1)) {
      throw new Error(`bad layers ${JSON.stringify(d.layers)}: at least two positive integers`);
    }
  },
  params: (d) => paramSpecs(d.layers),
  graphs: buildGraphs,
  floatEvalGraph,
  macsPerStep(d) {
    let perSample = 0;
    for (let i = 0; i + 1 < d.layers.length; i++) perSample += d.layers[i] * d.layers[i + 1];
    return 3 * d.globalBatch * perSample;
  },
  // its input and output rows, and about four buffers per layer width (activation, pre-activation, gradients)
  activationFloatsPerSample: (d) =>
    d.layers[0] + d.layers[d.layers.length - 1] + 4 * d.layers.reduce((a, b) => a + b, 0),
  classes: (d) => d.layers[d.layers.length - 1],
};
