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
import { gather, labelDims, loadDataset } from "../workloads/data.ts";
import { evalResultOf, type EvalResult, type Template, type TrainingState } from "../workloads/index.ts";

export type RuleEvaluator = (state: TrainingState) => Promise<EvalResult>;

/** The template's held-out evaluation on float kernels, as its model family builds it. */
export const buildRuleEvalGraph = (t: Template): Uint8Array => t.family.floatEvalGraph(t.descriptor);

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
    y: f32(h.y, labelDims(ds, [ds.heldoutCount])),
  };
  const session = await createSession(buildRuleEvalGraph(t), "cpu");
  return async (state) => {
    const feeds: Feeds = { ...heldout };
    for (const w of state.weights) feeds[w.name] = f32(w.data, w.dims);
    return evalResultOf(await session.run(feeds));
  };
}
