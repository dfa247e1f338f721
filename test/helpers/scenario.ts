/** What the end-to-end suites share about a finished `npm start` scenario run (demo/scenario.ts). */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import type { ScenarioResult } from "../../demo/scenario.ts";

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
