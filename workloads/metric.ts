// What a template's verdict metric means: the one place that turns the on-chain integer into words (pure: the
// dashboard's page uses it too).
import type { AccuracyRules, DataSpec, EvalRules, LossRules, TemplateDescriptor } from "./types.ts";

export const isLossRules = (r: EvalRules): r is LossRules => "metric" in r && r.metric === "loss";

/** A classifier's rules; throws for a template held to its loss. */
export function accuracyRules(d: TemplateDescriptor): AccuracyRules {
  const r = d.evalRules;
  if (isLossRules(r)) throw new Error(`${d.name} is held to its held-out loss, not an accuracy`);
  return r;
}

/** A classifier's held-out samples per class; throws for a text. */
export function heldoutPerClass(spec: DataSpec): number {
  if (spec.kind === "text") throw new Error("a text's held-out split is counted in windows, not per class");
  return spec.heldoutPerClass;
}

/**
 * The verdict's metric in words: held-out accuracy (basis points on chain) or held-out loss (10⁻⁴ nats per
 * symbol on chain), with the template's target.
 */
export function metricText(d: Pick<TemplateDescriptor, "evalRules">, metric: bigint): string {
  const r = d.evalRules;
  if (isLossRules(r))
    return `${(Number(metric) / 10_000).toFixed(4)} nats per symbol held-out loss (target ≤ ${r.targetLoss})`;
  return `${(Number(metric) / 100).toFixed(2)} % held-out accuracy (target ${(r.targetAccuracy * 100).toFixed(0)} %)`;
}

/** Whether a verdict's metric meets the template's target (what the verifiers' `passed` asserts). */
export function meetsTarget(d: Pick<TemplateDescriptor, "evalRules">, metric: bigint): boolean {
  const r = d.evalRules;
  const units = (v: number) => BigInt(Math.round(v * 10_000));
  return isLossRules(r) ? metric <= units(r.targetLoss) : metric >= units(r.targetAccuracy);
}
