// The graphs of an MLP template as they were before the portable arithmetic (issue 12): MatMul,
// LogSoftmax, Softmax and ReduceSum kernels. Kept for `npm run bench` only, to measure the overhead
// of the portable formulation; no template uses them (they fail the portable-op rule).
import { GraphBuilder, attrGraph, attrInt, attrInts } from "../workloads/onnx/builder.ts";
import { DT } from "../workloads/onnx/schema.ts";
import type { ParamSpec, TemplateDescriptor, TemplateGraphs } from "../workloads/types.ts";

export function paramSpecs(layers: number[]): ParamSpec[] {
  const out: ParamSpec[] = [];
  for (let l = 0; l + 1 < layers.length; l++) {
    out.push({ name: `w${l}`, dims: [layers[l], layers[l + 1]] });
    out.push({ name: `b${l}`, dims: [layers[l + 1]] });
  }
  return out;
}

type Forward = { inputs: string[]; pre: string[]; logits: string };

/** x: [..., features] → logits [..., classes]; keeps pre-activations and layer inputs for backward. */
function forward(g: GraphBuilder, params: string[], x: string): Forward {
  const inputs: string[] = [];
  const pre: string[] = [];
  let h = x;
  const layersCount = params.length / 2;
  for (let l = 0; l < layersCount; l++) {
    inputs.push(h);
    const p = g.op("Add", [g.op("MatMul", [h, params[2 * l]]), params[2 * l + 1]]);
    pre.push(p);
    h = l + 1 < layersCount ? g.op("Relu", [p]) : p;
  }
  return { inputs, pre, logits: h };
}

/** Per-sample negative log-likelihood of one-hot labels y (last axis = classes). */
function nll(g: GraphBuilder, logits: string, y: string): string {
  const logp = g.op("LogSoftmax", [logits], [attrInt("axis", -1)]);
  const picked = g.op("ReduceSum", [g.op("Mul", [y, logp]), g.constInt64([-1])], [attrInt("keepdims", 0)]);
  return g.op("Neg", [picked]);
}

function paramInputs(g: GraphBuilder, specs: ParamSpec[], prefix = ""): string[] {
  return specs.map((p) => g.input(prefix + p.name, p.dims));
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
  const specs = paramSpecs(d.layers);
  const F = d.layers[0];
  const C = d.layers[d.layers.length - 1];
  const g = new GraphBuilder(`${d.name}-gradient`);
  const params = paramInputs(g, specs);
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

/**
 * Reduce graph: acc_<param> + g_<param>[0] + g_<param>[1] + ... strictly in atom order (ONNX Scan
 * runs its body once per atom, sequentially). Chaining calls over micro-batches therefore yields
 * the same float sums whatever the micro-batch size.
 */
export function buildReduceGraph(d: TemplateDescriptor): Uint8Array {
  const specs = paramSpecs(d.layers);
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

/** Update graph: SGD with momentum. m' = momentum*m + g ; w' = w - lr*m'. */
export function buildUpdateGraph(d: TemplateDescriptor): Uint8Array {
  const specs = paramSpecs(d.layers);
  const g = new GraphBuilder(`${d.name}-update`);
  const w = paramInputs(g, specs, "w_");
  const m = paramInputs(g, specs, "m_");
  const gr = paramInputs(g, specs, "g_");
  const lr = g.constFloat([d.lr], []);
  const mu = g.constFloat([d.momentum], []);
  specs.forEach((p, i) => {
    const m2 = g.op("Add", [g.op("Mul", [m[i], mu]), gr[i]]);
    const w2 = g.op("Sub", [w[i], g.op("Mul", [m2, lr])]);
    g.output(`new_w_${p.name}`, w2, p.dims);
    g.output(`new_m_${p.name}`, m2, p.dims);
  });
  return g.encode();
}

/** Evaluation graph: params, x [n, F], y [n, C] → loss (mean NLL) and accuracy (fraction correct). */
export function buildEvalGraph(d: TemplateDescriptor): Uint8Array {
  const specs = paramSpecs(d.layers);
  const F = d.layers[0];
  const C = d.layers[d.layers.length - 1];
  const g = new GraphBuilder(`${d.name}-evaluate`);
  const params = paramInputs(g, specs);
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

export function buildGraphs(d: TemplateDescriptor): TemplateGraphs {
  return {
    gradient: buildGradientGraph(d),
    reduce: buildReduceGraph(d),
    update: buildUpdateGraph(d),
    evaluate: buildEvalGraph(d),
  };
}
