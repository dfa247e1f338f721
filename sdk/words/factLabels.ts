/**
 * Words for figures that look alike but are different facts (one meaning per word). Pure and
 * browser-safe; the dashboard and the CLI say them.
 *
 * Two held-out losses of the same final model: the verifiers' acceptance check of each checkpoint runs the model on
 * onnxruntime's float kernels (verifier/ruleEval.ts; for the transformer without the portable arithmetic's block
 * rounding of products), the verdict on the template's own portable graph (verifier/checks.ts verifyFinal), the
 * figure every verifier signs. char-transformer.jsonl: 1.9609 (check, step 600) and 1.9626 (verdict), both right.
 *
 * Two "how far did it train": a provider's progress reports (its heartbeats live, its "progress" log lines in a
 * recording, every few steps) and its own per-step record (`npm start` reads the agent's debug step lines, never
 * recorded), which runs ahead of the last report by up to the report interval: the closing table's "alice trained to
 * step N" is the second, the dashboard shows the first.
 */
export const FACT_LABELS = {
  checkpointLoss: "acceptance-check loss",
  checkpointLossNote: "verifiers' float kernels; the verdict's figure is below",
  lastReportedStep: "Last reported step",
} as const;
