// The graphs of a CNN template: 3×3 convolutions (padding 1, stride 1) each followed by ReLU and a 2×2 max-pool,
// then a dense head (the MLP family's loss and evaluation). Maps are channel-first, [N, C, H, W] (onnxruntime's
// elementwise and broadcast kernels are slow along a short innermost axis). The convolutions and products come from
// products.ts (exact integer products for the template's own graphs). Pooling is written with comparisons and selection; its gradient goes to the first maximum in the order
// (0,0), (0,1), (1,0), (1,1) of each 2×2 window and is put back in place by DepthToSpace (data movement).
import { GraphBuilder, attrInt, attrInts, attrString } from "../../onnx/builder.ts";
import { concat, relu, reluGrad, scalar, sumAxis } from "../../onnx/exact.ts";
import { heldoutPerClass } from "../../metric.ts";
import type { ParamSpec, TemplateDescriptor, TemplateGraphs } from "../../types.ts";
import {
  graphsWith,
  evalOutputs,
  lossHead,
  outputLossParts,
  paramInputs,
  paramSpecs as denseSpecs,
} from "../mlp/graphs.ts";
import type { Products } from "./products.ts";
import { i64, reshape, transpose, window } from "./ops.ts";
import { convStages, type ConvStage } from "./stages.ts";

export { convStages, type ConvStage };

/** Kernels k<i> [9·Cin, Cout] (rows: shift-major, then input channel) and biases, then the dense head. */
export function cnnParamSpecs(d: TemplateDescriptor): ParamSpec[] {
  const convs = convStages(d).flatMap((s, i) => [
    { name: `k${i}`, dims: [9 * s.Cin, s.Cout] },
    { name: `kb${i}`, dims: [s.Cout] },
  ]);
  return [...convs, ...denseSpecs(d.layers)];
}

const T2 = (g: GraphBuilder, t: string) => transpose(g, t, [1, 0]);

type Pool = { corners: string[]; max: string };

/** 2×2 max-pool of [N, C, H, W] → [N, C, H/2, W/2]; the four corners (strided slices) kept for backward. */
function maxPool(g: GraphBuilder, r: string, s: ConvStage): Pool {
  const corner = (y: number, x: number) => window(g, r, [y, x], [s.H, s.W], [2, 3], [2, 2]);
  const corners = [corner(0, 0), corner(0, 1), corner(1, 0), corner(1, 1)];
  const larger = (a: string, b: string) => g.op("Where", [g.op("Greater", [a, b]), a, b]);
  return { corners, max: larger(larger(corners[0], corners[1]), larger(corners[2], corners[3])) };
}

/** The pool's gradient: dOut [N, C, H/2, W/2] to the first corner equal to the max, zero elsewhere → [N, C, H, W]. */
function maxPoolGrad(g: GraphBuilder, pool: Pool, dOut: string, s: ConvStage): string {
  let taken = "";
  const parts = pool.corners.map((c) => {
    let hit = g.op("Equal", [c, pool.max]);
    if (taken) hit = g.op("And", [hit, g.op("Not", [taken])]);
    taken = taken ? g.op("Or", [taken, hit]) : hit;
    return g.op("Unsqueeze", [g.op("Where", [hit, dOut, scalar(g, 0)]), i64(g, [2])]); // [N, C, 1, H/2, W/2]
  });
  // DepthToSpace (CRD): out[n, c, 2h + i, 2w + j] = in[n, 4c + 2i + j, h, w]
  const depth = reshape(g, concat(g, parts, 2), [0, 4 * s.Cout, s.H / 2, s.W / 2]);
  return g.op("DepthToSpace", [depth], [attrInt("blocksize", 2), attrString("mode", "CRD")]);
}

type Saved = { input: string; pre: string; pool: Pool };
type CnnForward = { stages: Saved[]; head: { inputs: string[]; pre: string[] }; logits: string };

/** x [N, F] → logits [N, C], keeping what backward needs. */
function forward(g: GraphBuilder, d: TemplateDescriptor, params: string[], x: string, p: Products): CnnForward {
  const stages = convStages(d);
  const [H, W, C] = d.conv!.image;
  let a = g.op("Transpose", [reshape(g, x, [-1, H, W, C])], [attrInts("perm", [0, 3, 1, 2])]); // NHWC data → NCHW
  const saved: Saved[] = [];
  stages.forEach((s, i) => {
    const bias = g.op("Unsqueeze", [params[2 * i + 1], i64(g, [1])]); // [Cout, 1]
    const pre = g.op("Add", [p.conv(g, params[2 * i], a, s), bias]); // [N, Cout, H·W]
    const pool = maxPool(g, reshape(g, relu(g, pre), [0, s.Cout, s.H, s.W]), s);
    saved.push({ input: a, pre, pool });
    a = pool.max;
  });
  let h = reshape(g, a, [-1, d.layers[0]]);
  const dense = params.slice(2 * stages.length);
  const head = { inputs: [] as string[], pre: [] as string[] };
  for (let l = 0; 2 * l < dense.length; l++) {
    head.inputs.push(h);
    const z = g.op("Add", [p.matmul(g, h, dense[2 * l], d.layers[l]), dense[2 * l + 1]]);
    head.pre.push(z);
    h = 2 * (l + 1) < dense.length ? relu(g, z) : z;
  }
  return { stages: saved, head, logits: h };
}

/** The gradient graph (inputs and outputs as every family's: workloads/README.md). */
export function buildCnnGradientGraph(d: TemplateDescriptor, p: Products): Uint8Array {
  const specs = cnnParamSpecs(d);
  const g = new GraphBuilder(`${d.name}-gradient`);
  const params = paramInputs(g, specs);
  const S = d.atomSize;
  const [F, C] = [pixels(d), d.layers[d.layers.length - 1]];
  const x = g.input("x", ["atoms", S, F]);
  const y = g.input("y", ["atoms", S, C]);
  const fw = forward(g, d, params, reshape(g, x, [-1, F]), p);
  const head = lossHead(g, d, reshape(g, fw.logits, [-1, S, C]), y, C);
  const grads: string[] = new Array(params.length);
  const stages = convStages(d);
  const base = 2 * stages.length;
  let dz = reshape(g, head.dLogits, [-1, C]); // [N, classes]
  for (let l = (params.length - base) / 2 - 1; l >= 0; l--) {
    const [nIn, nOut] = [d.layers[l], d.layers[l + 1]];
    const perAtom = (t: string, n: number) => reshape(g, t, [-1, S, n]);
    grads[base + 2 * l] = p.weightGrad(g, perAtom(fw.head.inputs[l], nIn), perAtom(dz, nOut), S);
    grads[base + 2 * l + 1] = reshape(g, sumAxis(g, perAtom(dz, nOut), S, 1), [-1, nOut]);
    const dh = p.matmul(g, dz, T2(g, params[base + 2 * l]), nOut);
    dz = l > 0 ? reluGrad(g, fw.head.pre[l - 1], dh) : dh;
  }
  let dPooled = dz; // [N, flattened last pooled map]
  for (let i = stages.length - 1; i >= 0; i--) {
    const s = stages[i];
    const P = s.H * s.W;
    const dr = maxPoolGrad(g, fw.stages[i].pool, reshape(g, dPooled, [0, s.Cout, s.H / 2, s.W / 2]), s);
    const dPre = reluGrad(g, fw.stages[i].pre, reshape(g, dr, [0, s.Cout, P])); // [N, Cout, H·W]
    grads[2 * i] = p.kernelGrad(g, fw.stages[i].input, dPre, s, S);
    // bias: Σ over each atom's positions, then its samples, as fixed trees
    const perAtom = reshape(g, dPre, [-1, S, s.Cout, P]);
    grads[2 * i + 1] = reshape(g, sumAxis(g, sumAxis(g, perAtom, P, 3), S, 1), [-1, s.Cout]);
    if (i > 0) dPooled = p.convBack(g, params[2 * i], dPre, s);
  }
  specs.forEach((sp, i) => g.output(`g_${sp.name}`, grads[i], ["atoms", ...sp.dims]));
  outputLossParts(g, d, head, C);
  return g.encode();
}

const pixels = (d: TemplateDescriptor) => d.conv!.image.reduce((a, b) => a * b, 1);

/** The evaluation graph over the held-out split (outputs as the MLP's). */
export function buildCnnEvalGraph(d: TemplateDescriptor, p: Products): Uint8Array {
  const specs = cnnParamSpecs(d);
  const g = new GraphBuilder(`${d.name}-evaluate`);
  const params = paramInputs(g, specs);
  const C = d.layers[d.layers.length - 1];
  const rows = heldoutPerClass(d.data) * C;
  const x = g.input("x", [rows, pixels(d)]);
  const y = g.input("y", [rows, C]);
  evalOutputs(g, forward(g, d, params, x, p).logits, y, rows, C);
  return g.encode();
}

export const buildCnnGraphs = (d: TemplateDescriptor, p: Products): TemplateGraphs =>
  graphsWith(
    d,
    (x) => buildCnnGradientGraph(x, p),
    (x) => buildCnnEvalGraph(x, p),
    cnnParamSpecs(d),
  );
