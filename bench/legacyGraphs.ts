// The graphs of an MLP template as they were before the portable arithmetic: MatMul,
// LogSoftmax, Softmax and ReduceSum kernels. Kept for `npm run bench` only, to measure the overhead
// of the portable formulation; no template uses them (they fail the portable-op rule).
import { buildTransformerGraphs } from "../workloads/families/transformer/graphs.ts";
import { floatKernels } from "../workloads/families/transformer/index.ts";
import { GraphBuilder, attrInt, attrInts } from "../workloads/onnx/builder.ts";
import { DT } from "../workloads/onnx/schema.ts";
import type { TemplateDescriptor, TemplateGraphs } from "../workloads/types.ts";
import { buildCnnGraphs } from "../workloads/families/cnn/graphs.ts";
import { floatKernelProducts } from "../workloads/families/cnn/products.ts";
// What the two formulations share to the letter: the parameters and the reduce and update graphs.
import { graphsWith, mlpForward, mlpGraph, type Forward } from "../workloads/families/mlp/graphs.ts";

/** x: [..., features] → logits [..., classes] with MatMul and Relu kernels. */
function forward(g: GraphBuilder, params: string[], x: string): Forward {
  const affine = (h: string, l: number) => g.op("Add", [g.op("MatMul", [h, params[2 * l]]), params[2 * l + 1]]);
  return mlpForward(params.length / 2, x, affine, (p) => g.op("Relu", [p]));
}

/** Per-sample negative log-likelihood of one-hot labels y (last axis = classes). */
function nll(g: GraphBuilder, logits: string, y: string): string {
  const logp = g.op("LogSoftmax", [logits], [attrInt("axis", -1)]);
  const picked = g.op("ReduceSum", [g.op("Mul", [y, logp]), g.constInt64([-1])], [attrInt("keepdims", 0)]);
  return g.op("Neg", [picked]);
}

/**
 * [atoms, S, n] → [atoms, n], summing the S rows of each atom. Written as a batched MatMul with a
 * ones row rather than ReduceSum: onnxruntime's ReduceSum picks a different (differently rounded)
 * kernel when atoms == 1, which would break micro-batch invariance; a MatMul per atom does not.
 */
function sumOverAtomRows(g: GraphBuilder, t: string, rows: number): string {
  const ones = g.constFloat(new Array(rows).fill(1), [1, rows]);
  return g.op("Squeeze", [g.op("MatMul", [ones, t]), g.constInt64([1])]);
}

/**
 * Gradient graph. Inputs: params, x [atoms, atomSize, F], y [atoms, atomSize, C] (one-hot).
 * Outputs: g_<param> [atoms, ...param dims] (each atom's share of the gradient of the global-batch
 * mean loss) and atom_loss [atoms] (mean loss over the atom's samples).
 * Every atom is computed by its own batched GEMMs, so an atom's gradient does not depend on how
 * many atoms share the call.
 */
export function buildGradientGraph(d: TemplateDescriptor): Uint8Array {
  const { specs, g, params, F, C } = mlpGraph(d, "gradient");
  const x = g.input("x", ["atoms", d.atomSize, F]);
  const y = g.input("y", ["atoms", d.atomSize, C]);
  const fw = forward(g, params, x);
  const meanRow = g.constFloat(new Array(d.atomSize).fill(1 / d.atomSize), [d.atomSize, 1]);
  const atomLoss = g.op("Squeeze", [g.op("MatMul", [nll(g, fw.logits, y), meanRow]), g.constInt64([1])]);
  // d(mean batch loss)/d logits = (softmax - y) / globalBatch
  const invB = g.constFloat([1 / d.globalBatch], []);
  let dp = g.op("Mul", [g.op("Sub", [g.op("Softmax", [fw.logits], [attrInt("axis", -1)]), y]), invB]);
  const grads: string[] = new Array(params.length);
  const zero = g.constFloat([0], []);
  for (let l = params.length / 2 - 1; l >= 0; l--) {
    const hT = g.op("Transpose", [fw.inputs[l]], [attrInts("perm", [0, 2, 1])]);
    grads[2 * l] = g.op("MatMul", [hT, dp]);
    grads[2 * l + 1] = sumOverAtomRows(g, dp, d.atomSize);
    if (l > 0) {
      const wT = g.op("Transpose", [params[2 * l]], [attrInts("perm", [1, 0])]);
      const dh = g.op("MatMul", [dp, wT]);
      const mask = g.op("Cast", [g.op("Greater", [fw.pre[l - 1], zero])], [attrInt("to", DT.FLOAT)]);
      dp = g.op("Mul", [dh, mask]);
    }
  }
  specs.forEach((p, i) => g.output(`g_${p.name}`, grads[i], ["atoms", ...p.dims]));
  g.output("atom_loss", atomLoss, ["atoms"]);
  return g.encode();
}

/** Evaluation graph: params, x [n, F], y [n, C] → loss (mean NLL) and accuracy (fraction correct). */
export function buildEvalGraph(d: TemplateDescriptor): Uint8Array {
  const { g, params, F, C } = mlpGraph(d, "evaluate");
  const x = g.input("x", ["n", F]);
  const y = g.input("y", ["n", C]);
  const fw = forward(g, params, x);
  const loss = g.op("ReduceMean", [nll(g, fw.logits, y)], [attrInt("keepdims", 0)]);
  const argmax = (t: string) => g.op("ArgMax", [t], [attrInt("axis", -1), attrInt("keepdims", 0)]);
  const correct = g.op("Cast", [g.op("Equal", [argmax(fw.logits), argmax(y)])], [attrInt("to", DT.FLOAT)]);
  g.output("loss", loss, []);
  g.output("accuracy", g.op("ReduceMean", [correct], [attrInt("keepdims", 0)]), []);
  return g.encode();
}

export function buildMlpGraphs(d: TemplateDescriptor): TemplateGraphs {
  return graphsWith(d, buildGradientGraph, buildEvalGraph);
}

/**
 * The ordinary float graphs of any template, for `portable_step_overhead_<template>`: the MLP's above; a CNN's
 * on onnxruntime's Conv, ConvTranspose and MatMul kernels (its pooling and loss stay the family's own: onnxruntime
 * has no MaxPool gradient outside its training build). Runs whole steps only (the kernel gradient's grouped Conv
 * fixes the atom count).
 */
export function buildGraphs(d: TemplateDescriptor): TemplateGraphs {
  if (d.family === "cnn") return buildCnnGraphs(d, floatKernelProducts(d.globalBatch / d.atomSize));
  if (d.family === "transformer") return buildTransformerGraphs(d, floatKernels);
  return buildMlpGraphs(d);
}
