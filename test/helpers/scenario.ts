/** What the end-to-end suites share about a finished `npm start` scenario run (demo/scenario.ts). */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import type { ScenarioResult } from "../../demo/scenario.ts";
import type { ScenarioOptions } from "../../demo/types.ts";

/**
 * The end-to-end suites' short configuration: the small synthetic template, 60 steps in checkpoints of 10, mallory
 * uploads garbage weights and alice is killed after her first accepted checkpoint; no dispute.
 */
export const SHORT_RUN = {
  template: "blobs-tiny",
  totalSteps: 60,
  checkpointInterval: 10,
  dispute: false,
  fault: "garbage-weights",
  kill: true,
} satisfies Partial<ScenarioOptions>;

/** The run's Ignition deployment folder goes once the suite is done, whatever its outcome. */
export function removeDeploymentAfter(deploymentId: string): void {
  after(function () {
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });
}

/** Every promise the scenario checks held (the broken ones are named), and the run says it is ok. */
export function expectEveryPromiseKept(result: ScenarioResult): void {
  const broken = result.checks.filter((c) => !c.held).map((c) => `${c.promise}: ${c.detail}`);
  expect(broken).to.deep.equal([]);
  expect(result.ok).to.equal(true);
}
