/**
 * The held-out evaluation behind the per-checkpoint evaluation rule (verifier/checks.ts), with onnxruntime's
 * MatMul, LogSoftmax and ArgMax kernels instead of the template's portable graph: the same model, the same
 * held-out split, about 5× less CPU (the portable graph spells every product out elementwise so that its bits
 * are the same on every CPU family, which only replay and the verdict need). The rule only decides whether to
 * escalate to a full replay, so a last-bit difference between devices can change a verifier's cost, never a
 * decision: an escalated honest checkpoint is accepted by its full replay. The verdict's metric, which every
 * verifier must compute identically, stays on the template's own evaluation graph (verifyFinal).
 */
import { createSession, f32, type Feeds } from "../workloads/runtime.ts";
import { gather, loadDataset } from "../workloads/data.ts";
import { mlpForward, mlpGraph } from "../workloads/graphs.ts";
import { attrInt, attrInts } from "../workloads/onnx/builder.ts";
import { DT } from "../workloads/onnx/schema.ts";
import type { EvalResult, Template, TrainingState } from "../workloads/index.ts";

export type RuleEvaluator = (state: TrainingState) => Promise<EvalResult>;

/** params, x [n, F], y [n, C] (one-hot) → loss (mean NLL) and accuracy (fraction whose label logit is the max). */
export function buildRuleEvalGraph(t: Template): Uint8Array {
  const d = t.descriptor;
  const { g, params, F, C } = mlpGraph(d, "rule-evaluate");
  const x = g.input("x", ["n", F]);
  const y = g.input("y", ["n", C]);
  const affine = (h: string, l: number) => g.op("Add", [g.op("MatMul", [h, params[2 * l]]), params[2 * l + 1]]);
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

/** One evaluator per template and process: the session and the held-out feeds are built once. */
const evaluators = new Map<string, Promise<RuleEvaluator>>();

export function ruleEvaluator(t: Template): Promise<RuleEvaluator> {
  let e = evaluators.get(t.templateId);
  if (!e) {
    e = open(t);
    evaluators.set(t.templateId, e);
    e.catch(() => evaluators.delete(t.templateId));
  }
  return e;
}

async function open(t: Template): Promise<RuleEvaluator> {
  const ds = loadDataset(t.descriptor.data);
  const rows = Array.from({ length: ds.heldoutCount }, (_, i) => i);
  const h = gather(ds, ds.heldoutX, ds.heldoutY, rows);
  const heldout: Feeds = {
    x: f32(h.x, [ds.heldoutCount, ds.features]),
    y: f32(h.y, [ds.heldoutCount, ds.classes]),
  };
  const session = await createSession(buildRuleEvalGraph(t), "cpu");
  return async (state) => {
    const feeds: Feeds = { ...heldout };
    for (const w of state.weights) feeds[w.name] = f32(w.data, w.dims);
    const out = await session.run(feeds);
    return { loss: (out.loss.data as Float32Array)[0], accuracy: (out.accuracy.data as Float32Array)[0] };
  };
}
